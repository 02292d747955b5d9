"""``LOCAL_LOGINS=0``: the portal's own passwords off, its permissions (roles are Django groups) unchanged."""

from django.contrib.auth.backends import ModelBackend


class PermissionsOnlyBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        return None  # logins come from the directory; API tokens do not authenticate() and keep working
