"""The goodput figures behind ``/api/inventory/goodput/`` (and, next, the goodput dashboard and pages): plain
functions over the Slurm jobs and the recorded interruptions, each a fixed number of set-based queries per call
whatever the number of jobs or groups.

Ranges, groups and filters are the utilization report's (``inventory.telemetry.queries``: ``RANGES``, ``GROUPS``,
``FILTER_LOOKUPS``), read for jobs:

- ``team`` is the job's Slurm account, ``partition`` its Slurm partition;
- ``month`` (goodput only): one row per calendar month (UTC) of the range, oldest first, named "2026-11": each
  month's allocated GPU-hours are the part of the runs inside it (and of the range), its lost work the part of the
  lost run inside it; interruptions, their restart wait and cost count in the month they ended, queue waits in the
  month the job started. Filters apply to jobs as for a team.
- ``site``, ``node`` and ``gpu_model`` are those of the nodes the job ran on (its ``SlurmJobNode`` rows; a node's
  GPU model is that of its GPUs). Allocated GPU-hours of a job on several nodes are split by node: a job that
  spans two sites counts its part on the site's nodes, under a ``site`` (or ``gpu_model``) *filter* as when
  *grouped* by site (its queue wait, a figure of the whole job, counts when it touched the site). Jobs on hosts the
  inventory does not know have no site, node or model.

What the figures mean (per group, over the range: from its start until now, or a calendar range's last midnight)
    - ``allocated_gpu_hours``: allocated GPUs × the part of the jobs' runs inside the range, clipped per node to its
      GPUs (``inventory.telemetry.allocation``: the same figure as ``/api/inventory/allocations/``), read from the
      rollup kept at pull time (``allocation_rollup``).
    - ``interruptions``: the infrastructure's interruptions that ended in the range (``attribution.py``); for node,
      site and model groups, counted on the node of the fault (jobs ended by a NODE_FAIL on several nodes without a
      fault on record: on no node). ``user_interruptions`` and ``scheduler_interruptions``: the others.
    - ``interruptions_per_1000_gpu_days``: interruptions / (allocated GPU-hours / 24) × 1,000.
    - ``mtbi_hours``: mean time between infrastructure interruptions for a job of N GPUs (``gpus`` argument):
      allocated GPU-hours per interruption / N; ``expected_restarts``: for such a job of ``job_hours`` hours,
      ``job_hours / mtbi_hours``. Both null without an interruption (no failure seen, not "never fails").
    - ``lost_gpu_hours``: the estimate of each interruption (work since the last checkpoint, inside the range, plus
      the restart wait; ``attribution.py``), split over the job's nodes for node, site and model groups;
      ``lost_cost`` prices it at each node's cost per GPU-hour from its contracts (``inventory.costs``), else at
      ``settings.IDLE_GPU_HOUR_COST``, as the idle cost is priced (``cost_basis`` words it).
    - ``queue_wait_share``: of the jobs that started in the range, GPUs × queue wait / GPUs × (queue wait + run).
    - ``goodput_ratio``: (allocated − lost work) / allocated GPU-hours, where lost work is the part since the last
      checkpoint (the restart wait lies outside the allocation).
    A group without allocated GPU-hours shows null ratios and rates, never 0 % or an error.
"""

from collections import defaultdict
from datetime import UTC, timedelta

from django.conf import settings
from django.db import connections
from django.db.models import (
    Case,
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    Func,
    IntegerField,
    Min,
    OuterRef,
    Q,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Floor, Greatest, Least, NullIf, TruncMonth
from django.utils import timezone

from inventory import lifecycle
from inventory.costs import gpu_hour_costs
from inventory.models import GPU, GPUModel, LifecycleState, Node, Site
from inventory.telemetry import allocation, allocation_rollup, jobstats
from inventory.telemetry.models import SlurmJob, SlurmJobNode
from inventory.telemetry.queries import GROUPS, NONE_LABEL, UnknownParameter, get_range, idle_cost_basis
from inventory.telemetry.ranges import calendar_month

from . import attribution
from .models import Interruption

# group_by -> what ``allocation.clipped_gpu_time`` groups jobs by (site, gpu_model: by node, then the node's).
ALLOCATION_BY = {"team": "account", "partition": "partition", "site": "node", "node": "node", "gpu_model": "node"}
JOB_FIELDS = {"team": "account", "partition": "partition"}  # groups and filters that are fields of a job
NODE_GROUPS = ("site", "node", "gpu_model")
MONTH = "month"
GOODPUT_GROUPS = (*GROUPS, MONTH)  # the utilization report's groups, and calendar months


def check_group(group_by):
    if group_by not in GOODPUT_GROUPS:
        raise UnknownParameter(f"Unknown group_by '{group_by}'; use one of {', '.join(GOODPUT_GROUPS)}.")


def month_label(moment):
    return moment.astimezone(UTC).strftime("%Y-%m")


def next_month(first):
    """The first moment of the month after the one that begins at ``first``."""
    return (first + timedelta(days=32)).replace(day=1)


def months(start, now):
    """``{"2026-11": (begin, end)}``: the calendar months (UTC) from ``start``'s to ``now``'s, oldest first, each
    clipped to [start, now]."""
    first = start.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    found = {}
    while first <= now:
        following = next_month(first)
        found[month_label(first)] = (max(first, start), min(following, now))
        first = following
    return found


def matching_nodes(filters):
    """The nodes the site, GPU model and node (id: a node's own page) filters select (a queryset), or None when none
    is set."""
    site, model, node = ((filters or {}).get(name) for name in ("site", "gpu_model", "node"))
    if not site and not model and not node:
        return None
    nodes = Node.objects.filter(pk=node) if node else Node.objects.all()
    if site:
        nodes = nodes.filter(site=site)
    if model:
        nodes = nodes.filter(Exists(GPU.objects.filter(node=OuterRef("pk"), gpu_model=model)))
    return nodes


def jobs(filters=None):
    """The Slurm jobs the filters select: team and partition by the job's fields, site and GPU model by the nodes it
    ran on."""
    selected = SlurmJob.objects.all()
    for name, field in JOB_FIELDS.items():
        if (filters or {}).get(name) not in (None, ""):
            selected = selected.filter(**{field: filters[name]})
    nodes = matching_nodes(filters)
    if nodes is not None:
        selected = selected.filter(Exists(SlurmJobNode.objects.filter(job=OuterRef("pk"), node__in=nodes)))
    return selected


def interruptions(filters=None, start=None, end=None):
    """The recorded interruptions that the filters select (team and partition: the run's; site and GPU model: its
    node's), that ended in [start, end] when given. Filters also take ``cause``, ``reason`` and ``node`` (id)."""
    filters = filters or {}
    rows = Interruption.objects.all()
    for name, field in {**JOB_FIELDS, "cause": "cause", "reason": "reason", "node": "node"}.items():
        if filters.get(name) not in (None, ""):
            rows = rows.filter(**{field: filters[name]})
    nodes = matching_nodes(filters)
    if nodes is not None:
        rows = rows.filter(node__in=nodes)
    if start is not None:
        rows = rows.filter(ended_at__gte=start)
    if end is not None:
        rows = rows.filter(ended_at__lte=end)
    return rows


MANY_IDS = 200  # above it, reading every row beats an IN list: the driver quotes each id (1,250: 10-30 ms)


def among(rows, field, ids):
    """``rows`` whose ``field`` is one of ``ids``, or all of them when ids are many (a fleet's nodes)."""
    ids = [pk for pk in ids if pk is not None]
    return rows if len(ids) > MANY_IDS else rows.filter(**{f"{field}__in": ids})


def node_models(node_ids):
    """{node id: GPU model id of its GPUs} (the lowest id when a node mixes models); one query."""
    return dict(among(GPU.objects.filter(node__isnull=False), "node_id", node_ids).values_list("node_id")
                .annotate(model=Min("gpu_model_id")).order_by())


class Regrouper:
    """Maps a node id to its group (site, node or model) and a group's key to its shown name, reading what it needs
    once per call."""

    def __init__(self, group_by, node_ids):
        self.group_by = group_by
        self.sites = dict(among(Node.objects, "pk", node_ids).values_list("pk", "site_id")) \
            if group_by == "site" else {}
        self.models = node_models(node_ids) if group_by == "gpu_model" else {}

    def of_node(self, node_id):
        if node_id is None:
            return None
        if self.group_by == "site":
            return self.sites.get(node_id)
        return self.models.get(node_id) if self.group_by == "gpu_model" else node_id

    def names(self, keys):
        table = {"site": (Site, "name"), "node": (Node, "hostname"), "gpu_model": (GPUModel, "name")}.get(
            self.group_by)
        found = dict(among(table[0].objects, "pk", keys).values_list("pk", table[1])) if table else {}
        return {key: found.get(key) or (key if table is None and key else NONE_LABEL) for key in keys}


def allocated(group_by, start, end, now, filters):
    """{team or partition (node id for the node groups): allocated GPU-hours} in [start, end], from the rollup kept
    at pull time (``allocation_rollup.allocated``: the figure of ``allocation.clipped_gpu_time``, on the filters'
    nodes only)."""
    totals = allocation_rollup.allocated(start, end, now, ALLOCATION_BY[group_by], **allocation_scope(filters))
    return {key: row["gpu_hours"] for key, row in totals.items()}


def allocation_scope(filters):
    """The filters as ``allocation_rollup`` takes them: team, partition and the nodes of the site and GPU model."""
    filters = filters or {}
    return {"account": filters.get("team"), "partition": filters.get("partition"), "nodes": matching_nodes(filters)}


def queue_wait_sums(group_by, start, end, filters, now=None):
    """{group key (node id for node groups): (GPUs × queue wait, GPUs × run) in hours} of the jobs that started in
    [start, end], their run inside it (running jobs until ``now``; one query)."""
    now = now or end
    started = jobs(filters).filter(start_time__gte=start, start_time__lte=end)
    if group_by == MONTH:  # keyed by the first moment of the month the job started in (UTC)
        rows, key, prefix, gpus = started, TruncMonth("start_time", tzinfo=UTC), "", "gpus"
    elif group_by in JOB_FIELDS:
        rows, key, prefix, gpus = started, JOB_FIELDS[group_by], "", "gpus"
    else:
        rows, key, prefix, gpus = SlurmJobNode.objects.filter(job__in=started), "node_id", "job__", "gpus"
    wait = ExpressionWrapper(Cast(gpus, IntegerField()) * jobstats_wait(prefix), output_field=DurationField())
    run = allocation.gpu_time_in_window(start, end, now, prefix, gpus)
    return {group: (allocation.hours(waited), allocation.hours(ran)) for group, waited, ran in (
        rows.values_list(key).annotate(waited=Sum(wait), ran=Sum(run)).order_by())}


def jobstats_wait(prefix):
    """A job's queue wait (``jobstats.queue_wait``), never negative, reached through ``prefix``."""
    if not prefix:
        return jobstats.queue_wait()
    return Greatest(ExpressionWrapper(F(f"{prefix}start_time") - F(f"{prefix}submit_time"),
                                      output_field=DurationField()), Value(timedelta(0)))


class Hours(Func):
    """A duration in hours (a float), computed by the database: an interval's seconds on PostgreSQL, the
    microseconds Django stores a duration as on SQLite (the demo's database)."""

    # date_part, not EXTRACT: EXTRACT computes in numeric (the goodput sums' CASE expressions took 1.6 times as long)
    template = "date_part('epoch', %(expressions)s) / 3600"
    output_field = FloatField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="CAST(%(expressions)s AS REAL) / 3600000000", **extra)


def hours_after(moment):
    """Hours from ``moment`` to the interruption's end (negative before it), as an expression."""
    return Hours(ExpressionWrapper(F("ended_at") - Value(moment), output_field=DurationField()))


def lost_run(begin, end=None, checkpoint=False, last=False):
    """An interruption's lost work inside [begin, end] (``end`` None: until it ended), as an expression: the recorded
    estimate (GPU-hours since its last checkpoint), or with ``checkpoint`` its run since the last checkpoint at the
    default interval (``since_checkpoint``). The lost run is its last lost / GPUs hours: GPUs × the part of those
    hours inside the window. Without GPUs it cannot be placed in time: all of it in the window it ended in ([begin,
    end), or [begin, end] for the ``last`` window of a range; ``end`` None: all of it), so that windows add up."""
    gpus, recorded = F("gpus"), Coalesce(F("lost_run_gpu_hours"), Value(0.0))
    # The run since the checkpoint written once: each repetition of an expression is computed again for every
    # interruption. It is never negative; a recorded estimate may be (a run that ended before it started).
    per_gpu = since_checkpoint() if checkpoint else recorded / NullIf(gpus, Value(0))
    ran = Least(per_gpu, hours_after(begin))
    without_gpus = Value(0.0) if checkpoint else recorded  # the run since the checkpoint × 0 GPUs: nothing
    if end is not None:
        ran = ran - Greatest(hours_after(end), Value(0.0))
        ended_inside = Q(ended_at__gte=begin, **{"ended_at__lte" if last else "ended_at__lt": end})
        without_gpus = Case(When(ended_inside, then=without_gpus), default=Value(0.0), output_field=FloatField())
    inside = Greatest(ran, Value(0.0)) * gpus
    return Case(When(gpus=0, then=without_gpus), default=inside if checkpoint else Least(recorded, inside),
                output_field=FloatField())


LOST_WAIT = Coalesce(F("lost_wait_gpu_hours"), Value(0.0))  # an interruption's restart wait × GPUs
# The infrastructure's reasons that are a GPU's fault (an XID, ECC errors); the others are nodes' (NODE_FAIL,
# BOOT_FAIL, a move to degraded).
GPU_FAULTS = (attribution.XID_79, attribution.ECC, attribution.XID, attribution.ECC_COUNTER)


def since_checkpoint():
    """The user's and the scheduler's interruptions record no estimate: their run since the last checkpoint at the
    default interval (``attribution.since_checkpoint``: run mod interval), per GPU, as an expression."""
    interval = settings.GOODPUT_CHECKPOINT_MINUTES / 60
    run = Greatest(Hours(ExpressionWrapper(F("ended_at") - F("started_at"), output_field=DurationField())),
                   Value(0.0))
    if interval <= 0:
        return run
    return run - Value(interval) * Floor(run / Value(interval))


def of_cause(expression, cause=None, reasons=None):
    """``expression`` for the interruptions of ``cause`` (and of ``reasons``), 0 for the others."""
    condition = {"cause": cause} if cause else {"reason__in": reasons}
    return Case(When(**condition, then=expression), default=Value(0.0), output_field=FloatField())


def run_values(begin, end=None, last=False):
    """What ``piece_sums`` sums of every interruption, its lost work inside [begin, end] (``lost_run``): the
    infrastructure's (``run``; priced), of it that of GPU faults (``gpu_run``), and the work the scheduler's
    (``preempted``) and the user's (``user``) interruptions lost since their last checkpoint."""
    return {"run": of_cause(lost_run(begin, end, last=last), attribution.INFRASTRUCTURE),
            "gpu_run": of_cause(lost_run(begin, end, last=last), reasons=GPU_FAULTS),
            "preempted": of_cause(lost_run(begin, end, True, last), attribution.SCHEDULER),
            "user": of_cause(lost_run(begin, end, True, last), attribution.USER)}


# The restart waits (counted where the interruption ended): the infrastructure's (priced), of them the GPU faults'.
WAIT_VALUES = {"wait": of_cause(LOST_WAIT, attribution.INFRASTRUCTURE), "gpu_wait": of_cause(LOST_WAIT,
                                                                                            reasons=GPU_FAULTS)}
RUNS = ("run", "gpu_run", "preempted", "user")  # the names of ``run_values``, in its order


# An interruption (``i``) split over its job's nodes (``a``) by the GPUs the job held on each (evenly where it held
# none), or one piece on its own node when the job lists none (``a`` null): each piece's node and share of the
# interruption. The shares sum to 1: no grouping loses or adds lost work.
PIECE_NODE = "CASE WHEN a.id IS NULL THEN i.node_id ELSE a.node_id END"
PIECE_SHARE = ("CASE WHEN a.id IS NULL THEN 1.0 ELSE COALESCE(CAST(a.gpus AS DOUBLE PRECISION) "
               "/ NULLIF(SUM(a.gpus) OVER (PARTITION BY i.id), 0), 1.0 / COUNT(*) OVER (PARTITION BY i.id)) END")


def piece_sums(rows, values, key=None, costs=None):
    """The sums of the ``values`` (name: expression on an interruption) of the pieces of the infrastructure's
    interruptions ``rows``, each × the piece's share, per value of the interruption's ``key`` (an expression; None: per
    piece's node) and of the node's cost per GPU-hour (``inventory.costs``; null without one): rows ``(key, cost,
    *sums)``. One query: the ORM's rows of the interruptions, split and summed in SQL written here (the ORM joins
    ``SlurmJobNode`` only through the job and would compute each piece's share again in every sum). ``costs``:
    ``gpu_hour_costs()`` where already read."""
    columns = {"key": key} if key is not None else {}
    rows = rows.order_by().values("id", "job_id", "node_id", **columns, **values)
    sql, params = rows.query.get_compiler(rows.db).as_sql()
    connection = connections[rows.db]
    quote = connection.ops.quote_name
    nodes_at = defaultdict(list)
    for node_id, cost in (gpu_hour_costs() if costs is None else costs).items():
        nodes_at[float(cost)].append(node_id)
    # Node ids written as integers: a parameter each costs the driver more than the query (1,250: 10-30 ms).
    whens = " ".join(f"WHEN p.piece_node IN ({', '.join(str(int(pk)) for pk in ids)}) "
                     "THEN CAST(%s AS DOUBLE PRECISION)" for ids in nodes_at.values())
    cost_sql = f"CASE {whens} END" if nodes_at else "CAST(NULL AS DOUBLE PRECISION)"
    if key is not None and not nodes_at:
        # Grouped by the interruption's own field and every node priced alike: its pieces' shares sum to 1, so the
        # split would change nothing (it cost three times this scan on 27,000 interruptions).
        sums = ", ".join(f"SUM(i.{quote(name)})" for name in values)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT i.{quote('key')}, {cost_sql}, {sums} FROM ({sql}) i GROUP BY 1, 2", params)
            return cursor.fetchall()
    sums = ", ".join(f"SUM(p.{quote(name)} * p.share)" for name in values)
    pieces = (f"SELECT i.*, {PIECE_NODE} AS piece_node, {PIECE_SHARE} AS share FROM ({sql}) i "
              f"LEFT JOIN {quote(SlurmJobNode._meta.db_table)} a ON a.job_id = i.job_id")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {'p.' + quote('key') if key is not None else 'p.piece_node'}, {cost_sql}, {sums} "
                       f"FROM ({pieces}) p GROUP BY 1, 2",
                       (*nodes_at, *params))
        return cursor.fetchall()


def add_lost(group, run, wait, cost, **others):
    """Adds lost work and restart wait (null: none) priced at ``cost`` (None: at ``IDLE_GPU_HOUR_COST``) to a
    group's sums, and the ``UNPRICED`` sums as they are."""
    for name, value in others.items():
        group[f"lost_{name}"] += value or 0.0
    run, wait = run or 0.0, wait or 0.0
    group["lost_run"] += run
    group["lost_wait"] += wait
    group["lost_cost"] += (run + wait) * (settings.IDLE_GPU_HOUR_COST if cost is None else cost)
    if cost is None:
        group["lost_at_default"] += run + wait


def cause_counts(rows, key):
    """{group: {cause: interruptions}} of ``rows`` per value of the expression ``key`` (one query)."""
    found = defaultdict(lambda: defaultdict(float))
    for group, cause, count in (rows.annotate(group=key).values_list("group", "cause").annotate(n=Count("pk"))
                                .order_by()):
        found[group][cause] += count
    return found


def interruption_sums(rows, key, start):
    """``{group: {cause: interruptions, "lost_run", "lost_wait", "lost_cost", "lost_at_default", "lost_gpu_fault",
    "lost_preempted", "lost_user"}}`` of the interruptions ``rows``, grouped by their field ``key`` (``node_id``: the
    node of the fault for the counts, of each piece for the lost GPU-hours), their lost work inside [start, their
    end]. Two queries and the costs' (one where the key is a job's field and no node has a contract cost)."""
    values, costs = {**run_values(start), **WAIT_VALUES}, gpu_hour_costs()
    if key != "node_id" and not costs:
        # Every node priced alike: the split over the job's nodes changes nothing (``piece_sums``), so one scan
        # counts and sums per group and cause.
        found = defaultdict(lambda: defaultdict(float))
        for group, cause, count, run, gpu_run, preempted, user, wait, gpu_wait in (
                rows.values_list(key, "cause").annotate(n=Count("pk"), **{n: Sum(v) for n, v in values.items()})
                .order_by()):
            found[group][cause] += count
            add_lost(found[group], run, wait, None, gpu_run=gpu_run, gpu_wait=gpu_wait, preempted=preempted,
                     user=user)
        return found
    found = cause_counts(rows, F(key))
    if found:
        by = None if key == "node_id" else F(key)
        for group, cost, run, gpu_run, preempted, user, wait, gpu_wait in piece_sums(rows, values, by, costs):
            add_lost(found[group], run, wait, cost, gpu_run=gpu_run, gpu_wait=gpu_wait, preempted=preempted,
                     user=user)
    return found


def interruption_sums_by_month(rows, windows):
    """``interruption_sums`` per calendar month (``windows``: ``months``): counted, and their restart wait, in the
    month they ended; their lost work split over the months it ran in. Two queries and the costs'."""
    found = {label: defaultdict(float) for label in windows}
    for month, counts in cause_counts(rows, TruncMonth("ended_at", tzinfo=UTC)).items():
        found[month_label(month)].update(counts)
    if any(group for group in found.values()):
        # Which month it ended in: the last window that begins before its end.
        ended_in = Case(*(When(ended_at__gte=begin, then=Value(index))
                          for index, (begin, _) in reversed(list(enumerate(windows.values())))),
                        output_field=IntegerField())
        runs = {f"{name}{index}": value for index, (begin, end) in enumerate(windows.values())
                for name, value in run_values(begin, end, index == len(windows) - 1).items()}
        groups = list(found.values())
        for ended, cost, *sums, wait, gpu_wait in piece_sums(rows, {**runs, **WAIT_VALUES}, ended_in):
            for index, group in enumerate(groups):  # a month's sums, in the order of ``runs``
                run, gpu_run, preempted, user = sums[index * len(RUNS):(index + 1) * len(RUNS)]
                waits = (wait, gpu_wait) if index == ended else (0.0, 0.0)  # counted in the month it ended
                add_lost(group, run, waits[0], cost, gpu_run=gpu_run, gpu_wait=waits[1], preempted=preempted,
                         user=user)
    return found


def goodput_by(group_by, range_key, filters=None, now=None, gpus=None, job_hours=24.0):
    """The goodput figures (module docstring) per group of ``group_by`` (team, partition, site, gpu_model, node;
    ``month``: ``goodput_by_month``)
    over ``range_key``: ``[{"key", "name", "allocated_gpu_hours", "interruptions", "user_interruptions",
    "scheduler_interruptions", "interruptions_per_1000_gpu_days", "mtbi_hours", "expected_restarts",
    "lost_gpu_hours", "lost_run_gpu_hours", "lost_wait_gpu_hours", "lost_cost", "lost_gpu_hours_at_default_cost",
    "queue_wait_share", "goodput_ratio", and the losses by cause: "lost_gpu_fault_gpu_hours",
    "lost_node_fault_gpu_hours", "lost_preemption_gpu_hours", "lost_user_gpu_hours", "queue_wait_gpu_hours"}]``, most
    lost GPU-hours first. ``gpus``: the N of the MTBI (``settings.GOODPUT_MTBI_GPUS``). About ten queries whatever
    the fleet and its interruptions."""
    check_group(group_by)
    now = now or timezone.now()
    span = get_range(range_key)
    return goodput_between(group_by, span.start(now), span.end(now), filters, now, gpus, job_hours)


def goodput_between(group_by, start, end, filters=None, now=None, gpus=None, job_hours=24.0):
    """``goodput_by`` over [start, end] (jobs still running count until ``now``)."""
    check_group(group_by)
    now = now or timezone.now()
    gpus = gpus or settings.GOODPUT_MTBI_GPUS
    if group_by == MONTH:
        return goodput_by_month(start, end, now, filters, gpus, job_hours)
    node_group = group_by in NODE_GROUPS
    allocated_hours = allocated(group_by, start, end, now, filters)
    waits = queue_wait_sums(group_by, start, end, filters, now)
    selected = matching_nodes(filters)
    if node_group and selected is not None:  # a job's other nodes, outside the filters, are no group of theirs
        kept = set(selected.values_list("pk", flat=True))
        allocated_hours = {key: value for key, value in allocated_hours.items() if key in kept}
        waits = {key: value for key, value in waits.items() if key in kept}
    else:
        kept = None
    sums = interruption_sums(interruptions(filters, start, end), "node_id" if node_group else JOB_FIELDS[group_by],
                             start)
    if kept is not None:
        sums = {key: value for key, value in sums.items() if key in kept}
    regroup = Regrouper(group_by, {*allocated_hours, *waits, *sums} if node_group else ())

    def group_of(key):  # sums of the node groups are per node
        return regroup.of_node(key) if node_group else key

    groups = defaultdict(lambda: defaultdict(float))
    for key, hours in allocated_hours.items():
        groups[group_of(key)]["allocated"] += hours
    for key, (waited, ran) in waits.items():
        group = groups[group_of(key)]
        group["waited"] += waited
        group["ran"] += ran
    for key, counted in sums.items():
        group = groups[group_of(key)]
        for name, value in counted.items():
            group[name] += value
    names = regroup.names(list(groups)) if node_group else {key: key or NONE_LABEL for key in groups}
    result = [figures(key, names[key], group, gpus, job_hours) for key, group in groups.items()]
    result.sort(key=lambda g: (-g["lost_gpu_hours"], str(g["name"])))
    return result


def goodput_by_month(start, end, now, filters, gpus, job_hours):
    """``goodput_by`` per calendar month (module docstring), oldest first, every month of the range shown. A fixed
    number of queries whatever the fleet: each month's allocation and lost GPU-hours are sums of the same scan."""
    windows = months(start, end)
    allocated_hours = allocation_rollup.allocated_in_windows(windows, now, **allocation_scope(filters))
    groups = interruption_sums_by_month(interruptions(filters, start, end), windows)
    for label, gpu_hours in allocated_hours.items():
        groups[label]["allocated"] = gpu_hours
    for month, (waited, ran) in queue_wait_sums(MONTH, start, end, filters, now).items():
        groups[month_label(month)]["waited"] += waited
        groups[month_label(month)]["ran"] += ran
    return [figures(label, label, group, gpus, job_hours) for label, group in groups.items()]


TICK = timedelta(microseconds=1)  # a month's part ends at a midnight: its last day is the day before


def local_months(start, end):
    """``{"2026-11": (begin, finish)}``: the calendar months from ``start``'s to ``end``'s, oldest first, cut at the
    local midnights of the calendar ranges (``calendar_month``: a month's range, ``?range=2026-11``), each clipped to
    [start, end]."""
    day, found = timezone.localdate(start).replace(day=1), {}
    while (month := calendar_month(day))[0] < end:
        found[f"{day:%Y-%m}"] = (max(month[0], start), min(month[1], end))
        day = timezone.localdate(month[1])
    return found


def goodput_by_month_of(group_by, range_key, filters=None, now=None, gpus=None, job_hours=24.0):
    """``goodput_by`` split by calendar month (``local_months``): one row per group and month (``month``:
    "2026-11"), oldest month first, in each most lost GPU-hours first. Each month's rows are ``goodput_between``
    over its part of the range: for a whole month, the rows of ``goodput_by(group_by, "2026-11")``. About ten
    queries a month."""
    check_group(group_by)
    if group_by == MONTH:
        raise UnknownParameter("Months are split by month already: group by team, partition, site, GPU model or "
                               "node.")
    now = now or timezone.now()
    span = get_range(range_key)
    return [{**row, "month": label, "range": f"{timezone.localdate(begin)}..{timezone.localdate(finish - TICK)}"}
            for label, (begin, finish) in local_months(span.start(now), span.end(now)).items()
            for row in goodput_between(group_by, begin, finish, filters, now, gpus, job_hours)]


def figures(key, name, group, gpus, job_hours):
    """One group's figures from its sums."""
    allocated_hours, count = group["allocated"], int(group[attribution.INFRASTRUCTURE])
    lost = group["lost_run"] + group["lost_wait"]
    mtbi = attribution.mtbi_hours(allocated_hours, count, gpus)
    waited_and_ran = group["waited"] + group["ran"]
    gpu_fault = group["lost_gpu_run"] + group["lost_gpu_wait"]
    return {
        "key": key, "name": name,
        "allocated_gpu_hours": round(allocated_hours, 2),
        "interruptions": count,
        "user_interruptions": int(group[attribution.USER]),
        "scheduler_interruptions": int(group[attribution.SCHEDULER]),
        "interruptions_per_1000_gpu_days": rounded(attribution.per_1000_gpu_days(count, allocated_hours)),
        "mtbi_hours": rounded(mtbi),
        "expected_restarts": rounded(attribution.expected_restarts(job_hours, mtbi), 4),
        "lost_gpu_hours": round(lost, 2),
        "lost_run_gpu_hours": round(group["lost_run"], 2),
        "lost_wait_gpu_hours": round(group["lost_wait"], 2),
        "lost_cost": round(group["lost_cost"], 2),
        "lost_gpu_hours_at_default_cost": round(group["lost_at_default"], 2),
        "queue_wait_share": rounded(group["waited"] / waited_and_ran if waited_and_ran else None, 4),
        # The losses by cause (the loss chart): the infrastructure's split into GPU faults (XID, ECC) and the
        # nodes' (failures, degraded); the work the scheduler's and the user's interruptions lost since their last
        # checkpoint; GPUs × the queue wait of the jobs that started (time lost to the team, not to the fleet).
        "lost_gpu_fault_gpu_hours": round(gpu_fault, 2),
        "lost_node_fault_gpu_hours": round(max(lost - gpu_fault, 0.0), 2),
        "lost_preemption_gpu_hours": round(group["lost_preempted"], 2),
        "lost_user_gpu_hours": round(group["lost_user"], 2),
        "queue_wait_gpu_hours": round(group["waited"], 2),
        "goodput_ratio": rounded(attribution.goodput_ratio(allocated_hours, group["lost_run"]), 4),
    }


def repeat_offenders(gpu_model, range_key, minimum, now=None):
    """The nodes of ``gpu_model`` (id) with at least ``minimum`` infrastructure interruptions in the range, worst first
    (most interruptions, then most lost GPU-hours): their ``goodput_by("node", …)`` row with ``node`` (the Node),
    ``main_reason`` (the most frequent reason, with its XID), ``main_reason_count`` and ``repair_hours`` (in repair
    during the range, from the lifecycle records). A fixed number of queries however many nodes."""
    now = now or timezone.now()
    start = get_range(range_key).start(now)
    filters = {"gpu_model": gpu_model}
    rows = [g for g in goodput_by("node", range_key, filters, now=now)
            if g["key"] is not None and g["interruptions"] >= minimum]
    if not rows:
        return []
    nodes = Node.objects.in_bulk([g["key"] for g in rows])
    reasons = {}
    for node_id, reason, code, count in (
            interruptions({**filters, "cause": attribution.INFRASTRUCTURE}, start, now).filter(node_id__in=nodes)
            .values_list("node_id", "reason", "xid_event__code").annotate(n=Count("pk")).order_by("-n", "reason")):
        reasons.setdefault(node_id, (reason, code, count))  # the most frequent first
    repair = lifecycle.hours_in_state_of(list(nodes.values()), LifecycleState.IN_REPAIR, start, now)
    for row in rows:
        reason, code, count = reasons.get(row["key"], (None, None, 0))
        words = attribution.REASONS.get(reason, "")
        if code is not None and f"XID {code}" not in words:
            words = f"{words} (XID {code})"
        row.update(node=nodes[row["key"]], main_reason=words, main_reason_count=count,
                   repair_hours=repair[row["key"]])
    rows.sort(key=lambda g: (-g["interruptions"], -g["lost_gpu_hours"], g["name"]))
    return rows


def rounded(value, digits=2):
    return None if value is None else round(value, digits)


def totals(groups):
    """The lost GPU-hours and their pricing over the groups of one grouping, for ``cost_basis``."""
    return {"lost_gpu_hours": sum(g["lost_gpu_hours"] for g in groups),
            "lost_gpu_hours_at_default_cost": sum(g["lost_gpu_hours_at_default_cost"] for g in groups)}


def cost_basis(groups):
    """What the lost cost priced, in words (``telemetry.queries.idle_cost_basis``'s, for lost GPU-hours)."""
    figures_ = totals(groups)
    if not figures_["lost_gpu_hours"]:
        return "no lost GPU-hours to price"
    return idle_cost_basis(figures_, priced="lost_gpu_hours", noun="lost GPU-hours")
