from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from portal.models import APIToken, hash_token


class APITokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <key>`` (or ``Bearer <key>``) with a token created on the Tokens page."""

    keywords = ("token", "bearer")

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower().decode() not in self.keywords:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected 'Token <key>'.")
        key = parts[1].decode(errors="replace")
        token = APIToken.objects.select_related("user").filter(key_hash=hash_token(key)).first()
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        if token.is_expired:
            raise exceptions.AuthenticationFailed("Token has expired.")
        now = timezone.now()
        # Recording every use would write on every request; once a minute is enough to show activity.
        if token.last_used is None or (now - token.last_used).total_seconds() > 60:
            APIToken.objects.filter(pk=token.pk).update(last_used=now)
        return token.user, token

    def authenticate_header(self, request):
        return "Token"


class APITokenScheme(OpenApiAuthenticationExtension):
    target_class = APITokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "Token-based authentication with required prefix \"Token\"",
        }
