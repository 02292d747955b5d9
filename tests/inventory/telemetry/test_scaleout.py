"""The scale-out path for real (``pytest -m scaleout``): a Redis server as the Celery broker, two workers (separate
processes, ``-c 1``) and one beat, against the test's PostgreSQL database, pulling DCGM exporter sources served by a
stub server. The stub finds which worker sent each scrape (the process holding the request's socket).

- Pulls of many sources are spread over both workers, and none is done twice: beat polls every second, yet each
  source has one pull report and one scrape, and each GPU's hour one sample (its value, counted once).
- A worker killed (SIGKILL, with its pool) in the middle of a pull: the stub holds that scrape until the kill;
  the task was not acknowledged (acks late), so Redis hands it to the other worker once the visibility timeout
  (shortened here) has passed. The pull is redone there, once: one report, one sample per GPU.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
from django.db import connection

from inventory.models import GPUHourly, PullReport, TelemetrySample, TelemetrySource
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server
from tests.helpers.paths import ROOT
from tests.helpers.redisserver import redis_server_binary, throwaway_redis

pytestmark = [
    pytest.mark.scaleout,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(redis_server_binary() is None, reason="no redis-server (apt-get install redis-server)"),
]

SOURCES, GPUS = 12, 2  # and one more source, whose first scrape hangs until its worker is killed
VISIBILITY_TIMEOUT = 6
TIMEOUT = 90


def page(source, util):
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    lines += [f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-so-{source}-{g}",Hostname="so-{source}"}} {util}'
              for g in range(GPUS)]
    return "\n".join(lines) + "\n"


class Worker:
    def __init__(self, name, env, folder):
        self.name, self.log = name, folder / f"{name}.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "portal", "worker", "-c", "1", "--loglevel=INFO",
                 f"--hostname={name}@scaleout", "--without-mingle", "--without-gossip"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def holds(self, port):
        """Whether this worker (its main process or a pool process) has the client end of ``port``'s socket."""
        if self.process.poll() is not None:
            return False  # killed: the pull it held is redone by the other one
        main = psutil.Process(self.process.pid)
        for process in [main, *main.children(recursive=True)]:
            try:
                if any(c.laddr and c.laddr.port == port for c in process.net_connections("tcp")):
                    return True
            except psutil.NoSuchProcess:
                pass
        return False

    def ready(self):
        return f"{self.name}@scaleout ready." in self.log.read_text()

    def kill(self):
        os.killpg(self.process.pid, signal.SIGKILL)  # the worker and its pool, as when its machine dies
        self.process.wait(timeout=10)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


def wait_for(condition, processes, seconds=TIMEOUT):
    deadline = time.monotonic() + seconds
    while not condition():
        for process in processes:
            assert process.poll() is None, f"{process.args[3:5]} ended early"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_two_workers_and_beat_on_redis(tmp_path):
    db = connection.settings_dict
    for s in range(SOURCES + 1):
        node = make_node(hostname=f"so-{s}")
        for g in range(GPUS):
            make_gpu(node=node, slot=g, uuid=f"GPU-so-{s}-{g}")
    scrapes, hung, release = [], threading.Event(), threading.Event()
    with throwaway_redis() as broker, stub_server() as stub:
        env = {**os.environ, "PORTAL_VAR_DIR": str(tmp_path), "CELERY_BROKER_URL": broker,
               "CELERY_BROKER_TRANSPORT_OPTIONS": json.dumps(
                   {"visibility_timeout": VISIBILITY_TIMEOUT, "unacked_restore_interval": 1,
                    "unacked_restore_throttle": 1}),
               "TELEMETRY_POLL_SECONDS": "1", "OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32",
               "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"}
        workers = [Worker("w1", env, tmp_path), Worker("w2", env, tmp_path)]

        def answer(source):
            def scrape(query):
                worker = next(w for w in workers if w.holds(stub.client[1]))
                scrapes.append((source, worker))
                if source == SOURCES and not hung.is_set():
                    hung.set()
                    release.wait(TIMEOUT)  # until the test has killed the worker waiting for this answer
                time.sleep(0.3)  # a scrape takes a moment: no worker can take every pull alone
                return 200, "text/plain; version=0.0.4", page(source, util=10 + source)
            return scrape

        for s in range(SOURCES + 1):
            stub.route(f"/metrics/{s}", answer(s))
            TelemetrySource.objects.create(name=f"dcgm-{s}", kind="exporter", url=stub.url(f"/metrics/{s}"),
                                           interval_seconds=3600, timeout_seconds=TIMEOUT, enabled=False)
        with open(tmp_path / "beat.log", "w") as log:
            beat = subprocess.Popen([sys.executable, "-m", "celery", "-A", "portal", "beat", "--loglevel=INFO"],
                                    cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        processes = [beat] + [w.process for w in workers]
        try:
            wait_for(lambda: all(w.ready() for w in workers), processes)
            # Many sources due at once: the next polls queue their pulls, both workers take them.
            TelemetrySource.objects.exclude(name=f"dcgm-{SOURCES}").update(enabled=True)
            wait_for(lambda: PullReport.objects.count() == SOURCES, processes)
            ran = {w.name for _, w in scrapes}
            assert ran == {"w1", "w2"}, f"every pull ran on {ran}"

            # One more, whose scrape hangs: the worker holding it is killed in the middle of the pull.
            TelemetrySource.objects.filter(name=f"dcgm-{SOURCES}").update(enabled=True)
            assert hung.wait(TIMEOUT)
            (_, killed), = [(s, w) for s, w in scrapes if s == SOURCES]
            killed.kill()
            release.set()
            survivor, = [w for w in workers if w is not killed]
            processes.remove(killed.process)
            wait_for(lambda: PullReport.objects.count() == SOURCES + 1, processes,
                     seconds=VISIBILITY_TIMEOUT + TIMEOUT)
            time.sleep(3)  # a few more polls: nothing is pulled again
        finally:
            release.set()
            for worker in workers:
                worker.stop()
            beat.terminate()
            beat.wait(timeout=20)

    assert [w for s, w in scrapes if s == SOURCES] == [killed, survivor]  # redone by the other worker
    assert sorted(s for s, _ in scrapes) == sorted([*range(SOURCES + 1), SOURCES])  # no other scrape twice
    assert sorted(PullReport.objects.values_list("source__name", "ok")) == sorted(
        (f"dcgm-{s}", True) for s in range(SOURCES + 1))
    assert TelemetrySample.objects.count() == (SOURCES + 1) * GPUS
    hours = GPUHourly.objects.values_list("gpu__uuid", "util_mean", "samples")
    assert sorted(hours) == sorted((f"GPU-so-{s}-{g}", 10 + s, 1) for s in range(SOURCES + 1) for g in range(GPUS))
