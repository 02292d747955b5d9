"""Django's ``RemoteUserMiddleware`` believing its header from the trusted proxies only (``portal.sso.remote_user``)."""

from django.conf import settings
from django.contrib.auth.middleware import RemoteUserMiddleware

from . import remote_user


class TrustedProxyRemoteUserMiddleware(RemoteUserMiddleware):
    """Does nothing where ``REMOTE_USER_HEADER`` is not set. From an address outside ``TRUSTED_PROXIES`` the user and
    groups headers are removed from the request first, so nothing later (this middleware, a view, a log line) can
    believe them."""

    async_capable = False  # the portal runs under WSGI; Django adapts if that ever changes

    @property
    def header(self):
        return settings.REMOTE_USER["header"]

    def process_request(self, request):
        config = getattr(settings, "REMOTE_USER", None)
        if not config:
            return
        if not remote_user.trusted(config, request.META.get("REMOTE_ADDR", "")):
            for key in (config["header"], config["groups_header"], config["email_header"]):
                request.META.pop(key, None)
        super().process_request(request)
