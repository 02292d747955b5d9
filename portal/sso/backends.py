"""``LOCAL_LOGINS=0``: the portal's own passwords off, its permissions (roles are Django groups) unchanged; the
OpenID Connect login's user from the provider's claims; the remote-user header's user (trusted proxies only)."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend, RemoteUserBackend

from . import remote_user as remote_user_config
from .mapping import apply
from .oidc import config


class PermissionsOnlyBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        return None  # logins come from the directory; API tokens do not authenticate() and keep working


def local_logins():
    """Whether the portal's own passwords log in (``LOCAL_LOGINS``, read from the backends it set up)."""
    return f"{__name__}.PermissionsOnlyBackend" not in settings.AUTHENTICATION_BACKENDS


class OIDCBackend(ModelBackend):
    """A user from the provider's claims (``authenticate(request, oidc_claims=…)``, called only by the callback
    view after Authlib checked the ID token); their permissions as the portal's other users'. A first login creates
    the account; one with a portal password of the same name is not taken over (``request.oidc_refused`` says why)."""

    def authenticate(self, request, oidc_claims=None, **kwargs):
        if oidc_claims is None:
            return None
        username = str(oidc_claims.get(config()["username_claim"]) or oidc_claims["sub"])[:150]
        names = (oidc_claims.get("given_name") or "", oidc_claims.get("family_name") or "")
        if not any(names) and oidc_claims.get("name"):
            first, _, last = str(oidc_claims["name"]).partition(" ")
            names = (first, last)
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
        elif user.has_usable_password():
            if request is not None:
                request.oidc_refused = (f"The account {username} has a password of the portal's: an administrator "
                                        "must turn it into a single sign-on account first.")
            return None
        user.email = oidc_claims.get("email") or user.email
        user.first_name, user.last_name = names[0][:150] or user.first_name, names[1][:150] or user.last_name
        user.save()
        return user if self.user_can_authenticate(user) else None


class TrustedProxyRemoteUserBackend(RemoteUserBackend):
    """The user a trusted proxy's header names (``portal.sso.middleware`` has dropped the header of any other
    address), created at their first request without a password of the portal's; their groups header, where one is
    set up, mapped to roles and teams at each login. An account with a portal password is not taken over."""

    def authenticate(self, request, remote_user):
        if not remote_user or request is None:
            return None
        existing = get_user_model().objects.filter(username=self.clean_username(remote_user)).first()
        if existing is not None and existing.has_usable_password():
            return None
        user = super().authenticate(request, remote_user)
        if user is None:
            return None
        config = settings.REMOTE_USER
        email = request.META.get(config["email_header"] or "", "").strip()
        if email and email != user.email:
            user.email = email
            user.save(update_fields=["email"])
        groups = remote_user_config.groups_of(config, request.META)
        if groups is not None:
            apply(user, groups, "remote_user")
        return user

    def configure_user(self, request, user, created=True):
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        return user
