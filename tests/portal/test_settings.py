"""Settings come from the environment; production values pass Django's deployment checks."""

import os
import subprocess
import sys

from django.conf import settings

from portal.models import WorkerHeartbeat
from portal.tasks import record_heartbeat
from tests.helpers.paths import ROOT


def manage(*args, **env):
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    env = {**clean, "DJANGO_SETTINGS_MODULE": "portal.settings", **env}  # the portal's, not the test run's
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_with_production_values(tmp_path):
    result = manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="0", SECRET_KEY="k" * 10 + "x9!Q" * 12,
                    DATABASE_URL="postgres://portal:secret@db.example.org:5432/portal",
                    ALLOWED_HOSTS="portal.example.org", CELERY_BROKER_URL="redis://redis.example.org:6379/0",
                    PORTAL_VAR_DIR=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_is_clean_with_every_single_sign_on_set_up(tmp_path):
    """OpenID Connect and remote-user headers from docs/authentication.md (LDAP needs python-ldap: its own tests)."""
    result = manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="0", SECRET_KEY="k" * 10 + "x9!Q" * 12,
                    DATABASE_URL="postgres://portal:secret@db.example.org:5432/portal",
                    ALLOWED_HOSTS="portal.example.org", PORTAL_VAR_DIR=str(tmp_path), LOCAL_LOGINS="0",
                    OIDC_ISSUER="https://id.lab.example/realms/lab", OIDC_CLIENT_ID="cluster-portal",
                    OIDC_CLIENT_SECRET="s" * 32, OIDC_PROVIDER_NAME="Lab ID",
                    REMOTE_USER_HEADER="X-Remote-User", TRUSTED_PROXIES="10.0.0.5/32",
                    REMOTE_USER_GROUPS_HEADER="X-Remote-Groups")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = manage("check", DEBUG="0", PORTAL_VAR_DIR=str(tmp_path))
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_debug_is_off_unless_asked_for(tmp_path):
    # Nothing in the environment: no DEBUG, so no start without a secret key.
    result = manage("check", PORTAL_VAR_DIR=str(tmp_path))
    assert result.returncode != 0 and "SECRET_KEY must be set" in result.stderr
    code = "from django.conf import settings as s; import django; django.setup(); print(s.DEBUG)"
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**clean, "DJANGO_SETTINGS_MODULE": "portal.settings", "SECRET_KEY": "s" * 50,
                              "PORTAL_VAR_DIR": str(tmp_path)})
    assert out.stdout.strip() == "False", out.stderr
    makefile = (ROOT / "Makefile").read_text()  # the demo asks, in the settings every demo process gets
    assert "DEBUG=1" in makefile.split("\nDEMO_ENV = ")[1].split("\n\n")[0]
    assert all("$(DEMO_ENV)" in line for line in makefile.split("\ndemo:")[1].split("\n\n")[0].splitlines()
               if "manage.py" in line or "demo.sh" in line)


def test_embedded_defaults_need_no_server(tmp_path):
    code = ("from django.conf import settings as s; import django; django.setup(); "
            "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL)")
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**env, "DJANGO_SETTINGS_MODULE": "portal.settings", "PORTAL_VAR_DIR": str(tmp_path)})
    assert out.stdout.split() == ["django.db.backends.sqlite3", "filesystem://"], out.stderr


WRITER = """
import time
import django
django.setup()
from django.db import connection, transaction
for _ in range(200):
    with transaction.atomic(), connection.cursor() as cursor:  # read, then write: the demo's tasks do this
        cursor.execute("SELECT n FROM counter WHERE id = 1")
        (n,) = cursor.fetchone()
        time.sleep(0.002)  # work between the read and the write
        cursor.execute("UPDATE counter SET n = %s WHERE id = 1", [n + 1])
"""


def test_the_embedded_sqlite_database_takes_concurrent_writers(tmp_path):
    """The demo runs the web server, a Celery worker, beat and the simulator on one SQLite file: concurrent
    read-then-write transactions wait for each other instead of failing with "database is locked", and none is
    lost."""
    import sqlite3

    with sqlite3.connect(tmp_path / "portal.sqlite3") as db:
        db.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER)")
        db.execute("INSERT INTO counter VALUES (1, 0)")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DJANGO_SETTINGS_MODULE="portal.settings", PORTAL_VAR_DIR=str(tmp_path))
    writers = [subprocess.Popen([sys.executable, "-c", WRITER], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
               for _ in range(4)]
    errors = [writer.communicate(timeout=120)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * 4, "\n".join(errors)
    with sqlite3.connect(tmp_path / "portal.sqlite3") as db:
        assert db.execute("SELECT n FROM counter").fetchone() == (800,)


def test_a_task_is_queued_on_the_filesystem_broker(tmp_path):
    """``delay()`` with the default broker writes the message to a folder a worker reads."""
    code = "import django; django.setup(); from portal.tasks import record_heartbeat; record_heartbeat.delay()"
    env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**env, "DJANGO_SETTINGS_MODULE": "portal.settings", "PORTAL_VAR_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    queued = list((tmp_path / "broker" / "queue").iterdir())
    assert len(queued) == 1 and "record_heartbeat" in queued[0].read_text()


def test_heartbeat_task_shows_on_the_dashboard(viewer_client):
    assert b"No background worker has reported yet" in viewer_client.get("/").content
    record_heartbeat.apply()
    assert WorkerHeartbeat.objects.count() == 1
    assert b"Worker last seen" in viewer_client.get("/").content


def test_security_defaults():
    assert "portal.middleware.LoginRequiredMiddleware" in settings.MIDDLEWARE
    assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE
    assert settings.X_FRAME_OPTIONS == "DENY"


def test_reading_the_settings_creates_no_folder(tmp_path):
    """Settings are read by tools that never run the portal (linters, a check of one value): only starting the
    portal (django.setup) creates the folders of the embedded defaults."""
    var = tmp_path / "var"
    code = ("import importlib, os, sys; from pathlib import Path; importlib.import_module('portal.settings'); "
            "var = Path(os.environ['PORTAL_VAR_DIR']); print(var.exists()); "
            "import django; django.setup(); print(var.exists(), (var / 'broker' / 'queue').is_dir())")
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**env, "DJANGO_SETTINGS_MODULE": "portal.settings", "DEBUG": "1",
                              "PORTAL_VAR_DIR": str(var)})
    assert out.stdout.split() == ["False", "True", "True"], out.stderr
