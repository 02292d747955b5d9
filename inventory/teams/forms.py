from django import forms
from django.contrib.auth import get_user_model
from django.utils.functional import cached_property

from inventory.telemetry.forms import RangeForm

from .models import Team, TeamMember

TEAM_RANGE = "30d"


class TeamRangeForm(RangeForm):
    """The team pages' range: the utilization and goodput dashboards' (``?range=90d``, ``?range=last_month``,
    ``?month=2026-11``, ``?start=…&end=…``), 30 days by default."""

    default_range = TEAM_RANGE


def people():
    return get_user_model().objects.filter(is_active=True).order_by("username")


class TeamForm(forms.ModelForm):
    """A team's own fields. The name is given once: an edit shows it and keeps it (``Team.clean`` refuses a change
    made otherwise); the PI is the managers' and admins' to change (``inventory.change_team_pi``)."""

    class Meta:
        model = Team
        fields = ["name", "description", "pi", "email"]
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pi"].queryset = people()
        if self.instance.pk is not None:
            self.fields["name"].disabled = True  # a disabled field keeps the stored value whatever is posted
            self.fields["name"].help_text = "The team's Slurm account: it cannot change (Slurm cannot rename one)."
        if user is not None and not user.has_perm("inventory.change_team_pi", self.instance):
            self.fields["pi"].disabled = True
            self.fields["pi"].help_text = "Managers and admins change the PI."


class TeamMemberForm(forms.ModelForm):
    class Meta:
        model = TeamMember
        fields = ["user", "slurm_user", "role"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user"].queryset = people()


class BaseTeamMemberFormSet(forms.BaseInlineFormSet):
    """The people to choose from, read once for all the rows (each row's select would read them again)."""

    @cached_property
    def user_choices(self):
        return [("", "---------"), *people().values_list("pk", "username")]

    def add_fields(self, form, index):
        super().add_fields(form, index)
        form.fields["user"].choices = self.user_choices  # shown; a posted user is still checked on the queryset


TeamMemberFormSet = forms.inlineformset_factory(Team, TeamMember, form=TeamMemberForm, formset=BaseTeamMemberFormSet,
                                                extra=2, can_delete=True)
