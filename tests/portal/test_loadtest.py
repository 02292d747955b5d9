"""The load test's users (``bench/locustfile.py``) against a live portal with the demo fleet: every request
they make is answered (a renamed filter or page shows up here, not first in a load-test run), and a refused
log-in is counted as a failure. locust runs as a subprocess: it monkey-patches the standard library with
gevent on import, which this test process must not get."""

import csv
import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from bench.loadtest import count_pulls, figures, prepare
from tests.helpers.paths import ROOT

LOCUST = Path(sys.executable).parent / "locust"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not LOCUST.exists(), reason="locust is a test extra (make install-test)"),
]


@pytest.fixture(autouse=True)
def production_like(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The users send X-Forwarded-Proto: https as the TLS proxy would; production trusts it, so here too
    # (else their log-in's Origin, https://..., does not match a plain-http request: a CSRF refusal).
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


@pytest.fixture
def demo(tmp_path):
    call_command("seed_demo", stdout=StringIO())
    data_file = tmp_path / "data.json"
    prepare("http://127.0.0.1:9", 60, data_file)  # port 9: no simulator here, nothing pulls in this test
    return data_file


def run_locust(live_server, data_file, tmp_path, users=6, seconds=12, user_classes=()):
    env = dict(os.environ, LOADTEST_DATA=str(data_file))
    subprocess.run(
        [str(LOCUST), "-f", str(ROOT / "bench" / "locustfile.py"), "--headless", "--host", live_server.url,
         "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--csv", str(tmp_path / "run"), "--only-summary",
         *user_classes],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=seconds + 60,
    )
    with open(tmp_path / "run_stats.csv") as handle:
        rows = {row["Type"] + " " + row["Name"]: row for row in csv.DictReader(handle)}
    with open(tmp_path / "run_failures.csv") as handle:
        failures = list(csv.DictReader(handle))
    return rows, failures


def test_every_request_of_the_users_is_answered(live_server, demo, tmp_path):
    rows, failures = run_locust(live_server, demo, tmp_path)
    assert failures == []
    total = figures(rows[" Aggregated"])
    assert total["failures"] == 0
    assert total["requests"] > 20
    # Browsers logged in through the form, API clients used their token.
    assert int(rows["POST login"]["Request Count"]) >= 1
    assert any(name.startswith("GET /api/") and int(row["Request Count"]) for name, row in rows.items())


def test_a_refused_log_in_is_a_failure(live_server, demo, tmp_path):
    User.objects.filter(username="viewer").update(is_active=False)
    rows, failures = run_locust(live_server, demo, tmp_path, users=1, seconds=5, user_classes=["Viewer"])
    assert [(f["Name"], f["Error"]) for f in failures if f["Name"] == "login"] == [
        ("login", "CatchResponseError('log-in as viewer refused (HTTP 200)')")
    ]
    # Without a session every page lands on the login form: each counted as a failure, none as a success.
    pages = [row for name, row in rows.items() if name.startswith("GET /") and int(row["Request Count"])]
    assert pages and all(row["Request Count"] == row["Failure Count"] for row in pages)


@pytest.mark.django_db(transaction=False)
def test_count_pulls_counts_scrapes_in_the_window():
    from django.utils import timezone

    from inventory.telemetry.models import TelemetrySample, TelemetrySource
    from tests.factories import make_gpu

    source = TelemetrySource.objects.create(name="exporter", kind=TelemetrySource.Kind.EXPORTER,
                                            url="http://127.0.0.1:9/metrics")
    start = timezone.now()
    gpus = [make_gpu() for _ in range(3)]
    for second in (1, 2):  # two scrapes of three GPUs
        TelemetrySample.objects.bulk_create([
            TelemetrySample(source=source, gpu=gpu, ts=start + timedelta(seconds=second), util=50.0) for gpu in gpus
        ])
    counted = count_pulls(start, start + timedelta(seconds=10))
    assert (counted["scrapes"], counted["sample rows"]) == (2, 6)
    assert count_pulls(start + timedelta(seconds=3), start + timedelta(seconds=10))["scrapes"] == 0
