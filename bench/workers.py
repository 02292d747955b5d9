"""Parallel pulls (issue 35): completed telemetry pulls per minute with 1, 2 and 4 Celery workers.

    .venv/bin/python bench/workers.py [--gpus 10000] [--sources 8] [--workers 1 2 4] [--seconds 60] [--warmup 20]
                                      [--logs DIR]

1. A throwaway PostgreSQL and Redis (``tests/helpers``); ``bench/telemetry.py``'s fleet (``--gpus`` GPUs, 8 per node,
   4 sites, 8 partitions) split over ``--sources`` Prometheus sources by node (with 8, one per partition), all served
   by one local HTTP server that answers every query the collector sends (``prometheus.queries()``: utilization,
   memory, power, energy, health, the XID and row-remap gauges) with generated values for the source's GPUs at the
   hour asked for. Answers are written once per source, query and hour and then served from memory, so the server's
   own work stays small next to the pulls'.
2. For each worker count, that many ``celery -A portal worker -c 1`` processes on Redis, each pulling the current
   hour of a source at a time: the benchmark keeps one pull of every source queued or running (it queues a source's
   next pull as soon as its report is written), so the workers never wait for beat's poll. After ``--warmup``
   seconds, the pulls completed in ``--seconds`` are counted from their ``PullReport`` rows (failed ones apart).
3. Pulls per minute for each worker count, the ratio to one worker, the machine's load and the cores the workers,
   PostgreSQL, this process (the HTTP server) and everything else used during each window (``bench/loadtest.py``'s
   sampler), and the pulls per minute per core of workers and PostgreSQL: on a machine with fewer cores than
   workers, or shared, the ratio shows the cores the workers got. Whether pulls wait for each other in the database
   shows directly: every 0.2 s the workers' sessions running a statement are counted, and those waiting for a lock.
"""

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

MODEL = "NVIDIA H100 80GB HBM3"
# What the generated fleet reports for an hour, per collector field (anything else: 0, e.g. the XID gauge, errors).
FIGURES = {"samples": 60, "power_samples": 60, "energy_samples": 60, "mem_used_mean_gb": 40960.0,
           "power_mean_w": 450.0, "energy_wh": 1.62e9, "gr_engine_active_mean": 0.5, "tensor_active_mean": 0.3,
           "gpu_temp_max_c": 65.0, "memory_temp_max_c": 75.0, "sm_clock_mean_mhz": 1980.0}


class Prometheus:
    """The answers of one Prometheus server per source: ``route(stub)`` serves them under ``/p<source>/``."""

    def __init__(self, gpus_of):
        from inventory.telemetry import prometheus

        self.fields = {query: field for field, query in prometheus.queries().items()}
        self.series = {source: [(index, json.dumps({
            "UUID": uuid, "gpu": str(slot), "Hostname": hostname, "modelName": MODEL, "job": "dcgm",
            "instance": f"{hostname}:9400"})) for index, (uuid, slot, hostname) in enumerate(gpus)]
            for source, gpus in gpus_of.items()}
        self.answers = {}

    def route(self, stub):
        for source in self.series:
            stub.route(f"/p{source}/api/v1/query_range", lambda query, source=source: self.answer(source, query))
            stub.route(f"/p{source}/api/v1/targets", (404, "text/plain", "404 page not found"))

    def answer(self, source, query):
        """The series of the source's GPUs, one point at the end of the range asked for (the current hour)."""
        field, end = self.fields[query["query"][0]], query["end"][0]
        key = (source, field, end)
        if key not in self.answers:
            points = [f'{{"metric":{labels},"values":[[{end},"{self.value(field, index)}"]]}}'
                      for index, labels in self.series[source]]
            self.answers[key] = ('{"status":"success","data":{"resultType":"matrix","result":['
                                 + ",".join(points) + "]}}").encode()
        return 200, "application/json", self.answers[key]

    @staticmethod
    def value(field, index):
        if field in ("util_mean", "util_max"):
            return float(min(100, index * 37 % 100 + (10 if field == "util_max" else 0)))
        return FIGURES.get(field, 0)


class Workers:
    """``count`` Celery worker processes (``-c 1``), each in its own process group, logging to ``folder``."""

    def __init__(self, count, env, folder):
        self.logs = [folder / f"worker-{count}-{i}.log" for i in range(count)]
        self.processes = []
        for i, log in enumerate(self.logs):
            with open(log, "w") as out:
                self.processes.append(subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "portal", "worker", "-c", "1", "--loglevel=INFO",
                     f"--hostname=w{i}@bench", "--without-mingle", "--without-gossip", "--without-heartbeat"],
                    cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))

    def wait_ready(self, seconds=120):
        deadline = time.monotonic() + seconds
        while not all("ready." in log.read_text(errors="replace") for log in self.logs):
            if any(p.poll() is not None for p in self.processes) or time.monotonic() > deadline:
                logs = "\n".join(log.read_text()[-2000:] for log in self.logs)
                raise RuntimeError(f"a worker did not start:\n{logs}")
            time.sleep(0.2)

    def stop(self):
        """Warm shutdown (TERM to the main process: the pull its pool runs finishes), else their process groups."""
        for process in self.processes:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def build(gpus, sources, stub_url):
    """The fleet and its sources (by node, round robin: with 8 sources, one per partition); source → its GPUs."""
    import telemetry as fleet_bench

    from inventory.models import GPU, TelemetrySource

    fleet_bench.build_fleet(gpus)
    gpus_of = {source: [] for source in range(sources)}
    rows = GPU.objects.order_by("node_id", "slot").values_list("node_id", "uuid", "slot", "node__hostname")
    for node_id, uuid, slot, hostname in rows:
        gpus_of[node_id % sources].append((uuid, slot, hostname))
    for source in gpus_of:
        TelemetrySource.objects.create(name=f"prometheus-{source}", kind="prometheus", url=f"{stub_url}/p{source}",
                                       interval_seconds=60, backfill_hours=1, timeout_seconds=120)
    return gpus_of


def completed(since):
    """Pull reports written since ``since``: (ok, failed, the most frequent error)."""
    from django.db.models import Count

    from inventory.models import PullReport

    reports = PullReport.objects.filter(finished_at__gte=since)
    errors = reports.filter(ok=False).values_list("error").annotate(n=Count("pk")).order_by("-n")
    return reports.filter(ok=True).count(), sum(n for _, n in errors), errors[0][0] if errors else ""


def feed(seconds, queued):
    """For ``seconds``: queue a source's next pull as soon as its last one wrote its report; returns how many of the
    workers' database sessions were seen running a statement, and how many of those waiting for a lock (a row's,
    a table's or an advisory one), sampled at each look."""
    from django.db import connection
    from django.db.models import Count

    from inventory.models import PullReport
    from inventory.telemetry.tasks import pull_telemetry_source
    from portal.tasks import enqueue

    deadline, active, waiting = time.monotonic() + seconds, 0, 0
    while time.monotonic() < deadline:
        done = dict(PullReport.objects.values_list("source").annotate(n=Count("pk")).order_by())
        for source_id, reports in done.items():
            for _ in range(reports - queued.get(source_id, 0)):
                enqueue(pull_telemetry_source, source_id)
            queued[source_id] = max(queued.get(source_id, 0), reports)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*), count(*) FILTER (WHERE wait_event_type = 'Lock') FROM pg_stat_activity "
                           "WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()")
            seen, locked = cursor.fetchone()
        active, waiting = active + seen, waiting + locked
        time.sleep(0.2)
    return active, waiting


def phase(count, args, env, folder, sampler, running):
    """Pulls per minute with ``count`` workers, and what the window says: pulls failed, the most frequent error, the
    load, the cores each group of processes used."""
    from django.db import connections
    from django.db.models import Count
    from django.utils import timezone

    from inventory.models import PullReport, TelemetrySource
    from inventory.telemetry.tasks import pull_telemetry_source
    from portal.celery import app
    from portal.tasks import enqueue

    running[:] = [Workers(count, env, folder)]
    try:
        running[0].wait_ready()
        queued = dict(PullReport.objects.values_list("source").annotate(n=Count("pk")).order_by())
        for source_id in TelemetrySource.objects.values_list("pk", flat=True):
            enqueue(pull_telemetry_source, source_id)
        feed(args.warmup, queued)
        start, started, load = timezone.now(), time.time(), os.getloadavg()[0]
        active, waiting = feed(args.seconds, queued)
        ok, failed, error = completed(start)
        cores, load = sampler.cores(started, time.time()), (load + os.getloadavg()[0]) / 2
    finally:
        running[0].stop()
        app.control.purge()
        connections.close_all()
    return {"rate": ok * 60 / args.seconds, "failed": failed, "error": error, "load": load, "cores": cores,
            "active": active, "waiting": waiting}


def cpu_handles():
    """psutil process handles for the CPU sampler: ``with_ended`` counts a process's ended children too (a worker
    closes its database connection after each task, so PostgreSQL's backends last one pull each), ``alone`` none of
    its children (this process: the HTTP server and the feeder, not the workers and Redis it started)."""
    import psutil

    class WithEnded(psutil.Process):
        def cpu_times(self):
            times = super().cpu_times()
            return times._replace(user=times.user + times.children_user,
                                  system=times.system + times.children_system)

    class Alone(psutil.Process):
        def children(self, recursive=False):
            return []

    return WithEnded, Alone


def describe(count, result):
    cores = result["cores"] or {}
    failed = f"{result['failed']} failed" + (f": {result['error'][:200]}" if result["failed"] else "")
    # What the portal gets out of a core, whatever share of the machine others took: flat when nothing waits.
    portal = cores.get("workers", 0) + cores.get("PostgreSQL", 0)
    per_core = f", {result['rate'] / portal:.0f} per core of workers + PostgreSQL" if portal else ""
    return (f"{count} worker(s): {result['rate']:.1f} pulls/min{per_core} ({failed}); workers' statements seen "
            f"running {result['active']}, waiting for a lock {result['waiting']}; load {result['load']:.2f}; cores "
            "used: "
            f"workers {cores.get('workers', 0):.2f}, PostgreSQL {cores.get('PostgreSQL', 0):.2f}, this process's "
            f"HTTP server and feeder {cores.get('bench', 0):.2f}, other {cores.get('other', 0):.2f} (Redis, anyone "
            "else's work)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10000)
    parser.add_argument("--sources", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=int, default=60, help="measured window per worker count")
    parser.add_argument("--warmup", type=int, default=20, help="seconds before each window")
    parser.add_argument("--logs", type=Path, help="keep the workers' logs in this folder")
    args = parser.parse_args()

    import loadtest

    from tests.helpers.httpstub import stub_server
    from tests.helpers.pgserver import throwaway_postgres
    from tests.helpers.redisserver import throwaway_redis

    with (throwaway_postgres() as (host, port, user), throwaway_redis() as broker, stub_server() as stub,
          tempfile.TemporaryDirectory(prefix="bench-workers-") as folder):
        env = {**os.environ, "DATABASE_URL": f"postgres://{user}@{host}:{port}/postgres", "CELERY_BROKER_URL": broker,
               "SECRET_KEY": secrets.token_urlsafe(50), "DEBUG": "0", "PORTAL_VAR_DIR": folder,
               "OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32", "TELEMETRY_PULL_REPORTS_KEPT": "1000000",
               # Connections kept for the whole window: the CPU sampler sees a backend's seconds only while it lives.
               "DATABASE_CONN_MAX_AGE": "3600", "LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1"}
        os.environ.update(env)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        gpus_of = build(args.gpus, args.sources, stub.url())
        Prometheus(gpus_of).route(stub)
        print(f"{sum(map(len, gpus_of.values()))} GPUs in {args.sources} Prometheus sources; "
              f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f} at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
              flush=True)
        (with_ended, alone), running = cpu_handles(), []
        this, postgres = alone(), [with_ended(p.pid) for p in loadtest.postgres_roots(port)()]
        sampler = loadtest.CPUSampler({"workers": lambda: [with_ended(p.pid) for w in running for p in w.processes
                                                           if p.poll() is None],
                                       "PostgreSQL": lambda: postgres, "bench": lambda: [this]})
        results = {}
        try:
            for count in args.workers:
                logs = args.logs or Path(folder)
                logs.mkdir(parents=True, exist_ok=True)
                results[count] = result = phase(count, args, env, logs, sampler, running)
                print(describe(count, result), flush=True)
        finally:
            sampler.stop()
        first = results[args.workers[0]]["rate"]
        print(f"ratios to {args.workers[0]} worker(s): " + ", ".join(
            f"{count}: {result['rate'] / first:.2f}×" for count, result in results.items()))


if __name__ == "__main__":
    main()
