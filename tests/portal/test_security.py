"""Security settings at work: login throttling (django-axes), production cookies/HSTS/SSL redirect, the
security headers and the Content-Security-Policy on responses, and contract documents never served as code."""

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from planning.models import Contract, ContractDocument
from tests.helpers.accounts import token_client
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.django_db
PROD_SECRET = "k" * 10 + "x9!Q" * 12


def login(client, username, password, **extra):
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def fail_until_locked(client, username, limit):
    """``limit`` wrong passwords: the first ones re-show the form, the last one locks the account."""
    responses = [login(client, username, "wrong-password") for _ in range(limit)]
    assert [r.status_code for r in responses[:-1]] == [200] * (limit - 1)
    assert responses[-1].status_code == 429
    return responses[-1]


# --- Login throttling ------------------------------------------------------------------------------------


def test_the_right_password_is_refused_after_too_many_failures(client, viewer, settings):
    assert settings.AXES_FAILURE_LIMIT == 5  # the default (LOGIN_FAILURE_LIMIT)
    fail_until_locked(client, "vera", settings.AXES_FAILURE_LIMIT)
    response = login(client, "vera", "pw-vera")
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    page = response.content.decode()
    assert "Too many failed log-ins: this account is locked. Try again in 15 minutes" in page
    assert 'id="id_password"' in page  # the login page itself, with the reason on it
    assert client.get("/").status_code == 302  # still logged out


def test_a_login_below_the_limit_succeeds_and_clears_the_count(client, viewer, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login(client, "vera", "wrong").status_code == 200
    assert login(client, "vera", "pw-vera").status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):  # counting starts again after a success
        assert login(client, "vera", "wrong").status_code == 200
    assert login(client, "vera", "pw-vera").status_code == 302


def test_the_lockout_ends_after_the_cool_off(client, viewer, settings):
    fail_until_locked(client, "vera", settings.AXES_FAILURE_LIMIT)
    assert login(client, "vera", "pw-vera").status_code == 429
    # 16 minutes later (the attempts age; the default cool-off is 15 minutes).
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert login(client, "vera", "pw-vera").status_code == 302


def test_an_admin_unlocks_an_account_with_a_management_command(client, viewer, settings):
    fail_until_locked(client, "vera", settings.AXES_FAILURE_LIMIT)
    call_command("axes_reset_username", "vera", verbosity=0)
    assert login(client, "vera", "pw-vera").status_code == 302


def test_the_lockout_is_per_account_and_address(client, viewer, manager, settings):
    fail_until_locked(client, "vera", settings.AXES_FAILURE_LIMIT)
    assert login(client, "max", "pw-max").status_code == 302  # another account from the same address
    client.logout()
    # The same account from another address (default LOGIN_LOCKOUT_PARAMETERS=username+ip_address).
    assert login(client, "vera", "pw-vera", REMOTE_ADDR="10.1.2.3").status_code == 302


def test_api_tokens_are_not_locked_out(client, viewer, settings):
    api = token_client(viewer)
    fail_until_locked(client, "vera", settings.AXES_FAILURE_LIMIT)
    assert api.get("/api/inventory/nodes/").status_code == 200
    assert login(client, "vera", "pw-vera").status_code == 429


def test_the_admin_login_is_throttled_too(client, admin_user, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/admin/login/", {"username": "ada", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "ada", "password": "pw-ada"})
    assert response.status_code == 429
    assert "this account is locked" in response.content.decode()


def test_authenticate_without_a_request_is_not_throttled(viewer):
    # Management commands and shells call authenticate() without a request; axes would raise for those.
    from django.contrib.auth import authenticate

    assert authenticate(username="vera", password="pw-vera") == viewer


# --- Settings from the environment ----------------------------------------------------------------------


def production_settings(*names, **env):
    """The named settings as ``manage.py`` would see them with ``env`` (DEBUG=0 unless given)."""
    code = ("import django, json; django.setup(); from django.conf import settings as s; "
            f"print(json.dumps({{n: getattr(s, n, None) for n in {list(names)!r}}}, default=str))")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "LOGIN_", "DEBUG", "SECRET_KEY"))}
    full = {**clean, "DJANGO_SETTINGS_MODULE": "portal.settings", "DEBUG": "0", "SECRET_KEY": PROD_SECRET,
            "ALLOWED_HOSTS": "portal.example.org", **env}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_production_cookies_hsts_and_redirect(tmp_path):
    values = production_settings(
        "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY", "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER",
        "SECURE_CONTENT_TYPE_NOSNIFF", "SECURE_REFERRER_POLICY", "X_FRAME_OPTIONS", PORTAL_VAR_DIR=str(tmp_path))
    assert values == {
        "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_SSL_REDIRECT": True, "SECURE_HSTS_SECONDS": 31536000, "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_PROXY_SSL_HEADER": None,  # a forgeable header is trusted only when told to
        "SECURE_CONTENT_TYPE_NOSNIFF": True, "SECURE_REFERRER_POLICY": "same-origin", "X_FRAME_OPTIONS": "DENY",
    }


@pytest.mark.parametrize(("value", "expected"), [
    ("1", ["HTTP_X_FORWARDED_PROTO", "https"]),
    ("HTTP_X_FORWARDED_SSL=on", ["HTTP_X_FORWARDED_SSL", "on"]),
    ("", None),
])
def test_the_tls_proxy_header_is_switched_by_the_environment(tmp_path, value, expected):
    values = production_settings("SECURE_PROXY_SSL_HEADER", SECURE_PROXY_SSL_HEADER=value,
                                 PORTAL_VAR_DIR=str(tmp_path))
    assert values["SECURE_PROXY_SSL_HEADER"] == expected


def test_check_deploy_is_clean_behind_a_tls_proxy(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    env.update(DEBUG="0", SECRET_KEY=PROD_SECRET, ALLOWED_HOSTS="portal.example.org", SECURE_PROXY_SSL_HEADER="1",
               DATABASE_URL="postgres://portal:secret@db.example.org:5432/portal", PORTAL_VAR_DIR=str(tmp_path),
               LOGIN_PROXY_COUNT="1", CELERY_BROKER_URL="redis://redis.example.org:6379/0")
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_login_throttling_from_the_environment(tmp_path):
    values = production_settings(
        "AXES_FAILURE_LIMIT", "AXES_COOLOFF_TIME", "AXES_LOCKOUT_PARAMETERS", "AXES_IPWARE_PROXY_COUNT",
        LOGIN_FAILURE_LIMIT="3", LOGIN_COOLOFF_MINUTES="0", LOGIN_LOCKOUT_PARAMETERS="username,ip_address",
        LOGIN_PROXY_COUNT="1", PORTAL_VAR_DIR=str(tmp_path))
    assert values == {"AXES_FAILURE_LIMIT": 3, "AXES_COOLOFF_TIME": None,  # 0: until an admin unlocks
                      "AXES_LOCKOUT_PARAMETERS": ["username", "ip_address"], "AXES_IPWARE_PROXY_COUNT": 1}


def test_ssl_redirect_and_hsts_behind_a_proxy(client, viewer, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    response = client.get("/accounts/login/")
    assert response.status_code == 301 and response["Location"] == "https://testserver/accounts/login/"
    response = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"


# --- Headers on responses ------------------------------------------------------------------------------


def csp(response):
    return dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))


def test_security_headers_and_the_policy(viewer_client):
    response = viewer_client.get("/")
    assert response.status_code == 200
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    policy = csp(response)
    assert policy == {
        "default-src": "'self'", "script-src": "'self'", "style-src": "'self' 'unsafe-inline'",
        "img-src": "'self' data:", "font-src": "'self'", "connect-src": "'self'", "object-src": "'none'",
        "base-uri": "'self'", "frame-ancestors": "'none'", "form-action": "'self'",
    }


@pytest.mark.parametrize(("who", "url", "status"), [
    ("anonymous", "/", 302),
    ("anonymous", "/accounts/login/", 200),
    ("anonymous", "/api/inventory/nodes/", 401),
    ("anonymous", "/static/portal/css/portal.css", 200),
    ("viewer", "/no-such-page/", 404),
    ("viewer", "/inventory/nodes/add/", 403),
    ("viewer", "/api/", 200),
    ("viewer", "/api/schema/", 200),
    ("viewer", "/inventory/nodes/?_export=csv", 200),
])
def test_the_policy_is_on_every_kind_of_response(client, viewer, who, url, status):
    if who == "viewer":
        client.force_login(viewer)
    response = client.get(url)
    assert response.status_code == status
    assert csp(response)["script-src"] == "'self'"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_swagger_ui_gets_a_nonce_for_its_init_script_only(viewer_client):
    response = viewer_client.get("/api/docs/")
    nonce = csp(response)["script-src"].split("'nonce-")[1].rstrip("'")
    page = response.content.decode()
    assert page.count("<script") == 3 and page.count(f'<script nonce="{nonce}">') == 1
    assert "fonts.googleapis.com" not in viewer_client.get("/api/redoc/").content.decode()
    assert csp(viewer_client.get("/api/redoc/"))["worker-src"] == "'self' blob:"
    assert "worker-src" not in csp(viewer_client.get("/"))


# --- Contract documents are downloads, never pages -------------------------------------------------------

PDF = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def make_contract():
    today = timezone.localdate()
    return Contract.objects.create(kind=Contract.Kind.SUPPORT, vendor="Acme", reference="C-1",
                                   start=today - timedelta(days=10), end=today + timedelta(days=300))


def upload(client, contract, name, content, content_type="application/pdf"):
    return client.post(reverse("planning:contract_document_upload", args=[contract.pk]),
                       {"file": SimpleUploadedFile(name, content, content_type=content_type)})


def test_a_document_is_stored_under_media_root_and_downloaded_as_an_attachment(manager_client, media):
    contract = make_contract()
    # The browser's claimed type is ignored: the type comes from the name and the content's first bytes.
    assert upload(manager_client, contract, "../../offer.pdf", PDF, content_type="text/html").status_code == 302
    document = ContractDocument.objects.get()
    stored = Path(document.file.path).resolve()
    assert stored.is_relative_to(media.resolve()) and stored.read_bytes() == PDF
    response = manager_client.get(reverse("planning:contractdocument_download", args=[document.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    # No URL serves MEDIA_ROOT directly (no static()/serve() route): the file's media URL is a 404.
    assert manager_client.get("/" + "media/" + document.file.name).status_code == 404


@pytest.mark.parametrize("name", ["page.html", "image.svg", "script.js", "shell.php", "page.htm", "x.pdf.html"])
def test_files_a_browser_would_run_are_refused(manager_client, media, name):
    response = upload(manager_client, make_contract(), name, b"<script>alert(1)</script>", content_type="text/plain")
    assert response.status_code == 400
    assert not ContractDocument.objects.exists()
    assert not media.exists() or not any(path.is_file() for path in media.rglob("*"))


def test_html_in_a_text_file_is_downloaded_not_rendered(manager_client, media):
    contract = make_contract()
    assert upload(manager_client, contract, "notes.txt", b"<script>alert(1)</script>").status_code == 302
    response = manager_client.get(reverse("planning:contractdocument_download",
                                          args=[ContractDocument.objects.get().pk]))
    assert response["Content-Type"] == "text/plain"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"


def test_deleting_a_contract_removes_its_documents_files(manager_client, media, django_capture_on_commit_callbacks):
    contract = make_contract()
    assert upload(manager_client, contract, "offer.pdf", PDF).status_code == 302
    stored = Path(ContractDocument.objects.get().file.path)
    assert stored.is_file()
    with django_capture_on_commit_callbacks(execute=True):
        contract.delete()
    assert not stored.exists()
    assert not ContractDocument.objects.exists()
