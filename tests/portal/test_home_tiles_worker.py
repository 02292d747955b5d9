"""The home page's worker badge is right from the first second (issue 37): a worker reports as it starts
(``portal.tasks.report_at_start`` on Celery's ``worker_ready``), before beat's first heartbeat and with no task
queued, so a first login never reads "No background worker has reported yet" while one runs."""

import os
import subprocess
import sys
import time

import pytest
from django.db import connection

from portal.models import WorkerHeartbeat
from tests.helpers.paths import ROOT


@pytest.mark.django_db(transaction=True)
def test_a_starting_worker_shows_on_the_home_page(tmp_path, manager_client):
    assert "No background worker has reported yet" in manager_client.get("/").content.decode()
    db = connection.settings_dict
    env = {**os.environ, "PORTAL_VAR_DIR": str(tmp_path), "CELERY_BROKER_URL": "filesystem://",
           "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"}
    for folder in ("queue", "control"):
        (tmp_path / "broker" / folder).mkdir(parents=True)
    worker = subprocess.Popen(  # no beat, nothing queued: only its start can report
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--loglevel=WARNING",
         "--without-mingle", "--without-gossip", "--hostname=badge-worker@%h"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not WorkerHeartbeat.objects.exists() and time.monotonic() < deadline:
            assert worker.poll() is None, worker.stdout.read()
            time.sleep(0.5)
        assert WorkerHeartbeat.objects.exists()
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    page = manager_client.get("/").content.decode()
    assert "No background worker has reported yet" not in page
    assert 'class="worker ok"' in page and "Worker last seen" in page
