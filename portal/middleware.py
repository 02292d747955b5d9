"""Request-level security: the login requirement, login throttling glue (django-axes) and the
Content-Security-Policy (django-csp)."""

from axes.backends import AxesStandaloneBackend
from csp.constants import SELF
from csp.middleware import CSPMiddleware
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequiredMiddleware
from django.shortcuts import render


class LoginRequiredMiddleware(DjangoLoginRequiredMiddleware):
    """Every page needs a login. The API answers 401/403 itself (token or session), so it is not
    redirected to the login page here; DRF's permission classes refuse anonymous requests there."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' lockout check for log-ins through a web request (the login page, the admin's).

    ``authenticate()`` without a request (a management command, a shell, ``Client.login``) is no
    password guessing over the network; axes would raise for it, this backend lets the next one decide.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def lockout_message():
    cooloff = settings.AXES_COOLOFF_TIME
    if cooloff:
        minutes = max(1, round(cooloff.total_seconds() / 60))
        wait = f"Try again in {minutes} minute{'s' if minutes != 1 else ''}, or ask an administrator to unlock it."
    else:
        wait = "Ask an administrator to unlock it."
    return f"Too many failed log-ins: this account is locked. {wait}"


def login_locked_out(request, original_response=None, credentials=None):
    """``AXES_LOCKOUT_CALLABLE``: the login page again, with the lockout explained, as HTTP 429 (the
    admin's login form too: one page that says what happened and what to do)."""
    form = AuthenticationForm(request, initial={"username": (credentials or {}).get("username", "")})
    context = {"form": form, "locked_out": lockout_message(), "next": request.POST.get("next", "")}
    return render(request, "registration/login.html", context, status=429)


# The API docs pages are third-party bundles: Redoc starts its search index in a Web Worker made from a
# blob: URL. Only these pages get that; everything else keeps the strict policy from settings.
API_DOCS_CSP = {
    "/api/redoc/": {"worker-src": [SELF, "blob:"]},
}


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, plus the few per-path relaxations above (views we do not own)."""

    def get_policy_parts(self, request, response, report_only=False):
        parts = super().get_policy_parts(request, response, report_only=report_only)
        if not report_only:
            for prefix, update in API_DOCS_CSP.items():
                if request.path_info.startswith(prefix):
                    parts.update = {**(parts.update or {}), **update}
        return parts
