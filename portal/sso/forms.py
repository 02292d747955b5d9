"""The login form: Django's, saying when a directory could not be asked rather than blaming the password."""

from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError


class LoginForm(AuthenticationForm):
    def get_invalid_login_error(self):
        failure = getattr(self.request, "directory_error", None)
        if failure is None:
            return super().get_invalid_login_error()
        return ValidationError(
            "The directory (LDAP) could not be reached to check this login: try again later, or ask an "
            "administrator. Local accounts still log in.", code="directory_down")
