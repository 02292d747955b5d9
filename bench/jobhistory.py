"""A Slurm job history for the bench fleet (``bench/telemetry.py``'s ``build_fleet``), generated in SQL.

    from bench.jobhistory import generate
    summary = generate(days, now)   # once the fleet (and its telemetry) exist; returns counts and seconds

Stored as a Slurm pull stores it (``inventory.telemetry.pull.save_jobs``): one ``SlurmJob`` row per run of a job, of
a ``slurm`` ``TelemetrySource``, its host list in Slurm's compressed form (``bench-[00003,00011]``), one
``SlurmJobNode`` row per host with the job's GPUs spread evenly; then what the ingest runs after writing jobs,
``allocation.rebalance`` over their nodes (and, where it exists, ``allocation_rollup.rebuild``). Interruptions
(``inventory.goodput.models.Interruption``) are classified in SQL by the rules of ``goodput.attribution.classify``
(the bench's only faults are the XID 79 events generated here) with ``goodput.recording``'s estimate;
``check_interruptions`` compares them with what ``recording`` classifies for the last two days, and
``check_allocations`` the per-node rows with the host lists as the ingest expands them.

Deterministic (every draw is an md5 of the job's key): each partition's nodes form groups of ``GROUP_NODES`` (a
partition lives on one site of the bench fleet), and time is cut in blocks of ``BLOCK_HOURS``, each partition's grid
shifted a little. In a block a group either runs multi-node jobs (``MULTI_SHARE`` of the group-blocks: its nodes cut
into jobs of 2 to 16 nodes × 8 GPUs, ``MULTI_PATTERNS``, the last cut short where the group has fewer nodes), or each
of its nodes runs single-node jobs in lanes of 1, 2, 4 or 8 GPUs (``LANE_PATTERNS``), sometimes two one after the
other. Lanes split a node's 8 GPUs, so no node is overbooked at any instant (``rebalance`` finds no excess).

Most runs complete a few minutes before their block ends; the others end early (``FATES``: the user's failures,
out-of-memory, cancellations and time limits; the scheduler's preemptions and requeues; the infrastructure's XID 79
kills and requeues, NODE_FAIL, BOOT_FAIL). A requeued run (REQUEUED) is followed by the next run of the job id,
submitted at the requeue (Slurm resets the submit time), started 2-12 minutes later on the same nodes, with
``restarts`` one more (Slurm's ``restart_cnt``): at most ``MAX_RUNS`` runs. Runs going on at ``now`` are RUNNING (no
end, ``running_until = now``), runs submitted but not started PENDING (no start, no nodes). Queue waits differ by
partition (``WAIT_HOURS``, most waits short). Teams (accounts ``team-0``..``team-4``) run mostly on the nodes they
own. At 10,000 GPUs and 30 days: 94,067 runs, 201,257 per-node rows, 27,228 interruptions (1,000 GPUs: 9,700, 20,153,
2,810); most jobs are on one node, most GPU-hours on several.
"""

import math
import time
from datetime import timedelta

BLOCK_HOURS = 5
GROUP_NODES = 16
MULTI_SHARE = 0.79  # of the group-blocks
BUSY = 0.92  # chance that a multi-node job has work in its block
LANE_BUSY = 0.7  # chance that a lane has
SPLIT = 0.15  # chance that a lane runs two jobs one after the other
OWN_TEAM = 0.8  # chance that a job is its node's owner team's
# Widths (nodes) of the multi-node jobs of one group-block, from its first node on.
MULTI_PATTERNS = ["{16}", "{8,8}", "{8,4,4}", "{4,4,4,4}", "{8,4,2,2}", "{4,4,4,2,2}", "{12,4}", "{6,6,4}",
                  "{2,2,2,2,4,4}", "{4,4,8}"]
# GPUs of the lanes of one node in a block without a multi-node job.
LANE_PATTERNS = ["{8}", "{8}", "{8}", "{8}", "{4,4}", "{4,4}", "{4,2,2}", "{2,2,2,2}", "{4,2,1,1}"]
# Queue wait scale per partition (hours; the n-th partition by name): wait = scale × u².
WAIT_HOURS = [0.5, 1.0, 2.0, 6.0, 0.25, 3.0, 12.0, 1.0]
# How a run ends: (upper bound of its draw, fate, earliest end as a share of its run). A fate ending in _XID is the
# state before it, after an XID 79 on one of the run's GPUs 1-5 minutes before its end. The rest complete.
FATES = [
    (0.084, "FAILED", 0.05), (0.116, "OUT_OF_MEMORY", 0.02), (0.179, "CANCELLED", 0.0), (0.232, "TIMEOUT", 1.0),
    (0.260, "PREEMPTED", 0.1), (0.282, "REQUEUED", 0.1), (0.286, "REQUEUED_XID", 0.1), (0.289, "FAILED_XID", 0.1),
    (0.291, "NODE_FAIL", 0.1), (0.292, "BOOT_FAIL", 0.0),
]
MAX_RUNS = 3
# Job names: four for multi-node jobs, four for single-node ones.
JOB_NAMES = ["llm-70b-pretrain", "moe-8x22b", "llm-13b-long-context", "vit-g-pretrain",
             "finetune", "eval-harness", "hparam-sweep", "distill"]
SOURCE_NAME = "bench-slurm"
TEMP_TABLES = ("jh_node", "jh_group", "jh_block", "jh_plan", "jh_run", "jh_job")


def draw(key):
    """SQL of a draw in [0, 1) for ``key`` (an SQL text expression)."""
    return f"pg_temp.jh_u({key})"


FUNCTIONS = [
    "CREATE OR REPLACE FUNCTION pg_temp.jh_u(text) RETURNS float8 IMMUTABLE LANGUAGE sql AS "
    "$$ SELECT ('x' || substr(md5($1), 1, 8))::bit(32)::bigint / 4294967296.0 $$",
    "CREATE OR REPLACE FUNCTION pg_temp.jh_fate(float8) RETURNS text IMMUTABLE LANGUAGE sql AS "
    "$$ SELECT CASE " + " ".join(f"WHEN $1 < {bound} THEN '{name}'" for bound, name, _ in FATES)
    + " ELSE 'COMPLETED' END $$",
    "CREATE OR REPLACE FUNCTION pg_temp.jh_cut(float8) RETURNS float8 IMMUTABLE LANGUAGE sql AS "
    "$$ SELECT CASE " + " ".join(f"WHEN $1 < {bound} THEN {share}" for bound, _, share in FATES) + " ELSE 1.0 END $$",
    # The end of the run keyed k (job key/run number) that starts at s and was planned to end at p: at p when it
    # completes or times out, 1-3 minutes after s for a BOOT_FAIL, else somewhere after its earliest cut.
    """CREATE OR REPLACE FUNCTION pg_temp.jh_end(k text, s timestamptz, p timestamptz) RETURNS timestamptz
    IMMUTABLE LANGUAGE sql AS $$ SELECT date_trunc('second', CASE
        WHEN f IN ('COMPLETED', 'TIMEOUT') THEN p
        WHEN f = 'BOOT_FAIL' THEN s + make_interval(secs => 60 + floor(pg_temp.jh_u(k || '/boot') * 120))
        ELSE s + (p - s) * (c + (0.9 - c) * pg_temp.jh_u(k || '/cut')) END)
    FROM (SELECT pg_temp.jh_fate(pg_temp.jh_u(k || '/fate')) AS f, pg_temp.jh_cut(pg_temp.jh_u(k || '/fate')) AS c) x
    $$""",
]

# The nodes with a partition, numbered within it, and their groups.
NODES_SQL = [
    """CREATE TEMP TABLE jh_node AS
    SELECT id, hostname, partition, coalesce(owner_team, '') AS owner_team,
           (dense_rank() OVER (ORDER BY partition) - 1)::int AS pnum,
           (row_number() OVER (PARTITION BY partition ORDER BY hostname) - 1)::int AS rank
    FROM inventory_node WHERE partition <> ''""",
    """CREATE TEMP TABLE jh_group AS
    SELECT partition, pnum, rank / %(group)s AS grp, count(*)::int AS size, array_agg(id ORDER BY rank) AS ids,
           array_agg(hostname ORDER BY rank) AS hosts, array_agg(owner_team ORDER BY rank) AS teams
    FROM jh_node GROUP BY partition, pnum, rank / %(group)s""",
    # Each group's blocks from one block before the history's start to one after now (its jobs may be pending).
    """CREATE TEMP TABLE jh_block AS
    SELECT g.*, b.begins, concat_ws('/', g.partition, g.grp, b.n) AS gkey
    FROM jh_group g CROSS JOIN LATERAL (
        SELECT n, %(first)s::timestamptz + make_interval(hours => n * %(hours)s, mins => g.pnum * %(hours)s * 60 / 8)
               AS begins
        FROM generate_series(0, %(blocks)s) AS n) b
    WHERE b.begins < %(now)s::timestamptz + make_interval(hours => %(hours)s)""",
]

# One row per job (its first run as planned): key, kind, partition, nodes, GPUs per node, the stretch of its block.
PLAN_SQL = f"""CREATE TEMP TABLE jh_plan AS
    WITH planned AS (
        SELECT 'm/' || b.gkey || '/' || w.ord AS key, 'multi' AS kind, b.partition, b.pnum,
               b.ids[w.first + 1:least(w.first + w.width, b.size)] AS node_ids,
               b.hosts[w.first + 1:least(w.first + w.width, b.size)] AS hosts, b.teams[w.first + 1] AS owner,
               8 AS per_node, b.begins AS seg_start, b.begins + make_interval(hours => %(hours)s) AS seg_end
        FROM jh_block b CROSS JOIN LATERAL (
            SELECT width, ord, (sum(width) OVER (ORDER BY ord) - width)::int AS first
            FROM unnest((%(multi_patterns)s::text[])[1 + floor({draw("b.gkey || '/pattern'")}
                                                            * %(multi_count)s)::int]::int[])
                 WITH ORDINALITY AS p(width, ord)) w
        WHERE {draw("b.gkey || '/multi'")} < %(multi_share)s AND w.first < b.size
          AND {draw("b.gkey || '/' || w.ord || '/busy'")} < %(busy)s
        UNION ALL
        SELECT lane.key || '/' || s.n, 'single', b.partition, b.pnum, ARRAY[b.ids[i]], ARRAY[b.hosts[i]],
               b.teams[i], l.gpus,
               b.begins + make_interval(hours => %(hours)s) * s.lo, b.begins + make_interval(hours => %(hours)s) * s.hi
        FROM jh_block b CROSS JOIN generate_series(1, b.size) AS i
        CROSS JOIN LATERAL unnest((%(lane_patterns)s::text[])[
            1 + floor({draw("b.gkey || '/' || i || '/lanes'")} * %(lane_count)s)::int]::int[])
            WITH ORDINALITY AS l(gpus, ord)
        CROSS JOIN LATERAL (SELECT 's/' || b.gkey || '/' || i || '/' || l.ord AS key) lane
        CROSS JOIN LATERAL (SELECT {draw("lane.key || '/split'")} < %(split)s AS two,
                                   0.3 + 0.4 * {draw("lane.key || '/at'")} AS at) sp
        CROSS JOIN LATERAL (VALUES (0, 0.0, CASE WHEN sp.two THEN sp.at ELSE 1.0 END), (1, sp.at, 1.0)) AS s(n, lo, hi)
        WHERE {draw("b.gkey || '/multi'")} >= %(multi_share)s AND (s.n = 0 OR sp.two)
          AND {draw("lane.key || '/' || s.n || '/busy'")} < %(lane_busy)s
    )
    SELECT p.key, p.kind, p.partition, p.node_ids, p.hosts, p.per_node, cardinality(p.node_ids) AS node_count,
           p.per_node * cardinality(p.node_ids) AS gpus, a.account,
           'u' || floor({draw("p.key || '/user'")} * 6)::int || '-' || a.account AS "user",
           (%(names)s::text[])[1 + floor({draw("p.key || '/name'")} * 4)::int
                                + CASE WHEN p.kind = 'multi' THEN 0 ELSE 4 END] AS name,
           CASE WHEN cardinality(p.hosts) = 1 THEN p.hosts[1]
                ELSE regexp_replace(p.hosts[1], '[0-9]+$', '') || '['
                     || array_to_string(ARRAY(SELECT substring(h FROM '[0-9]+$') FROM unnest(p.hosts) h), ',')
                     || ']' END AS nodes,
           t.start0 - make_interval(secs => floor((%(wait_hours)s::float8[])[p.pnum + 1] * 3600
                                                   * {draw("p.key || '/wait'")} ^ 2)) AS submit0,
           t.start0, t.planned_end
    FROM planned p
    CROSS JOIN LATERAL (SELECT CASE WHEN {draw("p.key || '/team'")} < %(own_team)s THEN p.owner
                                    ELSE 'team-' || floor({draw("p.key || '/other'")} * 5)::int END AS account) a
    CROSS JOIN LATERAL (
        SELECT date_trunc('second', p.seg_start) + make_interval(secs => 60 + floor({draw("p.key || '/start'")} * 540))
               AS start0,
               date_trunc('second', p.seg_end) - make_interval(secs => 60 + floor({draw("p.key || '/end'")} * 540))
               AS planned_end) t"""

# Every run of every job: the first as planned, then one after each requeue that leaves time to run again.
RUNS_SQL = f"""CREATE TEMP TABLE jh_run AS
    WITH RECURSIVE r AS (
        SELECT key, 0 AS run, submit0 AS submit, start0 AS start, planned_end FROM jh_plan
        UNION ALL
        SELECT r.key, r.run + 1, e.ended,
               e.ended + make_interval(secs => 120 + floor({draw("r.key || '/' || r.run || '/gap'")} * 600)),
               r.planned_end
        FROM r CROSS JOIN LATERAL (
            SELECT pg_temp.jh_end(r.key || '/' || r.run, r.start, r.planned_end) AS ended,
                   pg_temp.jh_fate({draw("r.key || '/' || r.run || '/fate'")}) AS fate) e
        WHERE e.fate LIKE 'REQUEUED%%' AND r.run < %(max_runs)s - 1
          AND e.ended + interval '17 minutes' < r.planned_end
    )
    SELECT r.*, f.fate, pg_temp.jh_end(r.key || '/' || r.run, r.start, r.planned_end) AS ended
    FROM r CROSS JOIN LATERAL (SELECT pg_temp.jh_fate({draw("r.key || '/' || r.run || '/fate'")}) AS fate) f"""

# The runs as the source shows them at ``now``, numbered with Slurm job ids in order of the first submission.
JOBS_SQL = """CREATE TEMP TABLE jh_job AS
    SELECT r.key, r.run, r.fate, r.submit, ids.job_id,
           CASE WHEN r.start < %(now)s THEN r.start END AS start_time,
           CASE WHEN r.ended <= %(now)s THEN r.ended END AS end_time,
           CASE WHEN r.start >= %(now)s THEN 'PENDING' WHEN r.ended > %(now)s THEN 'RUNNING'
                ELSE replace(r.fate, '_XID', '') END AS state,
           CASE WHEN r.start < %(now)s AND r.ended > %(now)s THEN %(now)s END AS running_until
    FROM jh_run r JOIN (
        SELECT key, (1000000 + row_number() OVER (ORDER BY submit, key))::text AS job_id
        FROM jh_run WHERE run = 0 AND submit < %(now)s) ids USING (key)
    WHERE r.submit < %(now)s"""

INSERT_SQL = [
    """INSERT INTO inventory_slurmjob (source_id, job_id, cluster, name, "user", account, partition, state, submit_time,
                                    start_time, end_time, nodes, node_count, gpus, running_until, restarts, reason)
    SELECT %(source)s, j.job_id, 'bench', p.name, p."user", p.account, p.partition, j.state, j.submit, j.start_time,
           j.end_time, p.nodes, p.node_count, p.gpus, j.running_until, j.run, ''
    FROM jh_job j JOIN jh_plan p USING (key) ORDER BY j.submit, j.job_id""",
    # The ingest stores a host per node of a started run, with the job's GPUs spread evenly (all alike here).
    """INSERT INTO inventory_slurmjobnode (job_id, host, node_id, gpus)
    SELECT s.id, h.host, h.node_id, p.per_node
    FROM jh_job j JOIN jh_plan p USING (key)
    JOIN inventory_slurmjob s ON s.source_id = %(source)s AND s.job_id = j.job_id AND s.submit_time = j.submit
    CROSS JOIN LATERAL unnest(p.node_ids, p.hosts) AS h(node_id, host)
    WHERE j.start_time IS NOT NULL ORDER BY s.id, h.host""",
    # An XID 79 on one GPU of one node of each run killed or requeued by one, 1-5 minutes before its end.
    f"""INSERT INTO inventory_xidevent (gpu_id, source_id, ts, hour, code, kind)
    SELECT g.id, %(telemetry)s, x.ts, date_trunc('hour', x.ts, 'UTC'), 79, 'hardware'
    FROM jh_job j JOIN jh_plan p USING (key)
    CROSS JOIN LATERAL (SELECT j.key || '/' || j.run AS k) k
    CROSS JOIN LATERAL (
        SELECT j.end_time - make_interval(secs => 60 + floor({draw("k.k || '/xid'")} * 240)) AS ts,
               p.node_ids[1 + floor({draw("k.k || '/xid-node'")} * p.node_count)::int] AS node_id,
               floor({draw("k.k || '/xid-slot'")} * 8)::int AS slot) x
    JOIN inventory_gpu g ON g.node_id = x.node_id AND g.slot = x.slot
    WHERE j.fate LIKE '%%_XID' AND j.end_time IS NOT NULL
    ORDER BY x.ts, g.id ON CONFLICT DO NOTHING""",
]

# The XID events counted in the hourly and daily rows they fall in (as the ingest's ``health.count_xid_events`` and
# the node and daily rollups do; every other row has 0).
XID_COUNTS_SQL = [
    """UPDATE inventory_gpuhourly h SET xid_errors = c.n
    FROM (SELECT gpu_id, hour, count(*) AS n FROM inventory_xidevent WHERE kind = 'hardware' GROUP BY 1, 2) c
    WHERE h.gpu_id = c.gpu_id AND h.hour = c.hour""",
    """UPDATE inventory_nodehourly h SET xid_errors = c.n
    FROM (SELECT g.node_id, x.hour, count(*) AS n FROM inventory_xidevent x JOIN inventory_gpu g ON g.id = x.gpu_id
          WHERE x.kind = 'hardware' GROUP BY 1, 2) c
    WHERE h.node_id = c.node_id AND h.hour = c.hour""",
    """UPDATE inventory_gpudaily d SET xid_errors = c.n
    FROM (SELECT gpu_id, (hour AT TIME ZONE %(zone)s)::date AS day, count(*) AS n FROM inventory_xidevent
          WHERE kind = 'hardware' GROUP BY 1, 2) c
    WHERE d.gpu_id = c.gpu_id AND d.day = c.day""",
    """UPDATE inventory_nodedaily d SET xid_errors = c.n
    FROM (SELECT g.node_id, (x.hour AT TIME ZONE %(zone)s)::date AS day, count(*) AS n FROM inventory_xidevent x
          JOIN inventory_gpu g ON g.id = x.gpu_id WHERE x.kind = 'hardware' GROUP BY 1, 2) c
    WHERE d.node_id = c.node_id AND d.day = c.day""",
]

# The interruptions of the ended runs, as ``goodput.recording.record_interruptions`` classifies and estimates them
# (``attribution.classify``: the faults here are XID events; ``recording.estimate``).
INTERRUPTIONS_SQL = """INSERT INTO inventory_interruption (
        job_id, state, started_at, ended_at, gpus, account, partition, cause, reason, node_id, gpu_id, xid_event_id,
        transition_id, fault_ts, checkpoint_minutes, lost_run_gpu_hours, next_start, restart_wait_hours,
        lost_wait_gpu_hours, lost_gpu_hours, assumptions)
    WITH ended AS (
        SELECT j.id, j.state, j.start_time, j.end_time, j.gpus, j.account, j.partition,
               ARRAY(SELECT a.node_id FROM inventory_slurmjobnode a WHERE a.job_id = j.id AND a.node_id IS NOT NULL
                     ORDER BY a.node_id) AS nodes
        FROM inventory_slurmjob j
        WHERE j.source_id = %(source)s AND j.start_time IS NOT NULL AND j.end_time IS NOT NULL
          AND j.state = ANY(%(ended)s)
    ), classified AS (
        SELECT e.*, f.id AS xid_id, f.ts AS fault_ts, f.gpu_id AS fault_gpu, f.node_id AS fault_node,
               CASE WHEN e.state IN ('NODE_FAIL', 'BOOT_FAIL') OR f.id IS NOT NULL THEN 'infrastructure'
                    WHEN e.state IN ('PREEMPTED', 'REQUEUED') THEN 'scheduler' ELSE 'user' END AS cause,
               CASE WHEN e.state = 'NODE_FAIL' THEN 'node_fail' WHEN e.state = 'BOOT_FAIL' THEN 'boot_fail'
                    WHEN f.id IS NOT NULL THEN f.reason ELSE %(reasons)s::jsonb ->> e.state END AS reason
        FROM ended e LEFT JOIN LATERAL (
            SELECT x.id, x.ts, x.gpu_id, g.node_id,
                   CASE WHEN x.code = 79 THEN 'xid_79' WHEN x.code = ANY(%(ecc)s) THEN 'ecc' ELSE 'xid' END AS reason
            FROM inventory_xidevent x JOIN inventory_gpu g ON g.id = x.gpu_id
            WHERE x.kind = 'hardware' AND g.node_id = ANY(e.nodes)
              AND x.ts <= e.end_time + %(lag)s AND x.ts >= greatest(e.start_time, e.end_time - %(window)s)
            ORDER BY CASE WHEN x.code = 79 THEN 0 WHEN x.code = ANY(%(ecc)s) THEN 1 ELSE 2 END, x.ts > e.end_time,
                     abs(extract(epoch FROM e.end_time - x.ts)), x.id
            LIMIT 1) f ON e.state IN ('FAILED', 'REQUEUED', 'NODE_FAIL', 'BOOT_FAIL')
    ), estimated AS (
        SELECT c.*, m.minutes, extract(epoch FROM greatest(c.end_time - c.start_time, interval '0')) AS run,
               CASE WHEN c.cause = 'infrastructure' THEN (
                   SELECT min(s.start_time) FROM inventory_slurmjob s
                   WHERE s.account = c.account AND s.partition = c.partition AND s.start_time >= c.end_time) END
               AS next_start
        FROM classified c LEFT JOIN unnest(%(accounts)s::text[], %(minutes)s::int[]) AS m(account, minutes)
            USING (account)
    ), waited AS (
        SELECT e.*, CASE WHEN e.minutes > 0 THEN mod(e.run, e.minutes * 60) ELSE e.run END AS since_checkpoint,
               CASE WHEN e.next_start IS NULL THEN CASE WHEN %(now)s - e.end_time >= %(cap)s THEN %(cap)s END
                    ELSE least(greatest(e.next_start - e.end_time, interval '0'), %(cap)s) END AS wait
        FROM estimated e
    ), figures AS (
        SELECT w.*, (w.gpus * w.since_checkpoint)::float8 / 3600 AS lost_run,
               w.gpus * (extract(epoch FROM w.wait)::float8 / 3600) AS lost_wait
        FROM waited w
    )
    SELECT f.id, f.state, f.start_time, f.end_time, f.gpus, f.account, f.partition, f.cause, f.reason,
           CASE WHEN f.xid_id IS NOT NULL THEN f.fault_node WHEN cardinality(f.nodes) = 1 THEN f.nodes[1] END,
           f.fault_gpu, f.xid_id, NULL, f.fault_ts, i.minutes, i.lost_run, i.next_start, i.wait_hours, i.lost_wait,
           i.lost_run + coalesce(i.lost_wait, 0), coalesce(i.words, '')
    FROM figures f LEFT JOIN LATERAL (
        SELECT f.minutes, f.lost_run, extract(epoch FROM f.wait)::float8 / 3600 AS wait_hours, f.lost_wait,
               CASE WHEN f.next_start - f.end_time <= %(cap)s THEN f.next_start END AS next_start,
               'Estimate: a checkpoint every ' || f.minutes || %(words)s
               || CASE WHEN f.wait IS NULL THEN ' (no job started yet)' ELSE '' END || '.' AS words
        WHERE f.cause = 'infrastructure') i ON true
    ORDER BY f.end_time, f.id"""


def interruption_params(source, now):
    """What ``INTERRUPTIONS_SQL`` takes from the portal's settings and rules, for the jobs of ``source``."""
    from django.conf import settings

    from inventory.goodput import attribution, hooks, recording
    from inventory.models import SlurmJob
    from inventory.telemetry.xid import ECC_CODES

    window, lag, cap = recording.settings_window()
    minutes = hooks.checkpoint_minutes(SlurmJob.objects.filter(source=source).values_list("account", flat=True)
                                       .distinct().order_by())
    reasons = {**attribution.FAULT_STATES, **attribution.USER_STATES, **attribution.SCHEDULER_STATES}
    words = (" min from the job's start (work since the last one lost), plus the wait until the team's next job on "
             f"the partition started, at most {settings.GOODPUT_RESTART_WAIT_CAP_HOURS:g} h")
    return {"source": source.pk, "ended": sorted(attribution.ENDED_STATES), "reasons": _json(reasons),
            "ecc": list(ECC_CODES), "window": window, "lag": lag, "cap": cap, "now": now, "words": words,
            "accounts": list(minutes), "minutes": list(minutes.values())}


def _json(value):
    import json

    return json.dumps(value)


def generate(days, now):
    """The job history of the ``days`` before ``now`` (module docstring), with the portal's follow-up and checks.
    Returns ``{"counts": {...}, "seconds": {...}}``."""
    from django.conf import settings
    from django.db import connection

    from inventory.models import TelemetrySource

    seconds = {}
    source = TelemetrySource.objects.create(
        name=SOURCE_NAME, kind=TelemetrySource.Kind.SLURM, url="http://slurmrestd:6820/slurmdb/v0.0.40/jobs",
        backfill_hours=days * 24, synced_until=now, last_success_at=now)
    telemetry = TelemetrySource.objects.exclude(pk=source.pk).order_by("pk").values_list("pk", flat=True).first()
    first = now - timedelta(days=days, hours=BLOCK_HOURS)
    params = {"group": GROUP_NODES, "first": first, "hours": BLOCK_HOURS, "now": now,
              "blocks": math.ceil((now - first) / timedelta(hours=BLOCK_HOURS)) + 1,
              "multi_patterns": MULTI_PATTERNS, "multi_count": len(MULTI_PATTERNS), "multi_share": MULTI_SHARE,
              "busy": BUSY, "lane_patterns": LANE_PATTERNS, "lane_count": len(LANE_PATTERNS), "split": SPLIT,
              "lane_busy": LANE_BUSY, "own_team": OWN_TEAM, "names": JOB_NAMES, "wait_hours": WAIT_HOURS,
              "max_runs": MAX_RUNS, "source": source.pk, "telemetry": telemetry, "zone": settings.TIME_ZONE}
    start = time.perf_counter()
    with connection.cursor() as cursor:
        for sql in FUNCTIONS:
            cursor.execute(sql)
        cursor.execute(f"DROP TABLE IF EXISTS {', '.join(TEMP_TABLES)}")
        for sql in [*NODES_SQL, PLAN_SQL, RUNS_SQL, JOBS_SQL, *INSERT_SQL, *XID_COUNTS_SQL]:
            cursor.execute(sql, params)
        seconds["jobs"] = time.perf_counter() - start
        start = time.perf_counter()
        cursor.execute(INTERRUPTIONS_SQL, interruption_params(source, now))
        seconds["interruptions"] = time.perf_counter() - start
        cursor.execute(f"DROP TABLE {', '.join(TEMP_TABLES)}")
    start = time.perf_counter()
    overbooked, since = follow_up(source, now)
    seconds["rebalance"] = time.perf_counter() - start
    start = time.perf_counter()
    rebuilt = rebuild_rollup(since, now)  # from the first run's start: some started before the history's first day
    seconds["rollup"] = time.perf_counter() - start if rebuilt else None  # None: the portal has no such rollup yet
    start = time.perf_counter()
    checked = {"checked_hosts": check_allocations(source), "checked_interruptions": check_interruptions(now)}
    seconds["checks"] = time.perf_counter() - start
    return {"counts": {**counts(source), "overbooked": len(overbooked), **checked}, "seconds": seconds}


def follow_up(source, now):
    """What ``pull.save_jobs`` runs after writing jobs: ``allocation.rebalance`` of the nodes they ran on, from their
    first start. Returns the jobs found on an overbooked node (none: the lanes never overbook) and that start."""
    from inventory.models import SlurmJob, SlurmJobNode
    from inventory.telemetry import allocation

    node_ids = set(SlurmJobNode.objects.filter(job__source=source, node__isnull=False).order_by()
                   .values_list("node_id", flat=True).distinct())
    since = SlurmJob.objects.filter(source=source, start_time__isnull=False).order_by("start_time").values_list(
        "start_time", flat=True).first()
    return (allocation.rebalance(node_ids, since, now) if node_ids and since else {}), since


def rebuild_rollup(start, end):
    """``inventory.telemetry.allocation_rollup.rebuild(start, end)`` where the portal has it (the hourly allocation
    rollup another change adds); False where it does not."""
    try:
        from inventory.telemetry import allocation_rollup
    except ImportError:
        return False
    if not hasattr(allocation_rollup, "rebuild"):
        return False
    allocation_rollup.rebuild(start, end)
    return True


def check_allocations(source, every=50):
    """Every ``every``-th started run's per-node rows are those the ingest writes (``allocation.save_allocations``):
    its host list expanded (``slurm.expand_hostlist``), each host matched to its node (``matching.NodeMatcher``),
    the job's GPUs spread evenly (``allocation.spread``). Returns the runs checked."""
    from collections import defaultdict

    from inventory.models import SlurmJob, SlurmJobNode
    from inventory.telemetry import allocation, slurm
    from inventory.telemetry.matching import NodeMatcher

    jobs = list(SlurmJob.objects.filter(source=source, start_time__isnull=False).order_by("pk")
                .values_list("pk", "job_id", "nodes", "node_count", "gpus"))[::every]
    rows = defaultdict(list)
    for job_id, host, node_id, gpus in (SlurmJobNode.objects.filter(job_id__in=[job[0] for job in jobs])
                                        .order_by("pk").values_list("job_id", "host", "node_id", "gpus")):
        rows[job_id].append((host, node_id, gpus))
    matcher = NodeMatcher()
    for pk, job_id, nodes, node_count, gpus in jobs:
        hosts = slurm.expand_hostlist(nodes)
        expected = [(host, matcher.node_id(host), share)
                    for host, share in zip(hosts, allocation.spread(gpus, len(hosts)), strict=True)]
        assert len(hosts) == node_count and sorted(rows[pk]) == sorted(expected), (job_id, nodes, rows[pk], expected)
    return len(jobs)


INTERRUPTION_FIELDS = ["job_id", "ended_at", "state", "started_at", "gpus", "account", "partition", "cause", "reason",
                       "node_id", "gpu_id", "xid_event_id", "transition_id", "fault_ts", "checkpoint_minutes",
                       "next_start", "assumptions"]
INTERRUPTION_FIGURES = ["lost_run_gpu_hours", "restart_wait_hours", "lost_wait_gpu_hours", "lost_gpu_hours"]


def check_interruptions(now, hours=None):
    """The interruptions generated in SQL for the runs that ended in the last ``hours`` (``GOODPUT_LOOKBACK_HOURS``,
    the window the portal's task records) are those ``goodput.recording`` classifies and estimates for them (compared
    without writing: ``classify_jobs``). Returns the rows compared."""
    from django.conf import settings

    from inventory.goodput import recording
    from inventory.goodput.models import Interruption

    start = now - timedelta(hours=settings.GOODPUT_LOOKBACK_HOURS if hours is None else hours)
    jobs = list(recording.ended_jobs(start, now))
    faults = recording.faults_near(recording.ended_jobs(start, now), start, now) if jobs else []
    expected = {(row.job_id, row.ended_at): row for row in recording.classify_jobs(jobs, faults, now)}
    stored = {(row.job_id, row.ended_at): row
              for row in Interruption.objects.filter(ended_at__gte=start, ended_at__lt=now)}
    assert expected.keys() == stored.keys(), (len(expected), len(stored), sorted(expected.keys() ^ stored.keys())[:5])
    for key, row in expected.items():
        mine = stored[key]
        assert [getattr(row, name) for name in INTERRUPTION_FIELDS] == [
            getattr(mine, name) for name in INTERRUPTION_FIELDS], (key, row.__dict__, mine.__dict__)
        for name in INTERRUPTION_FIGURES:
            theirs, ours = getattr(row, name), getattr(mine, name)
            assert (theirs is None) == (ours is None) and (
                theirs is None or math.isclose(theirs, ours, rel_tol=1e-9, abs_tol=1e-9)), (key, name, theirs, ours)
    return len(expected)


def counts(source):
    """What was generated: runs, jobs, per-node rows, multi-node runs, requeued runs and runs after a requeue,
    running and pending runs, interruptions by cause, XID events, allocation excess rows."""
    from django.db.models import Count, Q

    from inventory.goodput.models import Interruption
    from inventory.models import AllocationExcess, SlurmJob, SlurmJobNode, XidEvent

    jobs = SlurmJob.objects.filter(source=source).aggregate(
        runs=Count("pk"), jobs=Count("job_id", distinct=True), multi_node=Count("pk", filter=Q(node_count__gt=1)),
        requeued=Count("pk", filter=Q(state="REQUEUED")), restarted=Count("pk", filter=Q(restarts__gt=0)),
        running=Count("pk", filter=Q(state="RUNNING")), pending=Count("pk", filter=Q(state="PENDING")))
    causes = dict(Interruption.objects.filter(job__source=source).values_list("cause").annotate(n=Count("pk"))
                  .order_by())
    return {**jobs, "job_nodes": SlurmJobNode.objects.filter(job__source=source).count(),
            "interruptions": sum(causes.values()), **{f"interruptions_{cause}": n for cause, n in causes.items()},
            "xid_events": XidEvent.objects.count(), "excess": AllocationExcess.objects.count()}


def describe(summary):
    """The summary of ``generate`` in one line."""
    c, s = summary["counts"], summary["seconds"]
    rollup = "no allocation rollup in this portal" if s["rollup"] is None else f"allocation rollup {s['rollup']:.1f} s"
    return (f"jobs: {c['runs']:,} runs of {c['jobs']:,} jobs ({c['multi_node']:,} multi-node, {c['requeued']:,} "
            f"requeued, {c['restarted']:,} runs after a requeue, {c['running']:,} running, {c['pending']:,} pending), "
            f"{c['job_nodes']:,} per-node rows, {c['interruptions']:,} interruptions (infrastructure "
            f"{c.get('interruptions_infrastructure', 0):,}, user {c.get('interruptions_user', 0):,}, scheduler "
            f"{c.get('interruptions_scheduler', 0):,}), {c['xid_events']:,} XID events; generated in {s['jobs']:.1f} s "
            f"+ interruptions {s['interruptions']:.1f} s; rebalance {s['rebalance']:.1f} s ({c['overbooked']} jobs on "
            f"overbooked nodes, {c['excess']} excess rows); {rollup}; checked {c['checked_hosts']:,} host lists and "
            f"{c['checked_interruptions']:,} interruptions against the portal's in {s['checks']:.1f} s")
