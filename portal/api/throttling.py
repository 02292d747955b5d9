"""API rate limits: ``API_RATE_LIMIT`` requests per user, counted per API token when the request came with one
(an integration's token does not eat its owner's browser budget), in the cache (``CACHE_URL``: one shared count
for every web process). Over the limit the API answers 429 with ``Retry-After`` (DRF's ``Throttled``)."""

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from portal.models import APIToken


class PortalRateThrottle(SimpleRateThrottle):
    scope = "api"

    def get_rate(self):
        # Read on every request (not once at import, as DRF's throttles do), so that a setting change applies.
        return settings.API_RATE_LIMIT or None

    def get_cache_key(self, request, view):
        if isinstance(request.auth, APIToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"address-{self.get_ident(request)}"
        return f"throttle-{self.scope}-{ident}"
