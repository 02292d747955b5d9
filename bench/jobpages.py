"""Pages and APIs over a Slurm job history at fleet scale, against the bare SQL of what they show.

    .venv/bin/python bench/jobpages.py [--gpus 10000] [--days 30] [--repeat 15] [--database-url URL]

1. The fleet of ``bench/telemetry.py`` (its builders: ``build_fleet``, ``history``, ``earlier_days``) in a throwaway
   PostgreSQL, with a Slurm job history of the ``--days`` (``bench/jobhistory.py``: about 10 jobs per GPU a month,
   their per-node rows and interruptions, generated in SQL, then the allocation rollup the portal reads them from,
   ``allocation_rollup.rebuild``), then ``VACUUM ANALYZE``.
2. Timed with Django's test client, DEBUG off, median of ``--repeat`` requests, each request in turn with the bare
   SQL of what it shows (``bench/jobfigures.py``, allocated GPU-hours from the allocation rollup as the portal reads
   them; ``side_by_side``), checked first to give the answer's figures (else nothing is timed):

   - ``GET /api/inventory/goodput/?group_by=team&range=30d`` (``BARE_GOODPUT_SQL``);
   - ``GET /api/inventory/interruptions/?page_size=1000``, the API's largest page (``BARE_INTERRUPTIONS_SQL``: the
     count and the page's rows with what they name, as ``.values()`` would read them);
   - ``GET /api/inventory/allocations/?range=30d&group_by=account`` and ``group_by=partition``
     (``BARE_ALLOCATIONS_SQL``);
   - the node page (``/inventory/nodes/<pk>/``, the node with the most infrastructure interruptions): its server time
     (goal: at most 100 ms), its queries and the slowest of them;
   - ``inventory.telemetry.queries.sources_with_jobs()`` (every dashboard's "does this source have jobs" read).

``--database-url``: a database holding the fleet already (``bench/loadfleet.py URL`` builds the same fleet with its
job history), measured as it is: several runs, or versions, on the same rows.

Ratios against figures measured in the same run compare across machines; absolute times do not.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

NODE_PAGE_GOAL = 0.100  # seconds
SLOWEST = 5  # of the node page's queries, printed


def captured(client, url):
    """The queries of one request: ``(count, seconds, [(seconds, sql)] slowest first)``."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    timings = sorted(((float(q["time"]), q["sql"]) for q in queries.captured_queries), reverse=True)
    return len(timings), sum(seconds for seconds, _ in timings), timings


def getter(client, url, expected=b""):
    def get():
        response = client.get(url)
        assert response.status_code == 200 and expected in response.content, (url, response.status_code)
    return get


def worst_node():
    """The node with the most infrastructure interruptions (then the lowest id): its page shows a goodput row."""
    from django.db.models import Count

    from inventory.goodput.models import Interruption
    from inventory.models import Node

    row = (Interruption.objects.filter(cause="infrastructure", node__isnull=False).values("node")
           .annotate(n=Count("pk")).order_by("-n", "node").first())
    return Node.objects.get(pk=row["node"]) if row else Node.objects.order_by("pk").first()


def measure(client, repeat):
    """The timed figures: ``[(what, url, server s, bare s, queries, query s)]``, the node page's figures and its
    slowest queries, and ``sources_with_jobs``' seconds."""
    from bench import jobfigures
    from bench.telemetry import side_by_side, timed
    from inventory.telemetry import queries

    span = queries.get_range("30d")
    buckets = span.buckets()

    def bare(statements, **extra):
        return lambda: jobfigures.run_sql(statements, jobfigures.params(span, buckets, **extra))

    checked = {"goodput teams": jobfigures.check_goodput(client, "30d", span, buckets),
               "interruptions": jobfigures.check_interruptions(client),
               "allocation groups": jobfigures.check_allocations(client, "30d", span, buckets)}
    timings = []
    for what, url, statements in (
            ("API goodput, team, 30 d", "/api/inventory/goodput/?group_by=team&range=30d",
             jobfigures.BARE_GOODPUT_SQL),
            (f"API interruptions, {jobfigures.PAGE_SIZE:,} rows",
             f"/api/inventory/interruptions/?page_size={jobfigures.PAGE_SIZE}", jobfigures.BARE_INTERRUPTIONS_SQL),
            *((f"API allocations, {group_by}, 30 d", f"/api/inventory/allocations/?range=30d&group_by={group_by}",
               statements) for group_by, statements in jobfigures.BARE_ALLOCATIONS_SQL.items())):
        getter(client, url)()  # warm
        server, bare_seconds = side_by_side(getter(client, url), bare(statements), repeat=repeat)
        count, query_seconds, _ = captured(client, url)
        timings.append((what, url, server, bare_seconds, count, query_seconds))
    node = worst_node()
    node_url = f"/inventory/nodes/{node.pk}/"
    get_node = getter(client, node_url, b'id="goodput"')
    get_node()
    node_seconds = statistics.median(timed(get_node)[0] for _ in range(repeat))
    count, query_seconds, slowest = captured(client, node_url)
    sources_seconds, sources = timed(queries.sources_with_jobs, repeat=repeat)
    return {"checked": checked, "timings": timings, "node": (node, node_url, node_seconds, count, query_seconds),
            "slowest": slowest[:SLOWEST], "sources": (sources_seconds, sources)}


def report(figures):
    print("checked equal to the API's answers: " + ", ".join(f"{n:,} {what}" for what, n in figures["checked"].items()))
    print(f"{'what':34} {'server s':>8} {'bare SQL s':>10} {'× bare':>6} {'queries':>7} {'queries s':>9}")
    for what, _, server, bare_seconds, count, query_seconds in figures["timings"]:
        print(f"{what:34} {server:8.3f} {bare_seconds:10.3f} {server / bare_seconds:6.2f} {count:7d} "
              f"{query_seconds:9.3f}")
    node, url, seconds, count, query_seconds = figures["node"]
    goal = "within" if seconds <= NODE_PAGE_GOAL else "over"
    print(f"{'node page ' + node.hostname:34} {seconds:8.3f} {'':10} {'':6} {count:7d} {query_seconds:9.3f}"
          f"   ({goal} the {NODE_PAGE_GOAL * 1000:.0f} ms goal; {url})")
    sources_seconds, sources = figures["sources"]
    print(f"{'sources_with_jobs()':34} {sources_seconds:8.4f} {'':10} {'':6} {1:7d}   "
          + ", ".join(f"{s.name}: {'jobs' if s.has_jobs else 'no jobs'}" for s in sources))
    print(f"node page, slowest {len(figures['slowest'])} of its {count} queries:")
    for seconds, sql in figures["slowest"]:
        print(f"  {seconds * 1000:7.1f} ms  {' '.join(sql.split())[:200]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=15, help="requests (and bare runs) per median")
    parser.add_argument("--database-url", help="a PostgreSQL database holding the fleet (bench/loadfleet.py URL)")
    args = parser.parse_args()
    if args.database_url:
        measure_built(args.database_url, args.repeat)
        return

    from bench.telemetry import admin_client, bench_portal

    with bench_portal() as now:
        from django.test import override_settings

        from bench import jobhistory
        from bench.telemetry import build_fleet, earlier_days, history, settle, timed

        started = time.perf_counter()
        gpu_ids = build_fleet(args.gpus)
        print(f"fleet: {len(gpu_ids)} GPUs in {len(gpu_ids) // 8} nodes", flush=True)
        rows, _ = history(args.days, now)
        print(f"history: {rows:,} hourly rows; daily rows for the rest of the year: {earlier_days(args.days, now):,}")
        print(jobhistory.describe(jobhistory.generate(args.days, now)), flush=True)
        print(f"VACUUM ANALYZE: {timed(settle)[0]:.1f} s; built in {time.perf_counter() - started:.0f} s", flush=True)

        client = admin_client()
        override_settings(DEBUG=False).enable()  # timed as production serves them
        report(measure(client, args.repeat))


def measure_built(url, repeat):
    """Measure the fleet already in the database at ``url``, logged in as its superuser "bench"."""
    os.environ.update(DATABASE_URL=url, DEBUG="1")  # the settings' defaults, as bench_portal; served with DEBUG off
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client, override_settings

    user, _ = User.objects.get_or_create(username="bench", defaults={"is_superuser": True, "is_staff": True})
    client = Client()
    client.force_login(user)
    override_settings(DEBUG=False).enable()
    report(measure(client, repeat))


if __name__ == "__main__":
    main()
