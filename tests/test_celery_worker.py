"""A real Celery worker consumes a task from the filesystem broker and writes to the database."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from portal.celery import app
from portal.models import WorkerHeartbeat

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.django_db(transaction=True)
def test_worker_runs_a_queued_task(tmp_path):
    db = connection.settings_dict
    env = {**os.environ, "PORTAL_VAR_DIR": str(tmp_path), "CELERY_BROKER_URL": "filesystem://",
           "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"}
    broker = tmp_path / "broker"
    options = {"data_folder_in": str(broker / "queue"), "data_folder_out": str(broker / "queue"),
               "control_folder": str(broker / "control"), "store_processed": False}
    for folder in ("queue", "control"):
        (broker / folder).mkdir(parents=True)
    with app.connection_for_write("filesystem://", transport_options=options) as conn:
        app.send_task("portal.tasks.record_heartbeat", connection=conn)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--loglevel=WARNING",
         "--without-mingle", "--without-gossip", "--hostname=test-worker@%h"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not WorkerHeartbeat.objects.exists() and time.monotonic() < deadline:
            assert worker.poll() is None, worker.stdout.read()
            time.sleep(0.5)
        assert WorkerHeartbeat.objects.count() == 1
    finally:
        worker.terminate()
        worker.wait(timeout=20)
