"""Telemetry at fleet scale: rollup ingest against a bare COPY, and the dashboard against its bare SQL.

    .venv/bin/python bench/telemetry.py [--gpus 10000] [--days 30] [--ingest-hours 24] [--repeat 15] [--no-jobs]

1. Builds a fleet of ``--gpus`` GPUs (8 per node, 4 sites, 8 partitions) in a throwaway PostgreSQL.
2. Ingest: ``--ingest-hours`` hours of GPU rollups written through the portal's upsert path
   (``upsert_gpu_hours``: COPY into a staging table + INSERT … ON CONFLICT), then the same rows written by a
   bare ``COPY`` into an empty copy of the table; reported as rows/s and as a ratio.
3. History: ``--days`` days of hourly rows generated in SQL (``generate_series``) a month at a time, each month into
   its own partition (created by the portal's ``ensure_partitions``), then rolled up into node hours and daily rows
   with the portal's rollup functions (timed; 1 year is extrapolated from it); the hourly tables' size on disk;
   daily rows for the rest of the year (generated in SQL), so that the 1-year view reads a full year; with
   ``--jobs`` (the default) a Slurm job history of the ``--days`` (``bench/jobhistory.py``: about 10 jobs per GPU a
   month, their per-node rows and interruptions, generated in SQL, and the allocation rollup rebuilt from them);
   then ``VACUUM ANALYZE``, as autovacuum leaves the tables of a running portal. ``--no-jobs``: the fleet without
   jobs, whose page skips the Slurm figures.
4. Dashboard: the fleet utilization page and the utilization API (``group_by`` site, partition, GPU model) for
   7 d (hourly rows), 30 d and 1 y (daily rows: the usage days), timed with Django's test client with DEBUG off
   (median of ``--repeat``, 15 by default), each in turn with the bare SQL of the figures it shows
   (``BARE_PAGE_SQL``: the series, the five groupings with their idle cost, the heatmap; ``BARE_API_SQL``), as
   ratios; the page also against the bare SQL of everything it reads but the session and the user ("+ reads":
   ``BARE_PAGE_READS`` adds its filters' choices, the telemetry sources and the active contracts); the partitions a
   7-day query reads (EXPLAIN: the others are pruned). With jobs, the page's bare SQL includes that of its Slurm
   figures (``bench/jobfigures.py``: allocated GPU-hours and multi-node GPU-hours per team and partition from the
   allocation rollup as the portal reads it, whole days from its daily rows, whole hours from its hourly rows, the
   jobs only for the rest; jobs per team and partition; queue wait p50/p95 per partition), checked equal to
   ``/api/inventory/allocations/`` first (else nothing is timed).

Ratios against figures measured in the same run compare across machines; absolute times do not.
"""

import argparse
import math
import os
import re
import statistics
import sys
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")


def timed(function, *args, repeat=1):
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args)
        timings.append(time.perf_counter() - start)
    return statistics.median(timings), result


def build_fleet(gpus):
    from inventory.models import GPU, GPUModel, Node, NodeModel, Site, Team

    gpu_model = GPUModel.objects.get(name="H100 SXM 80GB")
    node_model = NodeModel.objects.filter(gpu_slots=8).first()
    sites = Site.objects.bulk_create(
        Site(name=f"bench-site-{i}", power_capacity_kw=10000, cooling_capacity_kw=10000) for i in range(4))
    Team.objects.bulk_create([Team(name=f"team-{i}") for i in range(5)], ignore_conflicts=True)
    nodes = Node.objects.bulk_create(
        Node(hostname=f"bench-{n:05d}", site=sites[n % 4], node_model=node_model, state="in_service",
             partition=f"part-{n % 8}", owner_team_id=f"team-{n % 5}") for n in range(gpus // 8))
    GPU.objects.bulk_create(
        GPU(node=node, slot=slot, gpu_model=gpu_model, state="in_service", uuid=f"GPU-bench-{node.pk}-{slot}")
        for node in nodes for slot in range(8))
    return list(GPU.objects.values_list("pk", flat=True))


def ingest(gpu_ids, hours, start):
    from django.db import connection

    from inventory.telemetry.records import HourRecord, SeriesKey
    from inventory.telemetry.rollups import ROLLUP_FIELDS, upsert_gpu_hours

    key = SeriesKey()
    records = [(gpu, HourRecord(series=key, hour=start + timedelta(hours=h), util_mean=(gpu * 7 + h) % 100,
                                util_max=100.0, mem_used_mean_gb=40.0, power_mean_w=450.0, energy_wh=450.0,
                                samples=60))
               for h in range(hours) for gpu in gpu_ids]
    upsert_seconds, _ = timed(upsert_gpu_hours, records)
    columns = ["gpu_id", "hour", *ROLLUP_FIELDS]
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE bare_copy (LIKE inventory_gpuhourly INCLUDING ALL)")

        def bare_copy():
            with cursor.cursor.copy(f"COPY bare_copy ({', '.join(columns)}) FROM STDIN") as copy:
                for gpu, r in records:
                    copy.write_row((gpu, r.hour, *(getattr(r, f) for f in ROLLUP_FIELDS)))

        copy_seconds, _ = timed(bare_copy)
        cursor.execute("DROP TABLE bare_copy")
    return len(records), upsert_seconds, copy_seconds


def months_between(start, end):
    """[start, end) cut at the first of each month (UTC): the history is generated and rolled up a month at a time,
    each month into its own partition, so no step holds more than a month of rows."""
    from inventory.telemetry.partitions import add_months, month_start

    cuts = [start]
    while (cut := add_months(month_start(cuts[-1]), 1)) < end:
        cuts.append(cut)
    return list(zip(cuts, [*cuts[1:], end], strict=True))


def generate_month(start, end):
    """Hourly GPU rows of [start, end), generated by PostgreSQL itself into the month's partition."""
    from django.db import connection

    from inventory.models import GPUHourly
    from inventory.telemetry.partitions import ensure_partitions

    ensure_partitions(GPUHourly, [start])
    with connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO inventory_gpuhourly (gpu_id, hour, util_mean, util_max, mem_used_mean_gb, power_mean_w,
                                             energy_wh, xid_errors, samples)
            SELECT g.id, h, u, LEAST(u + 10, 100), 40 + u / 4, 150 + 5.5 * u, 150 + 5.5 * u, 0, 60
            FROM inventory_gpu g
            CROSS JOIN generate_series(%s::timestamptz, %s::timestamptz, interval '1 hour') AS h
            CROSS JOIN LATERAL (SELECT ((g.id * 37 + extract(hour from h)::int * 11) %% 100)::float AS u) v
            ON CONFLICT DO NOTHING
        """, [start, end - timedelta(hours=1)])
        return cursor.rowcount


def history(days, end):
    """``days`` days of hourly GPU rows before ``end``, rolled up into node hours and daily rows with the portal's
    rollup functions, a month at a time. Returns the rows and the seconds of each step."""
    from inventory.telemetry.rollups import rollup_days, rollup_nodes

    rows, seconds = 0, {"generate": 0.0, "nodes": 0.0, "days": 0.0}
    for start, stop in months_between(end - timedelta(days=days), end):
        took, generated = timed(generate_month, start, stop)
        rows, seconds["generate"] = rows + generated, seconds["generate"] + took
        seconds["nodes"] += timed(rollup_nodes, start, stop)[0]
        seconds["days"] += timed(rollup_days, start.date(), (stop - timedelta(hours=1)).date())[0]
        print(f"  {start:%Y-%m}: {generated:,} rows, {took:.1f} s", flush=True)
    return rows, seconds


def earlier_days(days, end):
    """Daily GPU rows for the rest of the year before the ``days`` of hourly history (the rows the daily rollup of the
    same generated hours gives: every day alike) and their usage days, so the 1-year view reads a full year."""
    from django.db import connection

    from inventory.telemetry.rollups import rollup_usage

    first, last = (end - timedelta(days=365)).date(), (end - timedelta(days=days)).date() - timedelta(days=1)
    with connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO inventory_gpudaily (gpu_id, day, util_mean, util_max, mem_used_mean_gb, power_mean_w,
                                            energy_wh, xid_errors, samples, hours)
            WITH one_day AS (
                SELECT g.id, avg(u) AS u, max(LEAST(u + 10, 100)) AS u_max FROM inventory_gpu g
                CROSS JOIN generate_series(0, 23) AS h
                CROSS JOIN LATERAL (SELECT ((g.id * 37 + h * 11) %% 100)::float AS u) v GROUP BY g.id)
            SELECT id, d, u, u_max, 40 + u / 4, 150 + 5.5 * u, 24 * (150 + 5.5 * u), 0, 24 * 60, 24
            FROM one_day CROSS JOIN generate_series(%s::date, %s::date, interval '1 day') AS d
        """, [first, last])
        rows = cursor.rowcount
    rollup_usage(first, last)
    return rows


def settle():
    """``VACUUM ANALYZE``: the tables as autovacuum leaves them in a running portal (visibility map set, statistics
    current). Without it the timings depend on whether autovacuum has reached the freshly generated rows: the 30-day
    bare SQL took 0.122 s in some runs and 0.062 s in another."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def hourly_sizes():
    """Per hourly table: rows, bytes on disk (heap, indexes: every partition's), bytes per row, and the bytes of
    one full month (the largest partition)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE inventory_gpuhourly, inventory_nodehourly")
        cursor.execute("""
            SELECT t.name, sum(c.reltuples)::bigint, sum(pg_table_size(p.relid)), sum(pg_indexes_size(p.relid)),
                   max(pg_total_relation_size(p.relid))
            FROM unnest(array['inventory_gpuhourly', 'inventory_nodehourly']) AS t(name)
            CROSS JOIN LATERAL pg_partition_tree(t.name::regclass) p JOIN pg_class c ON c.oid = p.relid
            WHERE p.isleaf GROUP BY t.name ORDER BY t.name
        """)
        return cursor.fetchall()


def pruning_plan(now):
    """EXPLAIN of a 7-day aggregate of the hourly GPU rows: the partitions it reads."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN SELECT gpu_id, count(*) FROM inventory_gpuhourly WHERE "
                       + IN_RANGE.format(time="hour") + " AND util_mean IS NOT NULL GROUP BY gpu_id",
                       {"start": now - timedelta(days=7), "end": now})
        plan = "\n".join(line for (line,) in cursor.fetchall())
    return sorted(set(re.findall(r" on (inventory_gpuhourly_\w+)", plan)))


# The bare SQL of what the dashboard and the API show, by hand, each the fastest form found, from the cheapest table
# that holds it: the usage rows (per node, GPU model and hour or day) summed, and the GPUs that reported counted with
# one index probe per GPU into its hourly or daily rows.
IN_RANGE = "{time} >= %(start)s AND {time} <= %(end)s"
USAGE = {"hourly": ("inventory_usagehourly", "inventory_gpuhourly", "hour", "sum(gpus)"),
         "daily": ("inventory_usagedaily", "inventory_gpudaily", "day", "sum(gpu_hours)")}


def bare_rows(usage, per_gpu, time, gpu_hours):
    """Per node and GPU model: where, how many GPUs, GPU-hours, utilization-hours."""
    return f"""
    SELECT u.node_id, u.gpu_model_id, n.site_id, n.partition, n.owner_team, n.hostname, coalesce(r.gpus, 0) AS gpus,
           u.gpu_hours, u.util_hours
    FROM (SELECT node_id, gpu_model_id, {gpu_hours} AS gpu_hours, sum(util_hours) AS util_hours
          FROM {usage} WHERE {IN_RANGE.format(time=time)} GROUP BY node_id, gpu_model_id) u
    LEFT JOIN (SELECT node_id, gpu_model_id, count(*) AS gpus FROM inventory_gpu g
               WHERE EXISTS (SELECT 1 FROM {per_gpu} d WHERE d.gpu_id = g.id AND d.{IN_RANGE.format(time=time)}
                             AND d.util_mean IS NOT NULL)
               GROUP BY node_id, gpu_model_id) r
        ON coalesce(r.node_id, 0) = coalesce(u.node_id, 0) AND r.gpu_model_id = u.gpu_model_id
    LEFT JOIN inventory_node n ON n.id = u.node_id"""


ROWS = {kind: bare_rows(*tables) for kind, tables in USAGE.items()}
SERIES = {kind: f"SELECT {time}, {gpu_hours}, sum(util_hours), sum(gpus) FROM {usage} WHERE "
                f"{IN_RANGE.format(time=time)} GROUP BY {time}"
          for kind, (usage, _, time, gpu_hours) in USAGE.items()}
HEATMAP = {  # the 60 least used nodes × buckets, their rows read on the (node, model, hour|day) index
    kind: f"SELECT node_id, {time}, {gpu_hours}, sum(util_hours) FROM {usage} WHERE {IN_RANGE.format(time=time)} "
          f"AND node_id = ANY(%(nodes)s) GROUP BY node_id, {time}"
    for kind, (usage, _, time, gpu_hours) in USAGE.items()}
# GPUs, GPU-hours, utilization-hours and idle cost (the bench fleet has no contract: every idle GPU-hour at the
# default cost, as the portal prices a node without one).
GROUP_FIGURES = "sum(gpus), sum(gpu_hours), sum(util_hours), sum((gpu_hours - util_hours / 100) * %(cost)s)"
BARE_API_SQL = {  # {rows}: ROWS of the range
    "site": f"SELECT s.id, s.name, {GROUP_FIGURES} FROM ({{rows}}) p LEFT JOIN inventory_site s ON s.id = p.site_id "
            "GROUP BY s.id, s.name",
    "partition": f"SELECT p.partition, {GROUP_FIGURES} FROM ({{rows}}) p GROUP BY p.partition",
    "gpu_model": f"SELECT m.id, m.name, {GROUP_FIGURES} FROM ({{rows}}) p "
                 "JOIN inventory_gpumodel m ON m.id = p.gpu_model_id GROUP BY m.id, m.name",
}
BARE_PAGE_SQL = [
    "{series}",
    # The five groupings from one pass over the range; the nodes least used first (the heatmap's rows).
    f"""WITH p AS MATERIALIZED ({{rows}})
    SELECT 'site', s.id, s.name, {GROUP_FIGURES} FROM p LEFT JOIN inventory_site s ON s.id = p.site_id
        GROUP BY s.id, s.name
    UNION ALL SELECT 'partition', NULL, partition, {GROUP_FIGURES} FROM p GROUP BY partition
    UNION ALL SELECT 'gpu_model', m.id, m.name, {GROUP_FIGURES} FROM p
        JOIN inventory_gpumodel m ON m.id = p.gpu_model_id GROUP BY m.id, m.name
    UNION ALL SELECT 'team', NULL, owner_team, {GROUP_FIGURES} FROM p GROUP BY owner_team
    UNION ALL (SELECT 'node', node_id, hostname, {GROUP_FIGURES} FROM p GROUP BY node_id, hostname
               ORDER BY sum(util_hours) / sum(gpu_hours), hostname)""",
    "{heatmap}",
]
# What else the page reads to show its figures, by hand: its filters' choices (the sites, the partitions and teams
# of the nodes, the GPU models with a GPU), the telemetry sources with whether each stored Slurm jobs (stale banners,
# the Slurm charts), and the contracts active today (which price the idle GPU-hours).
BARE_PAGE_READS = [
    """SELECT 'site', id, name FROM inventory_site
    UNION ALL SELECT DISTINCT 'partition', NULL::integer, partition FROM inventory_node WHERE partition <> ''
    UNION ALL SELECT 'gpu_model', m.id, m.name FROM inventory_gpumodel m
        WHERE EXISTS (SELECT 1 FROM inventory_gpu g WHERE g.gpu_model_id = m.id)
    UNION ALL SELECT DISTINCT 'team', NULL::integer, owner_team FROM inventory_node WHERE owner_team IS NOT NULL""",
    """SELECT s.*, EXISTS (SELECT 1 FROM inventory_slurmjob j WHERE j.source_id = s.id)
    FROM inventory_telemetrysource s""",
    """SELECT c.* FROM planning_contract c WHERE c.start <= %(today)s AND (c."end" IS NULL OR c."end" >= %(today)s)""",
]


def bare_sql(statements, span, buckets, rows=None):
    """Seconds to run ``statements`` (templates of ROWS, SERIES, HEATMAP) for the range and fetch every row;
    ``%(nodes)s`` is the first 60 nodes of the previous statement's rows; ``%(job_start)s`` and ``%(now)s`` the
    range's start and now (the Slurm figures, ``jobfigures``). ``rows``: a list that gets the last statement's rows."""
    from django.db import connection
    from django.utils import timezone

    from bench import jobfigures

    kind = "daily" if span.daily else "hourly"
    names = {"rows": ROWS[kind], "series": SERIES[kind], "heatmap": HEATMAP[kind]}
    params = jobfigures.params(span, buckets, start=buckets[0], end=buckets[-1], nodes=[],
                               today=timezone.localdate())
    with connection.cursor() as cursor:
        start = time.perf_counter()
        for sql in statements:
            cursor.execute(sql.format(**names), params)
            fetched = cursor.fetchall()
            params["nodes"] = [row[1] for row in fetched if row[0] == "node" and row[1] is not None][:60]
        seconds = time.perf_counter() - start
    if rows is not None:
        rows[:] = fetched
    return seconds


def check_bare_figures(client, range_key, span, buckets):
    """The bare SQL's groups are the API's (same GPUs, GPU-hours and idle cost in each), else its time compares the
    page with other work."""
    for group_by, sql in BARE_API_SQL.items():
        rows = []
        bare_sql([sql], span, buckets, rows)
        bare = {str(name): (int(gpus), float(gpu_hours), float(idle_cost))
                for *_, name, gpus, gpu_hours, _, idle_cost in rows}
        answer = client.get(f"/api/inventory/utilization/?range={range_key}&group_by={group_by}").json()
        shown = {str(g["name"]): (g["gpus"], g["gpu_hours"], g["idle_cost"]) for g in answer["groups"]}
        assert bare.keys() == shown.keys() and all(
            bare[key][0] == shown[key][0]
            and all(math.isclose(a, b, abs_tol=0.01) for a, b in zip(bare[key][1:], shown[key][1:], strict=True))
            for key in bare), (range_key, group_by, bare, shown)


def side_by_side(answer, *bares, repeat=15):
    """Median seconds of ``answer()`` (a test client GET, checked) and of each of ``bares``, run in turn so that
    all see the same load on a shared machine. 15 of each: with 7, two runs on the same data differed by 0.07 in a
    ratio near 1.2."""
    times = [[] for _ in range(1 + len(bares))]
    for _ in range(repeat):
        times[0].append(timed(answer)[0])
        for bare, seconds in zip(bares, times[1:], strict=True):
            seconds.append(bare())
    return [statistics.median(seconds) for seconds in times]


def dashboard(client, range_key, now, repeat=15, jobs=False):
    """Median server time of the page and of the API per group_by, each next to the bare SQL of what it shows
    (with ``jobs``, the page's Slurm figures too), and the time of the page's own queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inventory.telemetry.queries import get_range

    span = get_range(range_key)
    buckets = span.buckets(now)

    def get(url, expected=b""):
        response = client.get(url)
        assert response.status_code == 200 and expected in response.content, (url, response.status_code)

    from bench import jobfigures

    page_url = f"/inventory/utilization/?range={range_key}"
    get(page_url)
    check_bare_figures(client, range_key, span, buckets)
    page_sql = BARE_PAGE_SQL + (jobfigures.BARE_SLURM_PAGE_SQL if jobs else [])
    if jobs:  # the page's Slurm figures are the allocations API's
        jobfigures.check_allocations(client, range_key, span, buckets)
    page_seconds, figures_seconds, reads_seconds = side_by_side(
        lambda: get(page_url, b"Fleet utilization over time"), lambda: bare_sql(page_sql, span, buckets),
        lambda: bare_sql(page_sql + BARE_PAGE_READS, span, buckets), repeat=repeat)
    with CaptureQueriesContext(connection) as queries:
        get(page_url)
    query_seconds = sum(float(q["time"]) for q in queries.captured_queries)
    page = (page_seconds, query_seconds, len(queries), figures_seconds, reads_seconds)
    api = {}
    for group_by, sql in BARE_API_SQL.items():
        api_url = f"/api/inventory/utilization/?range={range_key}&group_by={group_by}"
        api[group_by] = side_by_side(lambda url=api_url: get(url), lambda sql=sql: bare_sql([sql], span, buckets),
                                     repeat=repeat)
    return page, api


@contextmanager
def bench_portal():
    """A throwaway PostgreSQL with the portal migrated (DEBUG for the settings' defaults) and a Prometheus source;
    yields the current hour (UTC), where the generated history ends."""
    from tests.helpers.pgserver import throwaway_postgres

    with throwaway_postgres() as (host, port, user):
        os.environ["DATABASE_URL"] = f"postgres://{user}@{host}:{port}/postgres"
        os.environ.setdefault("DEBUG", "1")
        import django

        django.setup()
        from django.core.management import call_command

        from inventory.models import TelemetrySource
        from inventory.telemetry.rollups import floor_hour

        call_command("migrate", verbosity=0)
        TelemetrySource.objects.create(name="bench", kind="prometheus", url="http://prometheus:9090",
                                       synced_until=datetime.now(UTC), last_success_at=datetime.now(UTC))
        yield floor_hour(datetime.now(UTC))


def admin_client():
    """A test client logged in as a superuser."""
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.create_superuser("bench", "bench@example.org", "bench"))
    return client


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--ingest-hours", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=15, help="requests (and bare runs) per median")
    parser.add_argument("--jobs", action=argparse.BooleanOptionalAction, default=True,
                        help="a Slurm job history of the --days (bench/jobhistory.py); --no-jobs: none")
    args = parser.parse_args()

    with bench_portal() as now:
        from django.test import override_settings

        gpu_ids = build_fleet(args.gpus)
        print(f"fleet: {len(gpu_ids)} GPUs in {len(gpu_ids) // 8} nodes")

        rows, upsert_s, copy_s = ingest(gpu_ids, args.ingest_hours, now - timedelta(days=args.days + 2))
        print(f"ingest: {rows} GPU-hour rows; portal upsert {upsert_s:.2f} s ({rows / upsert_s:,.0f} rows/s), "
              f"bare COPY {copy_s:.2f} s ({rows / copy_s:,.0f} rows/s); upsert / COPY = {upsert_s / copy_s:.1f}")

        history_rows, took = history(args.days, now)
        per_day = sum(took.values()) / args.days
        print(f"history: {history_rows:,} hourly rows for {args.days} days generated in {took['generate']:.1f} s; "
              f"node rollup {took['nodes']:.1f} s, daily rollup {took['days']:.1f} s; "
              f"about {per_day * 365 / 60:.0f} min for 1 year at this rate; rollups of one day "
              f"{(took['nodes'] + took['days']) / args.days:.2f} s")
        print(f"daily rows for the rest of the year: {earlier_days(args.days, now):,}")
        if args.jobs:
            from bench import jobhistory

            print(jobhistory.describe(jobhistory.generate(args.days, now)), flush=True)
        print(f"VACUUM ANALYZE: {timed(settle)[0]:.1f} s")
        for table, rows, heap, indexes, month in hourly_sizes():
            print(f"{table}: {rows:,} rows, {heap / 2**30:.2f} GiB + indexes {indexes / 2**30:.2f} GiB, "
                  f"{(heap + indexes) / max(rows, 1):.0f} B/row, largest month {month / 2**30:.2f} GiB")

        client = admin_client()
        # Timed as production serves them: with DEBUG (set above for the settings' defaults) Django keeps the SQL of
        # every query, about 0.4 ms more for the page's 8 queries than for the bare SQL's 3.
        override_settings(DEBUG=False).enable()
        # The page against the bare SQL of its figures (BARE_PAGE_SQL), and of everything it reads but the session
        # and the user (+ BARE_PAGE_READS: its filters' choices, the sources, the contracts): "+ reads".
        print(f"{'range':6} {'what':18} {'server s':>8} {'queries s':>9} {'n':>3} {'bare SQL s':>10} "
              f"{'× bare':>6} {'queries × bare':>14} {'+ reads s':>9} {'× bare + reads':>14}")
        # 1y reads daily rows: its server time must stay under a second however long the hourly history grows.
        for range_key in ("7d", "30d", "1y"):
            (page_s, query_s, count, bare_s, reads_s), api = dashboard(client, range_key, now, args.repeat, args.jobs)
            print(f"{range_key:6} {'page':18} {page_s:8.3f} {query_s:9.3f} {count:3d} {bare_s:10.3f} "
                  f"{page_s / bare_s:6.2f} {query_s / bare_s:14.2f} {reads_s:9.3f} {page_s / reads_s:14.2f}")
            for group_by, (api_s, bare_s) in api.items():
                print(f"{range_key:6} {'API ' + group_by:18} {api_s:8.3f} {'':9} {'':3} {bare_s:10.3f} "
                      f"{api_s / bare_s:6.2f}")
        print(f"7 d hourly aggregate reads the partitions {', '.join(pruning_plan(now))} (EXPLAIN: pruned)")


if __name__ == "__main__":
    main()
