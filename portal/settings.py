"""Cluster Portal settings.

Everything that differs between the demo and production comes from environment variables:

- ``DATABASE_URL``      default: SQLite file ``var/portal.sqlite3`` (``SQLITE_TIMEOUT``: seconds a write waits)
- ``CELERY_BROKER_URL`` default: kombu's filesystem transport under ``var/broker`` (no server needed);
  ``CELERY_BROKER_TRANSPORT_OPTIONS`` (JSON) e.g. Redis's ``visibility_timeout``
- ``DATABASE_CONNECT_TIMEOUT``, ``CELERY_BROKER_CONNECTION_TIMEOUT``, ``EMAIL_TIMEOUT``: seconds a request waits
  for a database, broker or mail server that does not answer (see ``docs/faults.md``)
- ``SECRET_KEY``        required unless ``DEBUG=1``
- ``DEBUG``             default ``0``; the demo (``make demo``) and the test run set ``1``
- ``API_RATE_LIMIT``    API requests per user or token (default ``1200/minute``); ``CACHE_URL`` shares the count
- ``ALLOWED_HOSTS``     comma separated; default ``127.0.0.1,localhost`` (plus ``*`` nothing else)

Security (see the "Security" section below): ``SECURE_SSL_REDIRECT``, ``SECURE_PROXY_SSL_HEADER``,
``SECURE_HSTS_*``, ``LOGIN_FAILURE_LIMIT``, ``LOGIN_COOLOFF_MINUTES``, ``LOGIN_LOCKOUT_PARAMETERS``,
``LOGIN_PROXY_COUNT``.
"""

import ipaddress
import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))
# Folders the embedded defaults write into (SQLite file, filesystem broker): created when the portal starts
# (portal.apps), not when these settings are read.
VAR_FOLDERS = [VAR_DIR]


def env_bool(name, default):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name, default):
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# Off unless asked for: the demo (make demo) and the test run turn it on themselves.
DEBUG = env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set in the environment. For the demo's database and local "
                                   "commands set DEBUG=1 instead (e.g. DEBUG=1 manage.py makemigrations).")
    SECRET_KEY = "insecure-demo-key-only-for-debug-mode-" + "x" * 20

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_tables2",
    "django_htmx",
    "simple_history",
    "axes",
    "csp",
    "portal",
    "inventory",
    "planning",
    "support",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "portal.middleware.RequestIdMiddleware",
    "portal.middleware.ContentSecurityPolicyMiddleware",  # before WhiteNoise: static responses get it too
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "portal.middleware.APIErrorsAsJSONMiddleware",  # outside the rest: their errors on /api/ become JSON too
    "portal.middleware.DatabaseUnavailableMiddleware",  # outside the session and auth: their DB errors too
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.sso.middleware.TrustedProxyRemoteUserMiddleware",  # nothing unless REMOTE_USER_HEADER is set
    "portal.middleware.LoginRequiredMiddleware",
    "portal.middleware.BadRequestMiddleware",  # after CSRF, which has read the form already
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: turns a lockout into the login page's 429
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.navigation",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A server that accepts but does not answer (a hung host, a half-open failover) fails a request within
    # seconds (a 503, portal.middleware) instead of holding it for the kernel's TCP timeout.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", int(os.environ.get("DATABASE_CONNECT_TIMEOUT", "5")))
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The demo runs the web server, a Celery worker, beat and the simulator on one file. WAL lets readers go on
    # beside a writer; IMMEDIATE transactions take the write lock when they begin, so a writer waits (up to the
    # timeout) for another instead of failing with "database is locked" when a read turns into a write.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", transaction_mode="IMMEDIATE",
        timeout=int(os.environ.get("SQLITE_TIMEOUT", "30")))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
FORMAT_MODULE_PATH = ["portal.formats"]  # ISO dates on every page (portal/formats/en/formats.py)
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
# plotly.js is ours too (portal/static/plotly: a bundle of the traces the charts draw, tools/plotly/build.sh):
# served by us, never from a CDN.
STATICFILES_DIRS = [BASE_DIR / "portal" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
MEDIA_URL = "media/"

# --- Security: on by default, strict in production -------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Behind a TLS-terminating proxy (nginx, a load balancer) Django sees plain HTTP; the proxy tells it the
    # original scheme in a header. Trust that header only when the proxy always sets (or strips) it:
    # SECURE_PROXY_SSL_HEADER=1 for ``X-Forwarded-Proto: https``, or ``HEADER=value`` for another one
    # (e.g. ``HTTP_X_FORWARDED_SSL=on``). Unset: not trusted (a client could forge it).
    _proxy_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
    if _proxy_header.lower() in {"1", "true", "yes", "on"}:
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    elif "=" in _proxy_header:
        SECURE_PROXY_SSL_HEADER = tuple(part.strip() for part in _proxy_header.split("=", 1))
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)

# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT failed log-ins the login form refuses even the
# right password (HTTP 429 with a message) for LOGIN_COOLOFF_MINUTES (0: until an admin unlocks it with
# ``manage.py axes_reset_username <name>`` or ``axes_reset``). A successful log-in clears the count.
# LOGIN_LOCKOUT_PARAMETERS: what is counted, comma separated alternatives, ``+`` for a combination:
# ``username+ip_address`` (default: one account from one address; no lockout of everyone behind a shared
# address), ``username,ip_address`` (stricter: each on its own, also against guessing from many addresses).
# LOGIN_PROXY_COUNT: reverse proxies in front, so the client's address is read from X-Forwarded-For.
# API tokens do not go through authenticate(), so integrations are never locked out by someone's typos.
AUTHENTICATION_BACKENDS = [
    "portal.middleware.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
    "rules.permissions.ObjectPermissionBackend",  # the apps' policy rules (portal.policy)
]
# Single sign-on (portal/sso, docs/authentication.md): LDAP when LDAP_SERVER_URI is set; LOCAL_LOGINS=0 turns the
# portal's own passwords off (API tokens keep working).
from portal.sso import ldap as sso_ldap  # noqa: E402  (imports nothing of Django's unless LDAP is set up)

globals().update(sso_ldap.ldap_settings(os.environ))
if os.environ.get("LDAP_SERVER_URI", "").strip():
    AUTHENTICATION_BACKENDS.insert(1, sso_ldap.BACKEND)
# OpenID Connect when OIDC_ISSUER is set (Authlib; portal/sso/oidc.py): "Log in with OIDC_PROVIDER_NAME".
from portal.sso import oidc as sso_oidc  # noqa: E402

globals().update(sso_oidc.oidc_settings(os.environ))
OIDC_SESSION_FROM_TOKEN = env_bool("OIDC_SESSION_FROM_TOKEN", True)  # the session ends when the ID token does
if os.environ.get("OIDC_ISSUER", "").strip():
    AUTHENTICATION_BACKENDS.insert(1, sso_oidc.BACKEND)
# A header an authenticating proxy sets, believed from TRUSTED_PROXIES only (portal/sso/remote_user.py).
from portal.sso import remote_user as sso_remote_user  # noqa: E402

globals().update(sso_remote_user.remote_user_settings(os.environ))
if os.environ.get("REMOTE_USER_HEADER", "").strip():
    AUTHENTICATION_BACKENDS.insert(1, sso_remote_user.BACKEND)
PASSWORD_RESET_LIMIT = int(os.environ.get("PASSWORD_RESET_LIMIT", "5"))  # an hour, per client and per address
PASSWORD_RESET_TIMEOUT = int(os.environ.get("PASSWORD_RESET_TIMEOUT", str(24 * 3600)))  # seconds a link works
if not env_bool("LOCAL_LOGINS", True):  # the same permissions, no password checked
    AUTHENTICATION_BACKENDS[AUTHENTICATION_BACKENDS.index("django.contrib.auth.backends.ModelBackend")] = (
        "portal.sso.backends.PermissionsOnlyBackend")
AXES_ENABLED = env_bool("LOGIN_THROTTLING", True)
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15"))) or None
AXES_LOCKOUT_PARAMETERS = [
    item.split("+") if "+" in item else item for item in env_list("LOGIN_LOCKOUT_PARAMETERS", "username+ip_address")
]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "portal.middleware.login_locked_out"
AXES_IPWARE_PROXY_COUNT = int(os.environ["LOGIN_PROXY_COUNT"]) if os.environ.get("LOGIN_PROXY_COUNT") else None

# Content-Security-Policy (django-csp 4; Django has its own only from 6.0). No inline script anywhere:
# chart data comes through json_script (type application/json, not executed) and charts.js reads it.
# style-src needs 'unsafe-inline' because plotly.js (4.x) adds <style> elements at run time
# (Lib.addStyleRule for its global rules, addRelatedStyleRule per plot for the mode bar) and has no nonce
# option; its opt-out (a pre-rendered stylesheet marked ``.no-inline-styles``) needs a plotly.css that the
# 4.x build no longer ships, and the mode bar still breaks without inline styles (plotly/plotly.js#7543).
# Inline *style* cannot run code; scripts stay 'self' only (no 'unsafe-inline', no 'unsafe-eval': plotly's
# only ``new Function`` is a fallback for browsers without ``globalThis``). NONCE is emitted only on pages
# that ask for one (the Swagger UI page's init script, templates/drf_spectacular/); the API docs pages get a
# small relaxation in portal.middleware.ContentSecurityPolicyMiddleware.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        # Logging out of a single sign-on session goes on to the provider's end_session_endpoint (a redirect
        # from the logout form, which form-action governs).
        "form-action": [SELF, *([sso_oidc.origin(globals()["OIDC"]["issuer"])] if "OIDC" in globals() else [])],
    },
}

# --- Cache --------------------------------------------------------------------------------------
# What the API's rate limits count in. Unset: each process's memory (the demo, one process); with several web
# processes or machines, CACHE_URL=redis://host:6379/1 gives them one count.
CACHE_URL = os.environ.get("CACHE_URL", "")
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
          if CACHE_URL else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- REST API ----------------------------------------------------------------------------------
# Clients may pin it: ``Accept: application/json; version=1.0``; another version is a 406.
API_VERSION = "1.0"
REST_FRAMEWORK = {
    "DEFAULT_VERSIONING_CLASS": "portal.api.versioning.AcceptHeaderVersioning",
    "DEFAULT_VERSION": API_VERSION,
    "ALLOWED_VERSIONS": [API_VERSION],
    "EXCEPTION_HANDLER": "portal.api.exceptions.exception_handler",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.authentication.APITokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["portal.api.permissions.RolePermission"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.PortalPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "portal.api.schema.PortalAutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "portal.api.renderers.PortalJSONRenderer",  # orjson: DRF's JSON, faster
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # JSON bodies only: the schema then offers one request body per operation, which generated clients
    # (openapi-python-client) need; a view that takes files would set its own parser_classes. Bodies nested
    # deeper than API_MAX_JSON_DEPTH are refused before decoding.
    "DEFAULT_PARSER_CLASSES": ["portal.api.parsers.DepthLimitedJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["portal.api.throttling.PortalRateThrottle"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
# Requests per user (per API token when one is used): "<n>/second|minute|hour|day"; empty: no limit. Over it: 429
# with Retry-After. Counted in the cache (CACHE_URL below).
API_RATE_LIMIT = os.environ.get("API_RATE_LIMIT", "1200/minute")
API_MAX_JSON_DEPTH = int(os.environ.get("API_MAX_JSON_DEPTH", "64"))  # deeper request bodies are a 400
SPECTACULAR_SETTINGS = {
    "TITLE": "Cluster Portal API",
    "DESCRIPTION": "Inventory, telemetry, planning, contracts and support for GPU training clusters.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Choice sets that share a field name ("kind") with others get names of their own.
    "ENUM_NAME_OVERRIDES": {
        "ScenarioKindEnum": "planning.plans.scenarios.SCENARIO_KINDS",
        "AllocationRequestStatusEnum": "inventory.allocations.models.AllocationRequest.Status",
        "AllocationRequestKindEnum": "inventory.allocations.models.AllocationRequest.Kind",
    },
}

# --- Celery ------------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    BROKER_DIR = VAR_DIR / "broker"
    VAR_FOLDERS += [BROKER_DIR / folder for folder in ("queue", "processed", "control")]
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
# Redis broker (CELERY_BROKER_URL=redis://...): with acks late, a task whose worker died is delivered again once
# its visibility timeout has passed (kombu's default: 1 hour; keep it above the longest task, or a task still
# running is delivered a second time). JSON, e.g. {"visibility_timeout": 600}; merged over the options above.
try:
    CELERY_BROKER_TRANSPORT_OPTIONS |= json.loads(os.environ.get("CELERY_BROKER_TRANSPORT_OPTIONS") or "{}")
except (ValueError, TypeError) as _error:
    raise ImproperlyConfigured(f"CELERY_BROKER_TRANSPORT_OPTIONS: not a JSON object ({_error})") from None
# A dead or hung broker must not hold a request: a publish gives up after about 2 s of connecting and two quick
# retries (portal.tasks.enqueue); what it was for stays recorded (a due source, a pending webhook) and is queued again.
CELERY_BROKER_CONNECTION_TIMEOUT = float(os.environ.get("CELERY_BROKER_CONNECTION_TIMEOUT", "2"))
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "worker-heartbeat": {"task": "portal.tasks.record_heartbeat", "schedule": 60.0},
    "import-resume": {"task": "portal.tasks.resume_stalled_imports", "schedule": 300.0},
    # TELEMETRY_POLL_SECONDS: how often beat looks for due sources (the load test shortens it; each source's
    # own interval still decides when it is pulled).
    "telemetry-poll": {"task": "inventory.tasks.poll_telemetry_sources",
                       "schedule": float(os.environ.get("TELEMETRY_POLL_SECONDS", "60"))},
    "telemetry-retention": {"task": "inventory.tasks.enforce_telemetry_retention", "schedule": 24 * 3600.0},
    "renewal-alerts": {"task": "planning.tasks.raise_renewal_alerts", "schedule": 24 * 3600.0},
    "webhook-requeue": {"task": "planning.webhooks.requeue_pending_webhooks", "schedule": 300.0},
    "recommendations": {"task": "planning.tasks.analyse_recommendations", "schedule": 24 * 3600.0},
    "support-fault-tickets": {"task": "support.tasks.open_fault_tickets", "schedule": 600.0},
    # Notification rules (support/eventrules): SLA breaches told, then the digests (one message per subscriber).
    "support-sla-breaches": {"task": "support.tasks.announce_sla_breaches", "schedule": 300.0},
    "notification-digests-hourly": {"task": "support.eventrules.send_digests", "schedule": crontab(minute=2),
                                    "args": ["hourly"]},
    "notification-digests-daily": {"task": "support.eventrules.send_digests", "schedule": crontab(minute=7, hour=7),
                                   "args": ["daily"]},
    # Interruptions of the jobs the Slurm pulls brought (every 10 minutes, over the last GOODPUT_LOOKBACK_HOURS).
    "goodput-interruptions": {"task": "inventory.tasks.record_interruptions", "schedule": 600.0},
    # The last month's statements, issued and e-mailed on the first of each month (TIME_ZONE), after midnight's pulls.
    "monthly-statements": {"task": "inventory.tasks.issue_monthly_statements",
                           "schedule": crontab(minute=30, hour=2, day_of_month=1)},
    "allocation-alerts": {"task": "inventory.tasks.alert_allocations", "schedule": 3600.0},
    "slurm-look": {"task": "inventory.tasks.look_at_slurm", "schedule": 24 * 3600.0},
}

# --- Telemetry ---------------------------------------------------------------------------------
TELEMETRY_HOURLY_RETENTION_DAYS = int(os.environ.get("TELEMETRY_HOURLY_RETENTION_DAYS", "400"))
TELEMETRY_DAILY_RETENTION_DAYS = int(os.environ.get("TELEMETRY_DAILY_RETENTION_DAYS", str(5 * 366)))
# Outbound requests (telemetry sources, webhooks; portal.outbound): loopback, private and other non-public
# addresses are refused unless inside one of these networks (comma-separated CIDRs, e.g. "10.20.0.0/16,127.0.0.1/32";
# default none). Link-local and cloud metadata addresses are refused whatever this says.
OUTBOUND_ALLOWED_NETWORKS = env_list("OUTBOUND_ALLOWED_NETWORKS", "")
for _cidr in OUTBOUND_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_cidr, strict=False)
    except ValueError as _error:
        raise ImproperlyConfigured(f"OUTBOUND_ALLOWED_NETWORKS: {_cidr!r} is not a network ({_error})") from None
# Through a forwarding proxy (HTTP_PROXY/HTTPS_PROXY), a name the portal cannot resolve is refused (it cannot be
# checked), unless OUTBOUND_PROXY_RESOLVES=1 and the name is in OUTBOUND_PROXY_ALLOWED_NAMES (comma-separated names,
# or "*.suffix" for every name below a domain): the proxy resolves those, trusted by name.
OUTBOUND_PROXY_RESOLVES = env_bool("OUTBOUND_PROXY_RESOLVES", False)
OUTBOUND_PROXY_ALLOWED_NAMES = env_list("OUTBOUND_PROXY_ALLOWED_NAMES", "")
for _name in OUTBOUND_PROXY_ALLOWED_NAMES:
    if "*" in _name.removeprefix("*.") or _name.strip("*.") == "" or "/" in _name or ":" in _name:
        raise ImproperlyConfigured(f"OUTBOUND_PROXY_ALLOWED_NAMES: {_name!r} is not a host name or *.domain")
# The largest answer a telemetry source or webhook receiver may send (bytes, decompressed); past it the pull fails.
OUTBOUND_MAX_ANSWER_BYTES = int(os.environ.get("OUTBOUND_MAX_ANSWER_BYTES", str(50 * 1024 * 1024)))
# Pull reports (the source page's data-quality panel) kept per source.
TELEMETRY_PULL_REPORTS_KEPT = int(os.environ.get("TELEMETRY_PULL_REPORTS_KEPT", "100"))
# What an idle GPU-hour costs when no contract says (the contracts work replaces it per node and site).
IDLE_GPU_HOUR_COST = float(os.environ.get("IDLE_GPU_HOUR_COST", "2.50"))
COST_CURRENCY = os.environ.get("COST_CURRENCY", "USD")
# Goodput (inventory/goodput/attribution.py): a job that failed from GOODPUT_FAULT_WINDOW_MINUTES before to
# GOODPUT_FAULT_LAG_MINUTES after a hardware fault on its nodes was interrupted by the infrastructure; the lost
# GPU-hours assume a checkpoint every GOODPUT_CHECKPOINT_MINUTES (unless planning gives the plan's) and count the
# team's wait for its next job up to GOODPUT_RESTART_WAIT_CAP_HOURS; MTBI is given for a job of GOODPUT_MTBI_GPUS.
GOODPUT_FAULT_WINDOW_MINUTES = int(os.environ.get("GOODPUT_FAULT_WINDOW_MINUTES", "10"))
GOODPUT_FAULT_LAG_MINUTES = int(os.environ.get("GOODPUT_FAULT_LAG_MINUTES", "5"))
GOODPUT_CHECKPOINT_MINUTES = int(os.environ.get("GOODPUT_CHECKPOINT_MINUTES", "60"))
GOODPUT_RESTART_WAIT_CAP_HOURS = float(os.environ.get("GOODPUT_RESTART_WAIT_CAP_HOURS", "24"))
GOODPUT_MTBI_GPUS = int(os.environ.get("GOODPUT_MTBI_GPUS", "8"))
GOODPUT_LOOKBACK_HOURS = int(os.environ.get("GOODPUT_LOOKBACK_HOURS", "48"))
# Team allocations (inventory/allocations): a request for at least this GPU-hour budget needs a second manager's
# approval; the team is warned when its use crosses these shares of the budget (%); the burn-down's projection
# extrapolates the use of the last ALLOCATION_BURN_RATE_DAYS days.
ALLOCATION_SECOND_APPROVAL_GPU_HOURS = float(os.environ.get("ALLOCATION_SECOND_APPROVAL_GPU_HOURS", "200000"))
ALLOCATION_ALERT_LEVELS = [int(level) for level in env_list("ALLOCATION_ALERT_LEVELS", "80,100")]
ALLOCATION_BURN_RATE_DAYS = int(os.environ.get("ALLOCATION_BURN_RATE_DAYS", "7"))
# The sync of the allocations with Slurm (inventory/allocations/sync.py, docs/slurm.md): the cluster's name in
# slurmdbd, SLURM_CONF for Slurm's clients when not the default, and SLURM_SYNC_BACKEND "sacctmgr" (Slurm's own clients,
# SLURM_SACCTMGR / SLURM_SCONTROL: e.g. "ssh slurm-head sacctmgr") or "simulator" (the demo's simulated cluster).
SLURM_CLUSTER = os.environ.get("SLURM_CLUSTER", "cluster")
SLURM_CONF = os.environ.get("SLURM_CONF", "")
SLURM_SYNC_BACKEND = os.environ.get("SLURM_SYNC_BACKEND", "sacctmgr")
if SLURM_SYNC_BACKEND not in ("sacctmgr", "simulator"):
    raise ImproperlyConfigured(f"SLURM_SYNC_BACKEND: {SLURM_SYNC_BACKEND!r} is neither sacctmgr nor simulator")
# A GPU model's page lists its nodes with at least this many infrastructure interruptions in 30 days.
GOODPUT_REPEAT_OFFENDER_MIN = int(os.environ.get("GOODPUT_REPEAT_OFFENDER_MIN", "2"))
# Recommendations: a partition is reliability-bound when the infrastructure's interruptions lost more than this share
# of its allocated GPU-hours over the window.
RELIABILITY_LOST_SHARE = float(os.environ.get("RELIABILITY_LOST_SHARE", "0.05"))
# Sizing's goodput allowance uses a GPU model's measured interruption rate (inventory.goodput) when the fleet's jobs
# held at least SIZING_MEASURED_MIN_GPU_HOURS of it over SIZING_MEASURED_RANGE (a utilization range: 7d, 30d, 90d, 1y).
SIZING_MEASURED_MIN_GPU_HOURS = float(os.environ.get("SIZING_MEASURED_MIN_GPU_HOURS", "10000"))
SIZING_MEASURED_RANGE = os.environ.get("SIZING_MEASURED_RANGE", "30d")
# The home dashboard: the fleet's mean GPU utilization aimed at (%), and how many days in delivered or burn-in make a
# node stuck there.
UTILIZATION_TARGET = float(os.environ.get("UTILIZATION_TARGET", "70"))
STUCK_NODE_DAYS = int(os.environ.get("STUCK_NODE_DAYS", "14"))
# GPU health badges (node and GPU pages, inventory.telemetry.gpu_health): "hot" from this GPU temperature (°C; H100 /
# A100 slow their clocks from about 85 °C) or memory temperature (HBM's limit is about 95 °C); a warning from this
# many single-bit ECC errors, NVLink errors or PCIe replays in the range shown (1: any). Double-bit ECC errors and
# hardware XID events are always flagged.
GPU_HOT_C = float(os.environ.get("GPU_HOT_C", "85"))
GPU_MEMORY_HOT_C = float(os.environ.get("GPU_MEMORY_HOT_C", "95"))
GPU_SBE_ECC_WARN = int(os.environ.get("GPU_SBE_ECC_WARN", "1"))
GPU_NVLINK_ERRORS_WARN = int(os.environ.get("GPU_NVLINK_ERRORS_WARN", "1"))
GPU_PCIE_REPLAYS_WARN = int(os.environ.get("GPU_PCIE_REPLAYS_WARN", "1"))

# --- Contracts ---------------------------------------------------------------------------------
RENEWAL_ALERT_DAYS = int(os.environ.get("RENEWAL_ALERT_DAYS", "30"))  # alert this many days before a notice deadline
ENERGY_PRICE_PER_KWH = float(os.environ.get("ENERGY_PRICE_PER_KWH", "0.20"))  # in COST_CURRENCY
DEFAULT_PUE = float(os.environ.get("DEFAULT_PUE", "1.3"))  # power usage effectiveness of every site
RACK_COST_PER_MONTH = float(os.environ.get("RACK_COST_PER_MONTH", "1500"))  # space for one rack, in COST_CURRENCY
# Capacity-plan scenarios (planning.plans.scenarios): rental rate when no rental contract gives one, facility build
# cost per kW of IT load, network and storage as a share of the node price, support per year as a share of capex.
RENTAL_GPU_HOUR_COST = float(os.environ.get("RENTAL_GPU_HOUR_COST", "2.50"))
DELIVERY_LEAD_DAYS = int(os.environ.get("DELIVERY_LEAD_DAYS", "90"))  # an open order's nodes arrive this long after it
BUILD_COST_PER_KW = float(os.environ.get("BUILD_COST_PER_KW", "10000"))
NETWORK_SHARE_OF_NODE_PRICE = float(os.environ.get("NETWORK_SHARE_OF_NODE_PRICE", "0.15"))
STORAGE_SHARE_OF_NODE_PRICE = float(os.environ.get("STORAGE_SHARE_OF_NODE_PRICE", "0.10"))
SUPPORT_SHARE_OF_CAPEX_PER_YEAR = float(os.environ.get("SUPPORT_SHARE_OF_CAPEX_PER_YEAR", "0.08"))
CONTRACT_DOCUMENT_MAX_BYTES = int(os.environ.get("CONTRACT_DOCUMENT_MAX_BYTES", str(20 * 1024 * 1024)))

# --- CSV import ----------------------------------------------------------------------------------
# A file with more rows than IMPORT_BACKGROUND_ROWS is checked and imported by a Celery task (a progress bar on
# its page) rather than in the request; the task commits every IMPORT_BATCH_ROWS rows so no other write waits on
# the import for more than a moment (SQLite has one write lock).
IMPORT_BACKGROUND_ROWS = int(os.environ.get("IMPORT_BACKGROUND_ROWS", "1000"))
IMPORT_BATCH_ROWS = int(os.environ.get("IMPORT_BATCH_ROWS", "300"))
# A background import that has not moved for this long (its progress is saved every few hundred rows) lost its worker:
# it is run again from the start (portal.tasks.resume_stalled_imports), at most IMPORT_MAX_ATTEMPTS runs in all.
IMPORT_STALL_SECONDS = int(os.environ.get("IMPORT_STALL_SECONDS", "600"))
IMPORT_MAX_ATTEMPTS = int(os.environ.get("IMPORT_MAX_ATTEMPTS", "3"))

# --- Support ----------------------------------------------------------------------------------
# SLA when no active support contract covers the ticket's asset: priority -> (response hours, resolution hours).
SUPPORT_DEFAULT_SLA = {"P1": (4, 24), "P2": (8, 72), "P3": (24, 120), "P4": (72, 240)}
SUPPORT_BREACHING_SOON_HOURS = float(os.environ.get("SUPPORT_BREACHING_SOON_HOURS", "4"))
SUPPORT_ATTACHMENT_MAX_BYTES = int(os.environ.get("SUPPORT_ATTACHMENT_MAX_BYTES", str(10 * 1024 * 1024)))
SUPPORT_EMAIL = os.environ.get("SUPPORT_EMAIL", "")  # the support queue's address: told of every new ticket
# Telemetry faults (support.tasks.open_fault_tickets): the window looked at, how long a node may be silent.
SUPPORT_FAULT_WINDOW_HOURS = int(os.environ.get("SUPPORT_FAULT_WINDOW_HOURS", "2"))
SUPPORT_NODE_SILENT_HOURS = int(os.environ.get("SUPPORT_NODE_SILENT_HOURS", "3"))
# ECC XID events (a new code on the sticky XID gauge, not samples) in the window that open an ECC ticket.
SUPPORT_ECC_REPEAT = int(os.environ.get("SUPPORT_ECC_REPEAT", "1"))

# --- Misc --------------------------------------------------------------------------------------
DJANGO_TABLES2_TEMPLATE = "portal/table.html"
DJANGO_TABLES2_TABLE_ATTRS = {"class": "table"}
DJANGO_TABLES2_PAGE_RANGE = 7
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
# Where the file-based backend (the demo's: make demo) writes each message; the folder is made at start-up.
EMAIL_FILE_PATH = Path(os.environ.get("EMAIL_FILE_PATH", VAR_DIR / "mail"))
if EMAIL_BACKEND == "django.core.mail.backends.filebased.EmailBackend":
    VAR_FOLDERS.append(EMAIL_FILE_PATH)
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT", "10"))  # seconds; Django's default (None) waits forever on SMTP
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "cluster-portal@localhost")
# Where people reach the portal: mails link to pages under it (a mail has no request to take the host from).
PORTAL_URL = os.environ.get("PORTAL_URL", "http://127.0.0.1:8000").rstrip("/")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
