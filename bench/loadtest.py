"""Loopback load test: the portal as in production (gunicorn, PostgreSQL, Celery worker and beat pulling
telemetry) under 1 and then N concurrent users (locust, headless, bounded in time).

    .venv/bin/python bench/loadtest.py [--users 50] [--duration 60] [--workers 4] [--fleet bench --gpus 10000]

1. Starts a throwaway PostgreSQL (``tests/pgserver.py``), migrates, collects static files and runs
   ``seed_demo`` (two sites, 7 days of telemetry, contracts, plans, tickets); issues API tokens. With ``--fleet
   bench``, instead of the demo: ``bench/loadfleet.py``'s fleet of ``--gpus`` GPUs with ``--days`` of hourly
   telemetry, a year of daily rows and a Slurm job history (no contracts, plans or tickets; no source is pulled);
   ``--database-url``: a database holding the fleet already (``bench/loadfleet.py URL`` builds one), no server.
2. Starts the telemetry simulator, a Celery worker and Celery beat (the embedded filesystem broker), with
   beat polling every ``--poll`` seconds and the demo sources pulled every ``--pull-interval`` seconds, so
   pulls run (and write rollups) while the users browse.
3. Starts gunicorn with ``DEBUG=0`` (secure cookies, HSTS, HTTPS redirect, manifest static files); the users
   send ``X-Forwarded-Proto: https`` as the TLS proxy in front of it would (``SECURE_PROXY_SSL_HEADER=1``).
4. Runs ``bench/locustfile.py`` headless: 1 user (the baseline), then ``--users`` users, each for
   ``--duration`` seconds; prints requests, failures, requests/s and p50/p95/p99 per run and per request
   kind, the ratios N users / 1 user, the telemetry pulls that ran in each window (counted in the database),
   and any server errors from the gunicorn and Celery logs.
5. Stops everything and removes the temporary folder, also on Ctrl-C or an error.

Exit status: 0 when both runs had no failed request, no server error was logged and pulls ran (on the demo fleet);
else 1.
The logs and locust's CSV files stay in ``--keep`` (default: none) for a closer look.
"""

import argparse
import csv
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
BIN = Path(sys.executable).parent
PYTHON = sys.executable


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50, help="Concurrent users of the main run (default 50).")
    parser.add_argument("--duration", type=int, default=60, help="Seconds each run lasts (default 60).")
    parser.add_argument("--warmup", type=int, default=60,
                        help="At most this many seconds before each measured window, while the users log in "
                             "(default 60; it ends 3 s after the last log-in).")
    parser.add_argument("--spawn-rate", type=float, default=10, help="Users started per second (default 10).")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes (default 4).")
    parser.add_argument("--threads", type=int, default=1, help="Threads per gunicorn worker (default 1).")
    parser.add_argument("--poll", type=int, default=5, help="Seconds between beat's telemetry polls (default 5).")
    parser.add_argument("--pull-interval", type=int, default=15,
                        help="Seconds between pulls of each demo telemetry source (default 15).")
    parser.add_argument("--fleet", choices=["demo", "bench"], default="demo",
                        help="demo: seed_demo (default); bench: bench/loadfleet.py's fleet with a job history.")
    parser.add_argument("--gpus", type=int, default=10000, help="GPUs of the bench fleet (default 10000).")
    parser.add_argument("--days", type=int, default=30, help="Days of hourly history of the bench fleet (default 30).")
    parser.add_argument("--database-url", help="A PostgreSQL database holding the --fleet (bench/loadfleet.py builds "
                                               "one): no server started, nothing seeded (tokens, sessions added).")
    parser.add_argument("--keep", type=Path, help="Copy the logs and locust CSV files into this folder.")
    return parser.parse_args()


class Processes:
    """The background processes of the test; ``stop()`` ends them all (TERM, then KILL after a grace time)."""

    def __init__(self, folder):
        self.folder = folder
        self.running = []

    def start(self, name, args, env):
        log = open(self.folder / f"{name}.log", "w")
        # A process group of its own: Ctrl-C in the terminal reaches only us, and we stop the children in order.
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.running.append((name, process, log))
        return process

    def roots(self, *names):
        """psutil handles of the named processes (for the CPU sampler)."""
        import psutil

        def handles():
            found = []
            for name, process, _ in self.running:
                if name in names and process.poll() is None:
                    try:
                        found.append(psutil.Process(process.pid))
                    except psutil.Error:
                        pass
            return found

        return handles

    def check_alive(self):
        for name, process, _ in self.running:
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with status {process.returncode}; see its log:\n"
                                   + tail(self.folder / f"{name}.log"))

    def stop(self):
        for _, process, _ in reversed(self.running):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _, process, log in reversed(self.running):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            log.close()
        self.running = []


def tail(path, lines=30):
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def run_command(args, env, what):
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode:
        output = result.stdout[-3000:] + result.stderr[-3000:]
        raise RuntimeError(f"{what} failed (status {result.returncode}):\n{output}")
    return result.stdout


def wait_for_http(url, processes, headers=None, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        processes.check_alive()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5):
                return
        except urllib.error.HTTPError:
            return  # it answers: good enough to know it is up
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


class CPUSampler:
    """CPU seconds used by each part of the test, sampled every second in a thread, and by the whole machine,
    so a report can say whether the portal, the load generator or someone else's work used the cores."""

    def __init__(self, groups):
        import psutil

        self.psutil, self.groups, self.samples = psutil, groups, []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name="cpu-sampler", daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopped.is_set():
            self.samples.append((time.time(), self.sample()))
            self.stopped.wait(1)

    def sample(self):
        used = {}
        for name, roots in self.groups.items():
            used[name] = 0.0
            for root in roots():
                try:
                    for process in [root, *root.children(recursive=True)]:
                        # With its ended children's: PostgreSQL's parallel workers live for one query.
                        times = process.cpu_times()
                        used[name] += times.user + times.system + times.children_user + times.children_system
                except self.psutil.Error:  # ended between listing and reading: its last seconds are lost
                    pass
        machine = self.psutil.cpu_times()
        used["machine"] = machine.user + machine.nice + machine.system + machine.irq + machine.softirq + getattr(
            machine, "steal", 0)
        return used

    def cores(self, start, end):
        """Mean cores used per group between two times (epoch seconds), from the nearest samples."""
        inside = [(t, used) for t, used in self.samples if start <= t <= end]
        if len(inside) < 2:
            return None
        (t0, first), (t1, last) = inside[0], inside[-1]
        cores = {name: max(0.0, last[name] - first.get(name, 0.0)) / (t1 - t0) for name in last}
        cores["other"] = max(0.0, cores["machine"] - sum(v for k, v in cores.items() if k != "machine"))
        return cores

    def stop(self):
        self.stopped.set()
        self.thread.join()


def postgres_roots(port):
    """The throwaway server's postmaster (started with ``-p PORT``): its children are the backends."""
    import psutil

    def handles():
        for process in psutil.process_iter(["name", "cmdline"]):
            cmdline = process.info["cmdline"] or []
            if process.info["name"] == "postgres" and "-p" in cmdline and str(port) in cmdline:
                return [process]
        return []

    return handles


def locust_roots():
    import psutil

    def handles():
        try:
            return [p for p in psutil.Process().children() if "locust" in " ".join(p.cmdline())]
        except psutil.Error:
            return []

    return handles


def prepare(simulator_url, pull_interval, data_file, optional=()):
    """After seeding: point the demo sources at our simulator and pull them often; issue API tokens; write
    the ids and filter values the locust users pick from (each needs one at least, but those ``optional``)."""
    from django.contrib.auth.models import User

    from inventory.models import GPU, Node, Site
    from inventory.telemetry.models import TelemetrySource
    from planning.models import CapacityPlan, Contract
    from portal.models import APIToken
    from support.models import Ticket

    for source in TelemetrySource.objects.filter(url__startswith="http://127.0.0.1:9400"):
        # seed_demo names port 9400 (make demo's simulator); ours runs on a free port.
        TelemetrySource.objects.filter(pk=source.pk).update(
            url=source.url.replace("http://127.0.0.1:9400", simulator_url), interval_seconds=pull_interval,
            next_attempt_at=None)
    tokens = [APIToken.issue(User.objects.get(username=name), "load test")[1] for name in ("manager", "viewer")]
    nodes = Node.objects.all()
    data = {
        "tokens": tokens,
        "sites": list(Site.objects.values_list("pk", flat=True)),
        "nodes": list(nodes.values_list("pk", flat=True)),
        "gpus": list(GPU.objects.values_list("pk", flat=True)),
        "gpu_models": list(GPU.objects.values_list("gpu_model_id", flat=True).distinct()),
        "gpu_pages": max(1, -(-GPU.objects.count() // 50)),
        "partitions": sorted(set(nodes.exclude(partition="").values_list("partition", flat=True))),
        "teams": sorted(set(nodes.exclude(owner_team=None).values_list("owner_team", flat=True))),
        "hostname_prefixes": sorted({name.rsplit("-", 1)[0] for name in nodes.values_list("hostname", flat=True)}),
        "contracts": list(Contract.objects.values_list("pk", flat=True)),
        "plans": list(CapacityPlan.objects.values_list("pk", flat=True)),
        "tickets": list(Ticket.objects.values_list("pk", flat=True)),
    }
    empty = [key for key, value in data.items() if not value and key not in optional]
    if empty:
        raise RuntimeError(f"the seeded fleet left nothing to browse for: {', '.join(empty)}")
    data_file.write_text(json.dumps(data))
    return data


def count_pulls(start, end):
    """Pulls that ran in [start, end), from the database: each exporter scrape writes one sample row per GPU
    with the scrape's time; a Slurm pull's success moves its source's ``last_success_at``."""
    from django.db.models import Count

    from inventory.telemetry.models import TelemetrySample, TelemetrySource

    samples = TelemetrySample.objects.filter(ts__gte=start, ts__lt=end)
    scrapes = samples.values("source", "ts").distinct().count()
    return {"scrapes": scrapes, "sample rows": samples.count(),
            "sources pulled": TelemetrySource.objects.filter(last_success_at__gte=start).aggregate(n=Count("pk"))["n"]}


def query_counts(data, repeat=3):
    """SQL queries of one request of each kind (as the manager, in this process: a count that grows with the rows
    on the page is an N+1, which load makes expensive) and its server time (median of ``repeat``, after one
    request that warms this process): what a request costs without the queueing that load adds."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    proxy = {"HTTP_HOST": "127.0.0.1", "HTTP_X_FORWARDED_PROTO": "https"}
    # A page that fails is reported with its status (and its traceback is in the output), not raised.
    browser = Client(raise_request_exception=False, **proxy)
    api = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {data['tokens'][0]}", **proxy)
    browser.force_login(User.objects.get(username="manager"))
    node, gpu, site = data["nodes"][0], data["gpus"][0], data["sites"][0]
    ids = {key: data[key][0] for key in ("contracts", "plans", "tickets") if data[key]}
    pages = [(browser, url) for url in (
        "/", "/inventory/utilization/?range=7d", "/inventory/utilization/?range=1y",
        "/inventory/nodes/?sort=hostname", f"/inventory/nodes/?site={site}", "/inventory/gpus/?sort=gpu",
        f"/inventory/nodes/{node}/", f"/inventory/gpus/{gpu}/", f"/search/?q={data['hostname_prefixes'][0]}",
        "/planning/contracts/", "/planning/contracts/{contracts}/", "/planning/capacity-plans/",
        "/planning/capacity-plans/{plans}/", "/planning/uncovered/", "/support/tickets/", "/support/tickets/{tickets}/",
    )] + [(api, url) for url in (
        "/api/inventory/nodes/", f"/api/inventory/nodes/{node}/", "/api/inventory/gpus/?page_size=200",
        f"/api/inventory/gpus/{gpu}/", "/api/inventory/utilization/?group_by=node&range=7d",
        "/api/inventory/allocations/?group_by=partition&range=30d", "/api/inventory/slurm-jobs/",
        "/api/inventory/telemetry-sources/", "/api/planning/contracts/", "/api/planning/contracts/{contracts}/",
        "/api/planning/plans/", "/api/planning/plans/{plans}/", "/api/support/tickets/",
        "/api/support/tickets/{tickets}/",
    )]
    counts = []
    for client, url in pages:
        try:
            url = url.format(**ids)
        except KeyError:  # the fleet has none of these objects (the bench fleet: no contracts, plans, tickets)
            continue
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            status = client.get(url).status_code
        count = len(queries)  # now: the next request clears the captured log
        seconds = []
        for _ in range(repeat):  # not captured: capturing costs time per query
            started = time.perf_counter()
            client.get(url)
            seconds.append(time.perf_counter() - started)
        counts.append((url, status, count, statistics.median(seconds)))
    return counts


def run_locust(users, spawn_rate, warmup, duration, host, env, folder, label):
    """One headless locust run: the locustfile resets the figures once every user has logged in (at most
    ``warmup`` seconds), then stops ``duration`` seconds later; the CSV holds the measured window only."""
    prefix = folder / f"locust-{label}"
    args = [str(BIN / "locust"), "-f", str(ROOT / "bench" / "locustfile.py"), "--headless", "--host", host,
            "-u", str(users), "-r", str(spawn_rate), "-t", f"{warmup + duration + 10}s", "--stop-timeout", "10",
            "--csv", str(prefix), "--only-summary", "--loglevel", "WARNING"]
    with open(folder / f"locust-{label}.log", "w") as log:
        # locust's own exit status is 1 when a request failed; the CSV says which, so it is read below.
        subprocess.run(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                       timeout=warmup + duration + 60)
    with open(f"{prefix}_stats.csv") as handle:
        rows = list(csv.DictReader(handle))
    warmup_file = Path(env["LOADTEST_WARMUP_REPORT"])
    warmup_figures = json.loads(warmup_file.read_text()) if warmup_file.exists() else None
    failures = []
    if Path(f"{prefix}_failures.csv").exists():
        with open(f"{prefix}_failures.csv") as handle:
            failures = list(csv.DictReader(handle))
    return rows, failures, warmup_figures


def figures(row):
    """A locust CSV row in numbers; a kind with no request in the window has no percentiles (N/A)."""

    def number(key):
        return float(row[key]) if row[key] not in ("", "N/A") else float("nan")

    return {
        "requests": int(row["Request Count"]), "failures": int(row["Failure Count"]), "rps": number("Requests/s"),
        "p50": number("50%"), "p95": number("95%"), "p99": number("99%"),
    }


ERROR_MARKS = ("Traceback", "ERROR", "CRITICAL", "WORKER TIMEOUT", "Internal Server Error")


def server_errors(folder):
    """Lines of the gunicorn and Celery logs that tell of an error: tracebacks, 5xx, timeouts, killed workers."""
    found = []
    for name in ("gunicorn", "celery-worker", "celery-beat"):
        for line in (folder / f"{name}.log").read_text(errors="replace").splitlines():
            if any(mark in line for mark in ERROR_MARKS):
                found.append(f"{name}: {line.strip()}")
    return found


def report(results, pulls, errors, args):
    base, load = results["1"], results[str(args.users)]
    print(f"\n== Totals ({args.duration} s each; gunicorn {args.workers} workers x {args.threads} threads) ==")
    print(f"{'run':>10} {'requests':>9} {'failures':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
          f" {'scrapes':>8} {'sample rows':>12}")
    for label, result in (("1 user", base), (f"{args.users} users", load)):
        total = figures(result["rows"]["Aggregated"])
        pull = pulls[label]
        print(f"{label:>10} {total['requests']:>9} {total['failures']:>9} {total['rps']:>8.1f} {total['p50']:>8.0f}"
              f" {total['p95']:>8.0f} {total['p99']:>8.0f} {pull['scrapes']:>8} {pull['sample rows']:>12}")
    b, n = figures(base["rows"]["Aggregated"]), figures(load["rows"]["Aggregated"])
    ratio = {key: n[key] / max(b[key], 1e-9) for key in ("requests", "rps", "p50", "p95", "p99")}
    print(f"{'ratio':>10} {ratio['requests']:>9.1f} {'':>9} {ratio['rps']:>8.1f} {ratio['p50']:>8.1f}"
          f" {ratio['p95']:>8.1f} {ratio['p99']:>8.1f}   ({args.users} users / 1 user)")

    print(f"\n== Per request kind, {args.users} users (1 user's p50 for comparison) ==")
    print(f"{'request':58} {'n':>6} {'fail':>5} {'p50':>6} {'p95':>6} {'p99':>6} {'1u p50':>7}")
    kinds = [(name, row) for name, row in load["rows"].items() if name != "Aggregated" and int(row["Request Count"])]
    for name, row in sorted(kinds, key=lambda item: -figures(item[1])["p95"]):
        f = figures(row)
        one = base["rows"].get(name)
        one_p50 = f"{figures(one)['p50']:>7.0f}" if one and int(one["Request Count"]) else f"{'-':>7}"
        print(f"{row['Type'] + ' ' + name:58.58} {f['requests']:>6} {f['failures']:>5} {f['p50']:>6.0f}"
              f" {f['p95']:>6.0f} {f['p99']:>6.0f} {one_p50}")

    for label, result in (("1 user", base), (f"{args.users} users", load)):
        warmup = result["warmup"]
        if warmup:
            print(f"warm-up, {label}: {warmup['seconds']:.0f} s, {warmup['users_started']} users started, "
                  f"{warmup['requests']} requests, {warmup['failures']} failures, {warmup['logins']} log-ins "
                  f"(p50 {warmup['login_p50']:.0f} ms)")
            for error in warmup["errors"]:
                print(f"FAILED in the warm-up ({label}): {error['method']} {error['name']}: {error['error']}"
                      f" x{error['occurrences']}")
        for failure in result["failures"]:
            print(f"FAILED ({label}): {failure['Method']} {failure['Name']}: {failure['Error']}"
                  f" x{failure['Occurrences']}")
    for line in errors[:20]:
        print(f"SERVER ERROR: {line}")
    if len(errors) > 20:
        print(f"... and {len(errors) - 20} more server error lines")


def main():
    args = parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cluster-portal-load-"))
    from tests.helpers.pgserver import throwaway_postgres

    signal.signal(signal.SIGTERM, interrupted)
    try:
        with ExitStack() as stack:
            url = args.database_url
            if not url:
                host, port, user = stack.enter_context(throwaway_postgres())
                url = f"postgres://{user}@{host}:{port}/postgres"
            processes = Processes(folder)
            try:
                return measure(args, folder, processes, url, urlsplit(url).port or 5432)
            finally:
                # Before PostgreSQL stops: the workers and gunicorn hold connections to it.
                processes.stop()
                close_connections()
    except KeyboardInterrupt:
        print("\ninterrupted: stopped everything", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True, ignore=shutil.ignore_patterns("var", "static"))
            print(f"logs and CSV files: {args.keep}")
        shutil.rmtree(folder, ignore_errors=True)


def close_connections():
    from django.apps import apps

    if apps.ready:  # after django.setup() only
        from django.db import connections

        connections.close_all()


def measure(args, folder, processes, database_url, database_port):
    from tests.helpers.pgserver import free_port

    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        API_RATE_LIMIT="",  # the load test measures the portal, not its rate limit (many users share accounts)
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_PROXY_SSL_HEADER="1",  # the users send X-Forwarded-Proto: https, as the TLS proxy would
        PORTAL_VAR_DIR=str(folder / "var"),
        STATIC_ROOT=str(folder / "static"),
        TELEMETRY_POLL_SECONDS=str(args.poll),
        OUTBOUND_ALLOWED_NETWORKS="127.0.0.1/32",  # the simulator on loopback
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    env.pop("CELERY_BROKER_URL", None)  # the embedded filesystem broker, under our var folder
    os.environ.update(env)  # this process reads the same database (prepare, count_pulls)
    import django

    django.setup()
    from django.utils import timezone

    seed = ("the fleet in --database-url" if args.database_url else "seed_demo" if args.fleet == "demo"
            else f"the bench fleet ({args.gpus:,} GPUs, {args.days} days)")
    step(f"migrate, collectstatic, {seed}")
    manage = [PYTHON, "manage.py"]
    # collectstatic (hashing and compressing every file, plotly.js included) takes long and needs no
    # database: it runs alongside migrate and the seeding.
    collectstatic = subprocess.Popen(manage + ["collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        run_command(manage + ["migrate", "--noinput", "-v", "0"], env, "migrate")
        if args.database_url:
            pass  # the fleet is there
        elif args.fleet == "demo":
            run_command(manage + ["seed_demo"], env, "seed_demo")
        else:
            from bench import loadfleet

            loadfleet.build(args.gpus, args.days, report=lambda line: print(f"   {line}", flush=True))
            close_connections()
        output, _ = collectstatic.communicate()
    finally:
        if collectstatic.poll() is None:
            collectstatic.kill()
            collectstatic.wait()
    if collectstatic.returncode:
        raise RuntimeError(f"collectstatic failed (status {collectstatic.returncode}):\n{output[-3000:]}")
    simulator_port, web_port = free_port(), free_port()
    data = prepare(f"http://127.0.0.1:{simulator_port}", args.pull_interval, folder / "data.json",
                   optional=() if args.fleet == "demo" else ("contracts", "plans", "tickets"))
    close_connections()
    print(f"   {len(data['nodes'])} nodes, {len(data['gpus'])} GPUs, {len(data['tickets'])} tickets, "
          f"{len(data['contracts'])} contracts, {len(data['plans'])} plans", flush=True)

    step(f"simulator, Celery worker and beat, gunicorn ({args.workers} workers x {args.threads} threads)")
    processes.start("simulator", manage + ["simulate_telemetry", "--port", str(simulator_port)], env)
    processes.start("celery-worker", [str(BIN / "celery"), "-A", "portal", "worker", "--loglevel=INFO",
                                      "--concurrency=2", "--without-gossip", "--without-mingle"], env)
    processes.start("celery-beat", [str(BIN / "celery"), "-A", "portal", "beat", "--loglevel=INFO"], env)
    processes.start("gunicorn", [str(BIN / "gunicorn"), "portal.wsgi", "--workers", str(args.workers),
                                 "--threads", str(args.threads), "--bind", f"127.0.0.1:{web_port}",
                                 "--timeout", "60", "--log-level", "warning"], env)
    base_url = f"http://127.0.0.1:{web_port}"
    wait_for_http(f"http://127.0.0.1:{simulator_port}/", processes)
    wait_for_http(base_url + "/accounts/login/", processes, headers={"X-Forwarded-Proto": "https"})

    locust_env = dict(env, LOADTEST_DATA=str(folder / "data.json"), LOADTEST_WARMUP=str(args.warmup),
                      LOADTEST_DURATION=str(args.duration))
    results, pulls, cpu = {}, {}, {}
    sampler = CPUSampler({
        "gunicorn": processes.roots("gunicorn"), "PostgreSQL": postgres_roots(database_port),
        "Celery": processes.roots("celery-worker", "celery-beat"), "simulator": processes.roots("simulator"),
        "locust": locust_roots(),
    })
    for users in (1, args.users):
        label = "1 user" if users == 1 else f"{users} users"
        step(f"locust: {label}, warm-up (log-ins, at most {args.warmup} s), then {args.duration} s measured")
        started, started_epoch = timezone.now(), time.time()
        run_env = dict(locust_env, LOADTEST_WARMUP_REPORT=str(folder / f"warmup-{users}.json"))
        rows, failures, warmup = run_locust(users, min(args.spawn_rate, users), args.warmup, args.duration,
                                            base_url, run_env, folder, str(users))
        end = timezone.now()
        processes.check_alive()
        results[str(users)] = {"rows": {row["Name"]: row for row in rows}, "failures": failures, "warmup": warmup}
        # The measured window began when the warm-up ended.
        warmed = warmup["seconds"] if warmup else 0
        pulls[label] = count_pulls(started + timedelta(seconds=warmed), end)
        cpu[label] = sampler.cores(started_epoch + warmed, time.time())
        close_connections()
    sampler.stop()
    step("SQL queries per request kind")
    counts = query_counts(data)
    close_connections()
    errors = server_errors(folder)
    report(results, pulls, errors, args)
    print(f"\n== CPU in the measured window, in cores (this machine has {os.cpu_count()}) ==")
    names = ["gunicorn", "PostgreSQL", "Celery", "simulator", "locust", "other"]
    print(f"{'run':>10} " + " ".join(f"{name:>10}" for name in names) + f" {'machine':>10}")
    for label, cores in cpu.items():
        if cores:
            print(f"{label:>10} " + " ".join(f"{cores[name]:>10.2f}" for name in names) + f" {cores['machine']:>10.2f}")
    print("('other': everything else on the machine; near the core count, the figures measure a full machine)")
    print("\n== One request of each kind (as the manager / with the manager's token), no other load ==")
    print(f"{'queries':>7} {'server ms':>9}  URL")
    for url, status, queries, seconds in counts:
        print(f"{queries:>7} {seconds * 1000:>9.0f}  {url}" + ("" if status == 200 else f"   HTTP {status}"))
    failed = sum(figures(result["rows"]["Aggregated"])["failures"] + (result["warmup"] or {}).get("failures", 0)
                 for result in results.values())
    # The bench fleet's sources are disabled (bench/loadfleet.py): nothing to pull there.
    no_pulls = [label for label, pull in pulls.items() if not pull["scrapes"]] if args.fleet == "demo" else []
    if no_pulls:
        print(f"NO TELEMETRY PULL ran during: {', '.join(no_pulls)}")
    return 1 if failed or errors or no_pulls else 0


def interrupted(signum, frame):
    """SIGTERM (a CI timeout, ``kill``) tears everything down as Ctrl-C does."""
    raise KeyboardInterrupt


STARTED = time.monotonic()


def step(message):
    print(f"-- [{time.monotonic() - STARTED:5.0f} s] {message}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
