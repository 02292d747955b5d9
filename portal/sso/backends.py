"""``LOCAL_LOGINS=0``: the portal's own passwords off, its permissions (roles are Django groups) unchanged."""

from django.contrib.auth.backends import ModelBackend


class PermissionsOnlyBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        return None  # logins come from the directory; API tokens do not authenticate() and keep working


def local_logins():
    """Whether the portal's own passwords log in (``LOCAL_LOGINS``, read from the backends it set up)."""
    from django.conf import settings

    return f"{__name__}.PermissionsOnlyBackend" not in settings.AUTHENTICATION_BACKENDS
