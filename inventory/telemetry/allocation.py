"""Slurm allocations per node, and allocated GPU-hours that never exceed what the nodes hold.

A node cannot hand out more GPU-hours than its GPUs × hours. Accounting can say otherwise — a job counted
twice after a requeue, a clock that jumped, two jobs on one GPU by a misconfiguration, a job Slurm never
closed — and one impossible total is enough for a manager to stop trusting every chart. So:

- when jobs are pulled, each job's host list is expanded into one ``SlurmJobNode`` row per host with the
  GPUs it holds there (its GPUs spread evenly: accounting says no more), matched to the inventory node by
  host name (``matching.host_key``: FQDN or short name, any case);
- ``rebalance`` sweeps the jobs of the nodes a pull touched in time order. Wherever a node's jobs held more
  GPUs than it has, it records for each of them the excess (``AllocationExcess``: its GPUs × (held − the
  node's GPUs) / held, from when to when) and names the jobs for the source's data-quality panel;
- ``clipped_gpu_time`` sums the jobs' GPU-hours in a window and subtracts the excess inside it. Per node
  that is exactly the GPU-hours its GPUs could give at each instant, shared among the jobs that claimed
  them, so every figure built on it (per team, partition, cluster, node, site) stays within the GPUs ×
  hours of the nodes it covers, for any window.
  Hosts the inventory does not know cannot be checked: their jobs count as reported, and the panel says so.
  A job without a host list (or rows written before allocations were recorded) counts as reported too.
"""

from collections import defaultdict
from datetime import timedelta

from django.db.models import (
    BooleanField,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    IntegerField,
    Min,
    Q,
    Sum,
    Value,
)
from django.db.models.functions import Cast, Coalesce, Greatest, Least

from inventory.models import GPU

from .matching import NodeMatcher
from .models import AllocationExcess, SlurmJobNode
from .rollups import floor_hour

ZERO = timedelta(0)


def spread(gpus, hosts):
    """``gpus`` spread over ``hosts`` nodes as evenly as whole GPUs allow: 10 over 3 → [4, 3, 3]."""
    base, extra = divmod(gpus, hosts)
    return [base + (1 if position < extra else 0) for position in range(hosts)]


def save_allocations(jobs, hosts_of, quality=None):
    """Replace the per-node rows of ``jobs`` (saved ``SlurmJob`` rows) from their expanded host lists.

    ``hosts_of``: (job id, submit time) of a run → host names. Jobs on hosts the inventory does not know are
    counted in ``quality`` (kind ``job_unknown_host``). Returns the ids of the inventory nodes the jobs ran on."""
    matcher = NodeMatcher()
    rows, node_ids = [], set()
    for job in jobs:
        hosts = hosts_of.get((job.job_id, job.submit_time)) or []
        if not hosts or job.start_time is None:
            continue
        unknown = []
        for host, gpus in zip(hosts, spread(job.gpus, len(hosts)), strict=True):
            node_id = matcher.node_id(host)
            if node_id is None:
                unknown.append(host)
            else:
                node_ids.add(node_id)
            rows.append(SlurmJobNode(job_id=job.pk, host=host[:100], node_id=node_id, gpus=gpus))
        if unknown and quality is not None and job.gpus:
            quality.add("job_unknown_host", f"{job.job_id}: {', '.join(unknown[:5])}"
                        + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
    pks = [job.pk for job in jobs]
    for first in range(0, len(pks), 2000):
        SlurmJobNode.objects.filter(job_id__in=pks[first:first + 2000]).delete()
    SlurmJobNode.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)  # a host listed twice: once
    return node_ids


def earlier_runs(source, job_ids):
    """Node id → the earliest start of the stored runs of these jobs (of ``source``) on it, before an answer
    replaces them."""
    earliest = {}
    for first in range(0, len(job_ids), 2000):
        rows = SlurmJobNode.objects.filter(job__source=source, job__job_id__in=job_ids[first:first + 2000],
                                           node__isnull=False)
        for node_id, start in rows.values_list("node_id").annotate(start=Min("job__start_time")).order_by():
            earliest[node_id] = min(start, earliest.get(node_id, start))
    return earliest


def run_end(now, prefix=""):
    """Where a job's run ends for the figures: its end, else the last moment the source saw it running, else
    ``now`` (rows from before ``running_until`` was recorded); never after ``now``."""
    return Least(Coalesce(F(f"{prefix}end_time"), F(f"{prefix}running_until"), Value(now)), Value(now))


def gpu_time_in_window(start, end, now, prefix="", gpus="gpus"):
    """GPUs × the part of the job's run inside [start, end], as a duration (one SQL expression). ``prefix``
    reaches the job from a related row (``job__``), ``gpus`` names the GPU count to multiply by.

    The GPU count is cast to a plain integer because SQLite's duration arithmetic refuses other field types.
    """
    begin = Greatest(F(f"{prefix}start_time"), Value(start))
    finish = Least(run_end(now, prefix), Value(end))
    overlap = Greatest(ExpressionWrapper(finish - begin, output_field=DurationField()), Value(ZERO))
    return ExpressionWrapper(Cast(gpus, IntegerField()) * overlap, output_field=DurationField())


def overlaps(start, end, prefix=""):
    """The condition for a job (or a row reached through ``prefix``) with GPUs whose run may overlap [start, end]."""
    def field(name):
        return f"{prefix}{name}"

    still_running = Q(**{field("end_time__isnull"): True}) & (
        Q(**{field("running_until__isnull"): True}) | Q(**{field("running_until__gt"): start}))
    return (still_running | Q(**{field("end_time__gt"): start})) & Q(**{field("start_time__lt"): end,
                                                                         field("gpus__gt"): 0})


def in_window(queryset, start, end, prefix=""):
    """Jobs (or rows reached through ``prefix``) with GPUs whose run may overlap [start, end]."""
    return queryset.filter(overlaps(start, end, prefix))


def hours(duration):
    return 0.0 if duration is None else duration.total_seconds() / 3600


def node_capacity(node_ids):
    """Node id → GPUs installed in it (one query)."""
    return dict(GPU.objects.filter(node_id__in=node_ids).values_list("node_id").annotate(n=Count("pk")).order_by())


def multi_node(prefix=""):
    """True for a job on more than one node (an annotation)."""
    return ExpressionWrapper(Q(**{f"{prefix}node_count__gt": 1}), output_field=BooleanField())


# Groups that are not fields of the job but of the node it ran on (jobs without per-node rows: None).
NODE_GROUPS = {"node": "node_id", "site": "node__site_id"}


def clipped_gpu_time(queryset, start, end, now, by, nodes=None):
    """Allocated GPU-hours in [start, end] of the jobs of ``queryset`` per value of their field ``by`` (or
    per ``node`` / ``site`` they ran on): ``{group: {"gpu_hours", "multi_node_gpu_hours"}}`` (three queries),
    less the GPU-hours their nodes could not have given (module docstring). ``nodes`` (ids or a queryset): only
    the GPU-hours on those nodes (a job without per-node rows is on no known node: it counts nowhere)."""
    return clipped_gpu_time_in_pieces(queryset, [(start, end, None)], now, by, nodes)


def clipped_gpu_time_in_pieces(queryset, pieces, now, by, nodes=None):
    """``clipped_gpu_time`` summed over ``pieces``, disjoint spans ``(start, end, which)``: ``which`` is None (every
    job) or ``(prefix) -> Q``, a condition on the job that only some jobs count in that span. Three queries
    however many pieces; only the jobs that overlap a piece are read (``allocation_rollup`` asks for the hour
    still open and the runs its hours do not hold). ``by`` may be a tuple of groups: keys are then tuples."""
    totals = defaultdict(lambda: {"gpu_hours": 0.0, "multi_node_gpu_hours": 0.0})
    for groups in clipped_gpu_time_per_piece(queryset, pieces, now, by, nodes).values():
        for key, row in groups.items():
            for name, value in row.items():
                totals[key][name] += value
    return {key: {name: max(0.0, value) for name, value in row.items()} for key, row in totals.items()}


def clipped_gpu_time_per_piece(queryset, pieces, now, by, nodes=None):
    """``clipped_gpu_time_in_pieces`` piece by piece: ``{index of the piece: {group: row}}``, not yet floored at
    zero (pieces that overlap, such as the windows of several plans, are counted each on its own). Empty pieces
    count nothing."""
    pieces = [(start, end, which) if start < end else (start, start, None) for start, end, which in pieces]
    names = by if isinstance(by, tuple) else (by,)

    def fields(prefix):
        return [NODE_GROUPS.get(name, f"{prefix}{name}") for name in names]

    def key_of(row):
        return tuple(row[:len(names)]) if isinstance(by, tuple) else row[0]

    totals = defaultdict(lambda: defaultdict(lambda: {"gpu_hours": 0.0, "multi_node_gpu_hours": 0.0}))
    if not any(start < end for start, end, _ in pieces):
        return {}

    def add(piece, group, multi, value):
        totals[piece][group]["gpu_hours"] += value
        if multi:
            totals[piece][group]["multi_node_gpu_hours"] += value

    def counted(index, prefix=""):
        which = pieces[index][2]
        return which(prefix) if which else Q()

    any_piece = Q()
    for index, (start, end, _) in enumerate(pieces):
        if start < end:
            any_piece |= overlaps(start, end) & counted(index)
    jobs = queryset.filter(any_piece)
    per_node = SlurmJobNode.objects.filter(job__in=jobs)
    if nodes is not None:
        per_node = per_node.filter(node__in=nodes)

    def sums(prefix, gpus):
        return {f"t{index}": Sum(gpu_time_in_window(start, end, now, prefix, gpus), filter=counted(index, prefix))
                for index, (start, end, _) in enumerate(pieces)}

    for row in (per_node.annotate(multi=multi_node("job__")).values_list(*fields("job__"), "multi")
                .annotate(**sums("job__", "gpus")).order_by()):
        for piece, time in enumerate(row[len(names) + 1:]):
            add(piece, key_of(row), row[len(names)], hours(time))
    if nodes is None:
        groups = {f"g{index}": none_or(name) for index, name in enumerate(names)}
        for row in (  # jobs without per-node rows count as reported
                jobs.filter(allocations__isnull=True).annotate(multi=multi_node(), **groups)
                .values_list(*groups, "multi").annotate(**sums("", "gpus")).order_by()):
            for piece, time in enumerate(row[len(names) + 1:]):
                add(piece, key_of(row), row[len(names)], hours(time))
    excess = AllocationExcess.objects.filter(allocation__job__in=jobs)
    if nodes is not None:
        excess = excess.filter(node__in=nodes)
    limit = min(max(end for _, end, _ in pieces), now)
    first = min(start for start, _, _ in pieces)
    counts_in = {f"c{index}": ExpressionWrapper(counted(index, "allocation__job__") if which else Value(True),
                                                output_field=BooleanField())
                 for index, (_, _, which) in enumerate(pieces)}
    for row in (  # rare: only where nodes were overbooked
            excess.filter(start__lt=limit, end__gt=first).annotate(multi=multi_node("allocation__job__"), **counts_in)
            .values_list(*fields("allocation__job__"), "multi", "start", "end", "gpus", *counts_in)):
        multi, begin, finish, gpus, *counts = row[len(names):]
        for piece, ((start, end, _), count) in enumerate(zip(pieces, counts, strict=True)):
            overlap = min(finish, end, now) - max(begin, start)
            if count and overlap > ZERO:
                add(piece, key_of(row), multi, -gpus * hours(overlap))
    return totals


def held_by_node_hour(allocations, start, end, now):
    """``{(node id, hour): GPU-hours held}``: how long the jobs of ``allocations`` (``SlurmJobNode`` rows)
    held GPUs on each node in each hour of [start, end), from when they started to where their run ends
    (``run_end``) (one query). A job of ten minutes holds its GPUs a sixth of the hour it ran in. Not clipped
    to the node's GPUs: callers cap each hour at the GPUs that reported in it."""
    held = defaultdict(float)
    hour_length = timedelta(hours=1)
    for node_id, gpus, begin, finish in (
            in_window(allocations.filter(node__isnull=False, gpus__gt=0), start, end, prefix="job__")
            .annotate(finish=run_end(now, "job__")).values_list("node_id", "gpus", "job__start_time", "finish")):
        begin, finish = max(begin, start), min(finish, end)
        hour = floor_hour(begin)
        while hour < finish:
            held[(node_id, hour)] += gpus * hours(min(finish, hour + hour_length) - max(begin, hour))
            hour += hour_length
    return held


def none_or(by):
    """The job's field ``by``, or None for the node groups (a job without per-node rows is on no known node)."""
    return Value(None, output_field=IntegerField()) if by in NODE_GROUPS else F(by)


def rebalance(node_ids, since, now):
    """Recompute the excess of the nodes ``node_ids`` from ``since`` on (earlier excess ends at ``since``)
    by sweeping their jobs' starts and ends in time order; returns the jobs that held GPUs on a node while it
    was overbooked: ``{allocation pk: (job id, host, most GPUs held, node's GPUs)}``."""
    capacity = node_capacity(node_ids)
    runs = defaultdict(list)
    for run in (in_window(SlurmJobNode.objects.filter(node_id__in=node_ids), since, now, prefix="job__")
                .annotate(finish=run_end(now, "job__"))
                .values_list("pk", "job__job_id", "host", "node_id", "gpus", "job__start_time", "finish")):
        pk, job_id, host, node_id, gpus, begin, finish = run
        begin = max(begin, since)
        if finish > begin and gpus:
            runs[node_id].append((pk, job_id, host, gpus, begin, finish))
    AllocationExcess.objects.filter(node_id__in=node_ids, start__gte=since).delete()
    AllocationExcess.objects.filter(node_id__in=node_ids, end__gt=since).update(end=since)
    found, excess = {}, []
    for node_id, jobs in runs.items():
        limit = capacity.get(node_id, 0)
        for begin, finish, active in segments(jobs):
            held = sum(job[3] for job in active)
            if held <= limit:
                continue
            for job in active:
                excess.append(AllocationExcess(allocation_id=job[0], node_id=node_id, start=begin, end=finish,
                                               gpus=job[3] * (held - limit) / held))
                worst = found.get(job[0], (0, 0, 0, 0))[2]
                if held > worst:
                    found[job[0]] = (job[1], job[2], held, limit)
    AllocationExcess.objects.bulk_create(excess, batch_size=2000)
    return found


def segments(jobs):
    """``jobs``: ``(…, gpus, begin, finish)`` tuples of one node → ``(begin, finish, running jobs)`` for every
    stretch of time between two consecutive starts or ends, in time order."""
    moments = sorted({moment for job in jobs for moment in job[4:6]})
    ordered = sorted(jobs, key=lambda job: job[4])
    active, position = [], 0
    for begin, finish in zip(moments, moments[1:], strict=False):
        while position < len(ordered) and ordered[position][4] <= begin:
            active.append(ordered[position])
            position += 1
        active = [job for job in active if job[5] > begin]
        yield begin, finish, active
