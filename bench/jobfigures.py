"""The bare SQL of the Slurm figures the portal shows, and the checks that it computes what the API answers.

Used by ``bench/telemetry.py`` (the utilization page's Slurm figures: allocations per team and partition, the
multi-node share, queue waits) and ``bench/jobpages.py`` (the allocations, goodput and interruptions APIs). Each
statement is the fastest form found of the figures as ``inventory.telemetry.queries``, ``jobstats``, ``allocation``,
``allocation_rollup`` and ``inventory.goodput.queries`` define them, read from the cheapest table that holds each:

- allocated GPU-hours of a group in [start, now] (``allocation.clipped_gpu_time``: its jobs' GPUs × the part of
  their run inside the window, a run still going counting until ``running_until``, less the excess of overbooked
  nodes, at least 0) from the rollup kept at pull time, cut as ``allocation_rollup.Reader`` cuts the range (``cuts``,
  written out here): the local days wholly inside it from ``AllocationDaily``, the other whole UTC hours from
  ``AllocationHourly``, and from the jobs only [start, first whole hour), the hour still open [last whole hour, now]
  and, in the whole hours, the runs the rollup does not hold (no end, never seen running), less their excess
  (``AllocationExcess``). The portal sums the jobs' per-node rows (``SlurmJobNode``) there; their GPUs are the job's
  spread over its hosts, so the bare SQL sums the jobs themselves. A group is one the rollup rows or those jobs name;
  each (team, partition) is floored at 0, as the Reader floors its groups;
- jobs: those whose run overlaps the window (``allocation.in_window``; the rollup does not count jobs); multi-node:
  on more than one node;
- queue wait p50/p95 per partition: ``percentile_cont`` of max(start − submit, 0) of the jobs started since the
  range's start (``jobstats.queue_wait_percentiles``), in the same statement as the allocations;
- goodput per team (``goodput.queries.goodput_by``): the allocation above (floored per team), the queue-wait share
  of the jobs started in the window, the interruptions that ended in it by cause, the infrastructure's lost work
  inside the window (``LOST_IN_RANGE``) and restart wait, priced at ``IDLE_GPU_HOUR_COST`` (the bench fleet has no
  contract, so every node is priced at the default, as the portal prices a node without one), the ratios of
  ``figures`` and its losses by cause (GPU faults, node faults, the scheduler's and the user's interruptions since
  their last checkpoint, ``SINCE_CHECKPOINT_IN_RANGE``, and GPUs × queue wait).

``%(job_start)s`` is the range's start (``Range.start``), ``%(now)s`` the moment of the request, ``%(cut_first)s``
… ``%(day_after)s`` where the rollup's rows begin and end (``cuts``). No statement holds a brace: ``bench/telemetry.py``
formats them.
"""

import math
import time
from datetime import UTC, timedelta

from django.conf import settings


def may_end_after(moment):
    """A job whose run may last past ``moment`` (``allocation.overlaps``)."""
    return f"(end_time > {moment} OR (end_time IS NULL AND (running_until IS NULL OR running_until > {moment})))"


def part(begin, end, start="start_time", finish="finish"):
    """The part of [start, finish) inside [begin, end), at least 0 (an interval)."""
    return f"greatest(least({finish}, {end}) - greatest({start}, {begin}), interval '0')"


UNSETTLED = "end_time IS NULL AND running_until IS NULL"  # the runs the rollup does not hold
IN_WINDOW = f"gpus > 0 AND start_time < %(now)s AND {may_end_after('%(job_start)s')}"
# h: allocated GPU-hours per team, partition and multi-node, in rows to sum: the rollup's whole days and hours, and
# the jobs of the open parts (o: every run before the first whole hour or in the hour still open, and the unsettled
# runs of the whole hours), less the excess of their nodes there. The parts are cut in ``params``: an empty one
# (``%(job_start)s < %(cut_first)s`` false) is folded away by the planner.
ALLOCATED = f"""WITH o AS MATERIALIZED (
        SELECT id, account, partition, node_count > 1 AS multi, gpus, start_time, {UNSETTLED} AS unsettled,
               least(coalesce(end_time, running_until, %(now)s), %(now)s) AS finish
        FROM inventory_slurmjob
        WHERE gpus > 0 AND (
            (%(job_start)s < %(cut_first)s AND start_time < %(cut_first)s AND {may_end_after('%(job_start)s')})
            OR (%(cut_last)s < %(now)s AND start_time < %(now)s AND {may_end_after('%(cut_last)s')})
            OR (%(cut_first)s < %(cut_last)s AND {UNSETTLED} AND start_time < %(cut_last)s))),
    h AS (
        SELECT account, partition, multi_node AS multi, sum(gpu_hours) AS hours FROM inventory_allocationdaily
        WHERE day >= %(day_first)s AND day < %(day_after)s GROUP BY account, partition, multi_node
        UNION ALL
        SELECT account, partition, multi_node, sum(gpu_hours) FROM inventory_allocationhourly
        WHERE (hour >= %(cut_first)s AND hour < %(days_from)s) OR (hour >= %(days_to)s AND hour < %(cut_last)s)
        GROUP BY account, partition, multi_node
        UNION ALL
        SELECT account, partition, multi,
               gpus * extract(epoch FROM {part('%(job_start)s', '%(cut_first)s')} + {part('%(cut_last)s', '%(now)s')}
                                         + CASE WHEN unsettled THEN {part('%(cut_first)s', '%(cut_last)s')}
                                                ELSE interval '0' END) / 3600
        FROM o
        UNION ALL
        SELECT o.account, o.partition, o.multi, -e.gpus * extract(epoch FROM
                   {part('%(job_start)s', '%(cut_first)s', 'e.start', 'e."end"')}
                   + {part('%(cut_last)s', '%(now)s', 'e.start', 'e."end"')}
                   + CASE WHEN o.unsettled THEN {part('%(cut_first)s', '%(cut_last)s', 'e.start', 'e."end"')}
                          ELSE interval '0' END) / 3600
        FROM inventory_allocationexcess e JOIN inventory_slurmjobnode a ON a.id = e.allocation_id
        JOIN o ON o.id = a.job_id
        WHERE e.start < %(now)s AND e."end" > %(job_start)s)"""
# p: per team and partition the GPU-hours and multi-node GPU-hours (each floored at 0; none where no row names the
# pair) and the jobs with GPU time in the window.
ALLOCATION_ROWS = ALLOCATED + f""",
    g AS (
        SELECT account, partition, greatest(sum(hours), 0) AS hours,
               greatest(coalesce(sum(hours) FILTER (WHERE multi), 0), 0) AS multi
        FROM h GROUP BY account, partition),
    c AS (SELECT account, partition, count(*) AS jobs FROM inventory_slurmjob WHERE {IN_WINDOW}
          GROUP BY account, partition),
    p AS (SELECT account, partition, g.hours, g.multi, coalesce(c.jobs, 0) AS jobs
          FROM g FULL JOIN c USING (account, partition))"""
QUEUE_WAITS = """,
    q AS (
        SELECT partition, count(*) AS started, percentile_cont(0.5) WITHIN GROUP (ORDER BY wait) AS p50,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY wait) AS p95
        FROM (SELECT partition, extract(epoch FROM greatest(start_time - submit_time, interval '0')) / 3600 AS wait
              FROM inventory_slurmjob WHERE start_time >= %(job_start)s) s
        GROUP BY partition)"""
# One row per group: (grouping, name, GPU-hours, multi-node GPU-hours, jobs, jobs started, queue wait p50, p95).
BY_ACCOUNT = ("\n    SELECT 'account', account, coalesce(sum(hours), 0), NULL::float8, sum(jobs), NULL::bigint, "
              "NULL::float8, NULL::float8 FROM p GROUP BY account HAVING count(hours) > 0")
BY_PARTITION = """
    SELECT 'partition', x.partition, x.hours, x.multi, x.jobs, coalesce(q.started, 0), q.p50, q.p95
    FROM (SELECT partition, coalesce(sum(hours), 0) AS hours, coalesce(sum(multi), 0) AS multi, sum(jobs) AS jobs
          FROM p GROUP BY partition HAVING count(hours) > 0) x LEFT JOIN q USING (partition)"""
# /api/inventory/allocations/ by group_by, and the utilization page's Slurm figures (both groupings, queue waits):
# one statement each.
BARE_ALLOCATIONS_SQL = {"account": [ALLOCATION_ROWS + BY_ACCOUNT],
                        "partition": [ALLOCATION_ROWS + QUEUE_WAITS + BY_PARTITION]}
BARE_SLURM_PAGE_SQL = [ALLOCATION_ROWS + QUEUE_WAITS + BY_ACCOUNT + " UNION ALL " + BY_PARTITION]

# An interruption's lost work inside the range (``goodput.queries.lost_run``): GPUs × the last lost / GPUs hours of
# its run, those after the range's start (``after``); without GPUs, all of it. Of the user's and the scheduler's
# (``since_checkpoint``): GPUs × its run since its last checkpoint (run mod the checkpoint interval), after the start.
# Hours by ``date_part`` (in double precision), as the portal's ``Hours``: EXTRACT computes in numeric, slower.
LOST_IN_RANGE = """CASE WHEN gpus = 0 THEN coalesce(lost_run_gpu_hours, 0)
    ELSE gpus * least(coalesce(lost_run_gpu_hours, 0) / gpus, after) END"""
SINCE_CHECKPOINT_IN_RANGE = "gpus * least(run - %(checkpoint_hours)s * floor(run / %(checkpoint_hours)s), after)"
GPU_FAULT_REASONS = "('xid_79', 'ecc', 'xid', 'ecc_dbe')"  # goodput.queries.GPU_FAULTS
# /api/inventory/goodput/?group_by=team: one row per team with the figures of ``goodput.queries.figures``.
BARE_GOODPUT_SQL = [ALLOCATED + f""",
    allocated AS (SELECT account, greatest(sum(hours), 0) AS hours FROM h GROUP BY account),
    waits AS (
        SELECT account, date_part('epoch', sum(gpus * greatest(start_time - submit_time, interval '0'))) / 3600
               AS waited,
               date_part('epoch', sum(gpus * greatest(least(coalesce(end_time, running_until, %(now)s), %(now)s)
                                                      - greatest(start_time, %(job_start)s), interval '0'))) / 3600
               AS ran
        FROM inventory_slurmjob WHERE start_time >= %(job_start)s AND start_time <= %(now)s GROUP BY account),
    i AS (
        SELECT account, cause, reason, gpus, lost_run_gpu_hours, coalesce(lost_wait_gpu_hours, 0) AS wait,
               date_part('epoch', ended_at - %(job_start)s) / 3600 AS after,
               greatest(date_part('epoch', ended_at - started_at) / 3600, 0) AS run
        FROM inventory_interruption WHERE ended_at >= %(job_start)s AND ended_at <= %(now)s),
    lost AS (
        SELECT account, count(*) FILTER (WHERE cause = 'infrastructure') AS infrastructure,
               count(*) FILTER (WHERE cause = 'user') AS users,
               count(*) FILTER (WHERE cause = 'scheduler') AS scheduler,
               coalesce(sum({LOST_IN_RANGE}) FILTER (WHERE cause = 'infrastructure'), 0) AS run,
               coalesce(sum(wait) FILTER (WHERE cause = 'infrastructure'), 0) AS wait,
               coalesce(sum({LOST_IN_RANGE} + wait) FILTER (WHERE reason IN {GPU_FAULT_REASONS}), 0) AS gpu_fault,
               coalesce(sum({SINCE_CHECKPOINT_IN_RANGE}) FILTER (WHERE cause = 'scheduler'), 0) AS preempted,
               coalesce(sum({SINCE_CHECKPOINT_IN_RANGE}) FILTER (WHERE cause = 'user'), 0) AS user_lost
        FROM i GROUP BY account),
    g AS (
        SELECT account, coalesce(a.hours, 0) AS alloc, coalesce(q.waited, 0) AS waited, coalesce(q.ran, 0) AS ran,
               coalesce(l.infrastructure, 0) AS infrastructure, coalesce(l.users, 0) AS users,
               coalesce(l.scheduler, 0) AS scheduler, coalesce(l.run, 0) AS run, coalesce(l.wait, 0) AS wait,
               coalesce(l.gpu_fault, 0) AS gpu_fault, coalesce(l.preempted, 0) AS preempted,
               coalesce(l.user_lost, 0) AS user_lost
        FROM allocated a FULL JOIN waits q USING (account) FULL JOIN lost l USING (account))
    SELECT account, alloc, infrastructure, users, scheduler,
           CASE WHEN alloc > 0 THEN infrastructure / (alloc / 24) * 1000 END,
           CASE WHEN infrastructure > 0 THEN alloc / infrastructure / %(gpus)s END,
           CASE WHEN infrastructure > 0 AND alloc > 0 THEN %(job_hours)s / (alloc / infrastructure / %(gpus)s) END,
           run + wait, run, wait, (run + wait) * %(cost)s, run + wait,
           CASE WHEN waited + ran > 0 THEN waited / (waited + ran) END,
           CASE WHEN alloc > 0 THEN least(1, greatest(0, (alloc - run) / alloc)) END,
           gpu_fault, greatest(run + wait - gpu_fault, 0), preempted, user_lost, waited
    FROM g"""]
GOODPUT_FIGURES = ["allocated_gpu_hours", "interruptions", "user_interruptions", "scheduler_interruptions",
                   "interruptions_per_1000_gpu_days", "mtbi_hours", "expected_restarts", "lost_gpu_hours",
                   "lost_run_gpu_hours", "lost_wait_gpu_hours", "lost_cost", "lost_gpu_hours_at_default_cost",
                   "queue_wait_share", "goodput_ratio", "lost_gpu_fault_gpu_hours", "lost_node_fault_gpu_hours",
                   "lost_preemption_gpu_hours", "lost_user_gpu_hours", "queue_wait_gpu_hours"]

# /api/inventory/interruptions/: the count and the first page, newest first, with what each row names (the job's
# Slurm id, the node's host name, the fault).
BARE_INTERRUPTIONS_SQL = [
    "SELECT count(*) FROM inventory_interruption",
    """SELECT i.id, j.job_id, i.state, i.account, i.partition, i.started_at, i.ended_at, i.gpus, i.cause, i.reason,
           i.node_id, n.hostname, i.gpu_id, x.id, x.code, x.ts, t.id, t.to_state, t.reason, t.created, i.fault_ts,
           i.checkpoint_minutes, i.lost_run_gpu_hours, i.next_start, i.restart_wait_hours, i.lost_wait_gpu_hours,
           i.lost_gpu_hours, i.assumptions
    FROM inventory_interruption i JOIN inventory_slurmjob j ON j.id = i.job_id
    LEFT JOIN inventory_node n ON n.id = i.node_id LEFT JOIN inventory_xidevent x ON x.id = i.xid_event_id
    LEFT JOIN inventory_statetransition t ON t.id = i.transition_id
    ORDER BY i.ended_at DESC, i.id DESC LIMIT %(page_size)s""",
]
PAGE_SIZE = 1000  # the API's largest page (portal.api.pagination.MAX_PAGE_SIZE)


def params(span, buckets, **extra):
    """The parameters of the statements for a range (``Range`` and its buckets) at this moment."""
    from django.utils import timezone

    from inventory.telemetry.rollups import day_start

    start, now = day_start(buckets[0]) if span.daily else buckets[0], timezone.now()
    return {"job_start": start, "now": now, **cuts(start, now), "cost": settings.IDLE_GPU_HOUR_COST,
            "gpus": settings.GOODPUT_MTBI_GPUS, "job_hours": 24.0, "page_size": PAGE_SIZE,
            "checkpoint_hours": settings.GOODPUT_CHECKPOINT_MINUTES / 60, **extra}


def cuts(start, now):
    """Where the allocation rollup's rows begin and end in [start, now], as ``allocation_rollup.Reader`` cuts it
    (written out, not called, so that the checks test it): the whole UTC hours [cut_first, cut_last), of which the
    local days [day_first, day_after) = [days_from, days_to) from the daily rows and the rest from the hourly rows.
    Less than a whole hour between them: every part from the jobs (all cuts at ``now``, no day)."""
    from django.utils import timezone

    from inventory.telemetry.rollups import day_start

    def utc_hour(moment):
        return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)

    first = utc_hour(start) if utc_hour(start) == start else utc_hour(start) + timedelta(hours=1)
    last, today = utc_hour(now), timezone.localdate(now)
    if first >= last:
        return {"cut_first": now, "cut_last": now, "days_from": now, "days_to": now, "day_first": today,
                "day_after": today}
    day, after = timezone.localdate(first), timezone.localdate(last)  # after: the day after the last whole one
    if day_start(day) < first:
        day += timedelta(days=1)
    if after <= day:  # no whole day: every whole hour from the hourly rows
        return {"cut_first": first, "cut_last": last, "days_from": first, "days_to": first, "day_first": today,
                "day_after": today}
    return {"cut_first": first, "cut_last": last, "days_from": day_start(day), "days_to": day_start(after),
            "day_first": day, "day_after": after}


def run_sql(statements, values, rows=None):
    """Seconds to run ``statements`` with ``values`` and fetch every row; ``rows`` (a list) gets each statement's."""
    from django.db import connection

    fetched = []
    with connection.cursor() as cursor:
        start = time.perf_counter()
        for sql in statements:
            cursor.execute(sql, values)
            fetched.append(cursor.fetchall())
        seconds = time.perf_counter() - start
    if rows is not None:
        rows[:] = fetched
    return seconds


def close(a, b, tolerance=0.011):
    """Equal within the API's rounding (2 decimals) or both missing."""
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=tolerance)


def check_allocations(client, range_key, span, buckets):
    """The bare SQL's allocations are the API's, per team and per partition (GPU-hours, multi-node GPU-hours, jobs,
    jobs started, queue wait p50/p95), else its time compares the page with other work. Returns the groups checked."""
    checked = 0
    for group_by, statements in BARE_ALLOCATIONS_SQL.items():
        fetched = []
        run_sql(statements, params(span, buckets), fetched)
        bare = {name or "(none)": values for _, name, *values in fetched[0]}
        answer = client.get(f"/api/inventory/allocations/?range={range_key}&group_by={group_by}").json()
        shown = {g["name"]: (g["gpu_hours"], g.get("multi_node_gpu_hours"), g["jobs"], g.get("jobs_started"),
                             g.get("queue_wait_p50_hours"), g.get("queue_wait_p95_hours")) for g in answer["groups"]}
        assert bare.keys() == shown.keys() and all(
            all(close(a, b, 0.011 if position < 2 else 0.001) for position, (a, b) in
                enumerate(zip(bare[key], shown[key], strict=True))) for key in bare), (range_key, group_by, bare, shown)
        checked += len(bare)
    return checked


def check_goodput(client, range_key, span, buckets):
    """The bare SQL's goodput per team is the API's (every figure of ``GOODPUT_FIGURES``). Returns the teams."""
    fetched = []
    run_sql(BARE_GOODPUT_SQL, params(span, buckets), fetched)
    bare = {name: dict(zip(GOODPUT_FIGURES, values, strict=True)) for name, *values in fetched[0]}
    answer = client.get(f"/api/inventory/goodput/?group_by=team&range={range_key}").json()
    shown = {g["name"]: {name: g[name] for name in GOODPUT_FIGURES} for g in answer["groups"]}
    digits = {"expected_restarts": 0.0002, "queue_wait_share": 0.0002, "goodput_ratio": 0.0002}
    assert bare.keys() == shown.keys() and all(
        close(bare[key][name], shown[key][name], digits.get(name, 0.011)) for key in bare for name in GOODPUT_FIGURES
    ), (range_key, bare, shown)
    return len(bare)


def check_interruptions(client):
    """The bare SQL's first page of interruptions is the API's (count, order, job, cause, reason, node, fault, lost
    GPU-hours). Returns the rows checked."""
    fetched = []
    run_sql(BARE_INTERRUPTIONS_SQL, {"page_size": PAGE_SIZE}, fetched)
    (count,), rows = fetched[0][0], fetched[1]
    answer = client.get(f"/api/inventory/interruptions/?page_size={PAGE_SIZE}").json()
    bare = [(row[0], row[1], row[8], row[9], row[10], row[11], row[12], row[14], row[26]) for row in rows]
    shown = [(r["id"], r["job_id"], r["cause"], r["reason"], r["node_id"], r["hostname"], r["gpu_id"],
              (r["fault"] or {}).get("code"), r["lost_gpu_hours"]) for r in answer["results"]]
    assert answer["count"] == count and len(bare) == len(shown) and all(
        a[:-1] == b[:-1] and close(a[-1], b[-1], 1e-9) for a, b in zip(bare, shown, strict=True)), (
        count, answer["count"], [pair for pair in zip(bare, shown, strict=True) if pair[0] != pair[1]][:3])
    return len(bare)
