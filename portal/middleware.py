"""Request-level security: the login requirement, login throttling glue (django-axes) and the
Content-Security-Policy (django-csp); a clear 503 while the database is unreachable; a 400 that says why for a
request no view can serve as asked (a NUL character, a ``BadRequest``); and JSON for every error on the API."""

import logging
import sys
import threading

from axes.backends import AxesStandaloneBackend
from csp.constants import SELF
from csp.middleware import CSPMiddleware
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequiredMiddleware
from django.core.exceptions import BadRequest
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from rest_framework.response import Response as APIResponse

from . import history
from .sso.views import login_page_context


class RequestIdMiddleware:
    """Gives every request an id (the client's ``X-Request-ID`` if sensible, else a new one), answers with
    it, and stamps it on every change record the request makes (``portal.history``). API answers also say
    which API version served them (``API-Version``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.id = history.request_id_from(request.headers.get(history.REQUEST_ID_HEADER))
        response = self.get_response(request)
        response[history.REQUEST_ID_HEADER] = request.id
        if request.path_info.startswith("/api/"):
            response["API-Version"] = settings.API_VERSION
        return response


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
    context = {"form": form, "locked_out": lockout_message(), "next": request.POST.get("next", ""),
               **login_page_context()}
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


# --- The database is down ---------------------------------------------------------------------------------
log = logging.getLogger(__name__)
DATABASE_UNAVAILABLE = "The database is not reachable at the moment. Try again in a minute."
DATABASE_RETRY_AFTER_S = 30
_DATABASE_ERRORS = (OperationalError, InterfaceError)


def database_unavailable_response(request):
    """503 with a page (or JSON for the API) that needs no database: no context processors, no user."""
    if request.path_info.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
        response = JsonResponse({"detail": DATABASE_UNAVAILABLE}, status=503)
    else:
        page = render_to_string("503.html", {"message": DATABASE_UNAVAILABLE})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
    response["Cache-Control"] = "no-store"
    return response


def _mark_database_error(sender, request=None, **kwargs):
    # An error raised in another middleware (the session or user loaded by the login check) never reaches
    # process_exception: Django turns it into a 500 (with DEBUG, a traceback page) right there and only
    # sends this signal, while the exception is still being handled. Mark the request; the middleware swaps it.
    if request is not None and isinstance(sys.exc_info()[1], _DATABASE_ERRORS):
        request.database_unavailable, request.database_error = True, sys.exc_info()[1]


got_request_exception.connect(_mark_database_error, dispatch_uid="portal-database-unavailable")


class _Outage:
    """Whether this process has seen the database down: an outage is logged once, as a WARNING, and its end
    as an INFO, instead of an "Internal Server Error" traceback for every 503."""

    lock = threading.Lock()
    down = False

    @classmethod
    def seen(cls, exception):
        with cls.lock:
            first, cls.down = not cls.down, True
        if first:
            log.warning("database unreachable: answering 503 until it is back (%s)", exception)

    @classmethod
    def check_back(cls):
        # Only while down: the request's own connection worked if it is open and answers.
        if cls.down and connection.connection is not None and connection.is_usable():
            with cls.lock:
                back, cls.down = cls.down, False
            if back:
                log.info("database reachable again")


class _SkipDatabaseErrors(logging.Filter):
    """Drops django.request's "Internal Server Error" record (with traceback) for a request whose database error
    this middleware answers with a 503: Django logs it where the error happens, before the 503 exists."""

    def filter(self, record):
        return not getattr(getattr(record, "request", None), "database_unavailable", False)


logging.getLogger("django.request").addFilter(_SkipDatabaseErrors())


class DatabaseUnavailableMiddleware:
    """A request that fails because PostgreSQL is down or restarting (connection refused or cut) gets a
    clear 503 "try again" instead of a 500 or a traceback. Nothing else is needed to recover: Django's
    ``CONN_HEALTH_CHECKS`` drops the dead connection and the next request connects afresh.
    Sits outside the session and authentication middleware, whose database errors it catches too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(request, "database_unavailable", False):
            if response.status_code == 500:
                return self.unavailable(request, getattr(request, "database_error", None))
            return response
        _Outage.check_back()
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, _DATABASE_ERRORS):
            request.database_unavailable = True
            return self.unavailable(request, exception)
        return None

    def unavailable(self, request, exception):
        _Outage.seen(exception)
        response = database_unavailable_response(request)
        response._has_been_logged = True  # logged above, once per outage: not again as a 5xx by django.request
        return response


# --- Requests no view can serve as asked ------------------------------------------------------------------------
NUL_MESSAGE = ("The address or a form field contains a NUL character (\\0), which nothing in the portal can hold: "
               "remove it and try again.")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def is_api(request):
    return request.path_info.startswith("/api/")


def bad_request_response(request, message):
    """400 with the reason: ``{"detail": ...}`` on the API (as DRF answers), else a page that needs no database."""
    if is_api(request):
        return JsonResponse({"detail": message}, status=400)
    return HttpResponseBadRequest(render_to_string("400.html", {"message": message}))


def carries_nul(request):
    """Whether the path, the query string or a posted form (pages only: the API's bodies are JSON, and its
    serializers refuse NUL) has a NUL character in a name or a value."""
    sources = [request.GET]
    if not is_api(request) and request.content_type in FORM_TYPES:
        try:
            sources.append(request.POST)
        except Exception:  # too big, too many fields, a broken multipart body: the view answers that as before
            pass
    return "\0" in request.path or any(
        "\0" in key or any("\0" in value for value in values) for source in sources for key, values in source.lists()
    )


class BadRequestMiddleware:
    """A 400 that says why, instead of a 500 deep in a view:

    - a NUL character anywhere in the path, the query string or a posted form: PostgreSQL text cannot hold one, so
      no lookup, filter or save can take it (``/inventory/teams/x%00y/`` was a 500). A view that reads such a value
      itself says so with ``accepts_nul = True`` (the search drops it);
    - ``django.core.exceptions.BadRequest("why")`` raised by a view or a parser: the message is shown (Django's own
      400 page has none)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        view = getattr(view_func, "view_class", None) or getattr(view_func, "cls", None) or view_func
        if not getattr(view, "accepts_nul", False) and carries_nul(request):
            return bad_request_response(request, NUL_MESSAGE)
        return None

    def process_exception(self, request, exception):
        if isinstance(exception, BadRequest):
            return bad_request_response(request, str(exception) or "The request could not be understood.")
        return None


API_ERRORS = {400: "Bad request.", 404: "Not found.", 405: "Method not allowed."}
KEPT_HEADERS = ("Allow", "Retry-After")


class APIErrorsAsJSONMiddleware:
    """Every error on ``/api/`` is JSON, ``{"detail": ...}`` as DRF writes it. DRF answers its views' errors itself;
    what Django answers around them was its HTML page: a server error, the 404 of an unknown address, the 400 of a
    suspicious request. DRF's own answers keep their format (a browser asking for HTML gets the browsable API), and
    with ``DEBUG`` a server error keeps Django's traceback page. Sits outside the other middleware, whose errors it
    turns into JSON too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        status = response.status_code
        if (status < 400 or not is_api(request) or isinstance(response, APIResponse)
                or response.get("Content-Type", "").startswith("application/json")
                or (settings.DEBUG and status >= 500)):
            return response
        if status >= 500:
            detail = (f"Server error: the request failed on the server and was logged; try again later, or report "
                      f"request {getattr(request, 'id', '')} to the portal's administrators.")
        else:
            detail = API_ERRORS.get(status, response.reason_phrase + ".")
        answer = JsonResponse({"detail": detail}, status=status)
        for header in KEPT_HEADERS:
            if header in response:
                answer[header] = response[header]
        return answer
