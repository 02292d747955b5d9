"""A real Celery worker consumes tasks from the filesystem broker and writes to the database: the heartbeat,
and a telemetry pull of an exporter source served over a real socket."""

import os
import subprocess
import sys
import time

import pytest
from django.db import connection

from inventory.models import GPUHourly, TelemetrySource
from portal.celery import app
from portal.models import WorkerHeartbeat
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server
from tests.helpers.paths import ROOT

LABELS = 'gpu="0",UUID="GPU-worker-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="w-01"'
METRICS = f"""# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{{LABELS}}} 87
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{{{LABELS}}} 612.5
"""


def wait_for(condition, worker, seconds=180):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        assert worker.poll() is None, worker.stdout.read()
        time.sleep(0.5)
    return condition()


@pytest.mark.django_db(transaction=True)
def test_worker_runs_queued_tasks(tmp_path):
    db = connection.settings_dict
    env = {**os.environ, "PORTAL_VAR_DIR": str(tmp_path), "CELERY_BROKER_URL": "filesystem://",
           "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"}
    broker = tmp_path / "broker"
    options = {"data_folder_in": str(broker / "queue"), "data_folder_out": str(broker / "queue"),
               "control_folder": str(broker / "control"), "store_processed": False}
    for folder in ("queue", "control"):
        (broker / folder).mkdir(parents=True)
    gpu = make_gpu(node=make_node(hostname="w-01"), uuid="GPU-worker-0")
    with stub_server() as exporter:
        exporter.route("/metrics", (200, "text/plain; version=0.0.4", METRICS))
        source = TelemetrySource.objects.create(name="dcgm", kind="exporter", url=exporter.url("/metrics"),
                                                interval_seconds=60)
        with app.connection_for_write("filesystem://", transport_options=options) as conn:
            app.send_task("portal.tasks.record_heartbeat", connection=conn)
            app.send_task("inventory.tasks.pull_telemetry_source", args=[source.pk], connection=conn)
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--loglevel=WARNING",
             "--without-mingle", "--without-gossip", "--hostname=test-worker@%h"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        try:
            assert wait_for(lambda: WorkerHeartbeat.objects.exists(), worker)
            assert wait_for(lambda: GPUHourly.objects.filter(gpu=gpu).exists(), worker)
        finally:
            worker.terminate()
            worker.wait(timeout=20)
    row = GPUHourly.objects.get(gpu=gpu)
    assert (row.util_mean, row.power_mean_w, row.samples) == (87, 612.5, 1)
    source.refresh_from_db()
    assert source.last_success_at is not None and not source.is_stale
