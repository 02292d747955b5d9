"""The allocation request form: new, change or renewal (the last two start from the allocation's terms)."""

from django import forms

from ..teams.models import Team
from .models import AllocationRequest
from .workflow import TERMS


class AllocationRequestForm(forms.ModelForm):
    """The terms asked for and why; ``team`` only among the teams the user may request for (a change or a renewal
    keeps the allocation's team)."""

    class Meta:
        model = AllocationRequest
        fields = ["team", *TERMS, "reason"]
        widgets = {"start": forms.DateInput(attrs={"type": "date"}), "end": forms.DateInput(attrs={"type": "date"}),
                   "reason": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, user, allocation=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user, self.allocation = user, allocation
        if allocation is not None:
            del self.fields["team"]
        else:
            teams = Team.objects.all()
            if not user.has_perm("inventory.add_allocationrequest"):  # a team's own managers: their teams
                teams = teams.filter(memberships__user=user, memberships__role="manager")
            self.fields["team"].queryset = teams
        self.fields["partition"].widget.attrs["list"] = "partitions"

    def _post_clean(self):
        # ``workflow.request`` validates the terms (model validation, overlaps) when the view calls it.
        pass
