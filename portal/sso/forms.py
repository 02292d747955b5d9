"""The login form (Django's, saying when a directory could not be asked rather than blaming the password), the
mapping's rows and its dry run."""

from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from .models import DirectoryGroupMapping, LoginSource


class LoginForm(AuthenticationForm):
    def get_invalid_login_error(self):
        failure = getattr(self.request, "directory_error", None)
        if failure is None:
            return super().get_invalid_login_error()
        return ValidationError(
            "The directory (LDAP) could not be reached to check this login: try again later, or ask an "
            "administrator. Local accounts still log in.", code="directory_down")


class DirectoryGroupMappingForm(forms.ModelForm):
    class Meta:
        model = DirectoryGroupMapping
        fields = ["group", "source", "role", "team", "team_role"]


class DryRunForm(forms.Form):
    """A login tried on paper: these directory groups, through this way in."""

    groups = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=10_000,
                             help_text="The user's directory groups, one a line (an LDAP group's cn, a value "
                             "of the OpenID Connect groups claim, a group of the remote-user groups header).")
    source = forms.ChoiceField(choices=LoginSource.choices, initial=LoginSource.LDAP)

    def clean_groups(self):
        groups = sorted({line.strip() for line in self.cleaned_data["groups"].splitlines() if line.strip()})
        if len(groups) > 200:
            raise ValidationError("At most 200 groups.")
        return groups
