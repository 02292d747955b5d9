"""Allocated GPU-hours kept when the jobs are pulled, so that no page scans the job history.

``allocation.clipped_gpu_time`` is the definition: a job's GPUs × the part of its run in a window, per node, less
what an overbooked node could not have given. Summed per hour it is ``AllocationHourly`` (per node, team, partition,
single- or multi-node), and per day over the nodes ``AllocationDaily``:

- ``refresh(node_ids, source_ids, since, until)`` recomputes the hours of [since, until) of those nodes (and the
  rows of those sources' jobs on no known node) and the days they fall in: a DELETE and an INSERT under the nodes'
  and sources' row locks, so a retried pull replaces its rows (never adds to them), two pulls of the same nodes take
  turns and pulls of other nodes do not wait. The ingest calls it after ``rebalance``; saving or deleting one job
  or per-node row through the ORM (the admin, the tests) calls it through signals.
- ``allocated(start, end, now, by, …)`` reads it back: whole days from the daily rows (the team and partition
  figures), whole hours from the hourly rows, and from the jobs themselves only the hour still open and the runs
  whose end depends on the reader's clock (running, never seen running: ``unsettled``). Equal to
  ``clipped_gpu_time`` over the same jobs for any window (``tests/inventory/telemetry/test_allocation_rollup.py``).

Hours are UTC hours; days are the portal's local days (``TIME_ZONE``), as the utilization ranges cut them.
"""

from collections import defaultdict
from datetime import UTC, timedelta

from django.db import connections, router, transaction
from django.db.models import Count, Min, Q, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from inventory.models import Node
from portal.db import bulk_insert

from . import allocation
from .models import AllocationDaily, AllocationExcess, AllocationHourly, SlurmJob, SlurmJobNode, TelemetrySource
from .rollups import advisory_locks, day_start

HOUR = timedelta(hours=1)
KEY = ["source_id", "node_id", "account", "partition", "multi_node", "hour"]  # as ``split`` keys them
DAILY_KEY = ["source_id", "day", "account", "partition", "multi_node"]


def utc_hour(moment):
    """The UTC hour ``moment`` falls in."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def next_hour(moment):
    """The first UTC hour boundary at or after ``moment``."""
    hour = utc_hour(moment)
    return hour if hour == moment else hour + HOUR


def unsettled(prefix=""):
    """A run whose end depends on the reader's clock: no end and never seen running (rows from before
    ``running_until`` was recorded, or written by hand). The ingest always sets one or the other."""
    return Q(**{f"{prefix}end_time__isnull": True, f"{prefix}running_until__isnull": True})


def split(totals, key, gpus, begin, finish, first, last, sign=1.0):
    """Add ``gpus`` × the part of [begin, finish) in each UTC hour of [first, last) to ``totals[(*key, hour)]``."""
    begin, finish = max(begin, first), min(finish, last)
    hour = utc_hour(begin)
    while hour < finish:
        totals[(*key, hour)] += sign * gpus * (min(finish, hour + HOUR) - max(begin, hour)).total_seconds() / 3600
        hour += HOUR


def hourly_rows(node_ids, source_ids, first, last):
    """The ``AllocationHourly`` rows of the nodes ``node_ids`` and of the jobs of ``source_ids`` on no known node,
    for the hours of [first, last): ``[(*KEY, gpu_hours)]`` (three queries)."""
    totals = defaultdict(float)
    known = Q(node_id__in=node_ids) | Q(node__isnull=True, job__source_id__in=source_ids)
    settled_end = Coalesce("job__end_time", "job__running_until")
    for source, node, account, partition, nodes, gpus, begin, finish in (
            allocation.in_window(SlurmJobNode.objects.filter(known, gpus__gt=0), first, last, "job__")
            .exclude(unsettled("job__")).annotate(finish=settled_end)
            .values_list("job__source_id", "node_id", "job__account", "job__partition", "job__node_count", "gpus",
                         "job__start_time", "finish")):
        split(totals, (source, node, account, partition, nodes > 1), gpus, begin, finish, first, last)
    for source, account, partition, nodes, gpus, begin, finish in (  # no host list: reported as is, on no node
            allocation.in_window(SlurmJob.objects.filter(source_id__in=source_ids, allocations__isnull=True),
                                 first, last).exclude(unsettled())
            .annotate(finish=Coalesce("end_time", "running_until"))
            .values_list("source_id", "account", "partition", "node_count", "gpus", "start_time", "finish")):
        split(totals, (source, None, account, partition, nodes > 1), gpus, begin, finish, first, last)
    for source, node, account, partition, nodes, gpus, begin, finish in (  # what overbooked nodes could not give
            AllocationExcess.objects.filter(node_id__in=node_ids, start__lt=last, end__gt=first)
            .exclude(unsettled("allocation__job__"))
            .values_list("allocation__job__source_id", "node_id", "allocation__job__account",
                         "allocation__job__partition", "allocation__job__node_count", "gpus", "start", "end")):
        split(totals, (source, node, account, partition, nodes > 1), gpus, begin, finish, first, last, sign=-1.0)
    return [(*key, value) for key, value in totals.items() if abs(value) > 1e-9]


def refresh(node_ids, source_ids, since, until):
    """Recompute the rollup of the nodes ``node_ids`` and of the jobs of ``source_ids`` on no known node for the
    hours of [since, until), and the days those hours fall in (module docstring). Returns the hourly rows written."""
    node_ids, source_ids = sorted({pk for pk in node_ids if pk is not None}), sorted(set(source_ids))
    if since >= until or not (node_ids or source_ids):
        return 0
    first, last = utc_hour(since), next_hour(until)
    with transaction.atomic():
        lock(NODE_LOCKS, node_ids)  # first the nodes, then (in one ordered call) every source whose rows change
        rows = hourly_rows(node_ids, source_ids, first, last)
        stored = AllocationHourly.objects.filter(hour__gte=first, hour__lt=last).filter(
            Q(node_id__in=node_ids) | Q(node__isnull=True, source_id__in=source_ids))
        touched = set(stored.values_list("source_id", flat=True).distinct()) | set(source_ids) | {r[0] for r in rows}
        lock(SOURCE_LOCKS, touched)
        stored.delete()
        bulk_insert(AllocationHourly, [*KEY, "gpu_hours"], rows)
        refresh_days(touched, timezone.localdate(first), timezone.localdate(last - HOUR))
    return len(rows)


# Advisory lock namespaces (PostgreSQL): a node's hourly rows, a source's rows on no node and its daily rows.
NODE_LOCKS, SOURCE_LOCKS = 35_0002, 35_0003


def lock(namespace, ids):
    """Until the transaction ends, hold the locks of ``ids`` in ``namespace``, in id order: two refreshes of one node
    (or source) take turns, those of others do not wait, and none waits for another in a circle. Advisory locks
    rather than row locks: no node row is written, and a lifecycle move of a node does not wait for a pull. (SQLite
    writes one transaction at a time anyway.)"""
    connection = connections[router.db_for_write(AllocationHourly)]
    if ids and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            advisory_locks(cursor, namespace, ids)


def refresh_days(source_ids, first_day, last_day):
    """Recompute the daily rows of ``source_ids`` for the days [first_day, last_day] from the hourly rows (one
    DELETE, one INSERT … SELECT)."""
    if not source_ids:
        return
    AllocationDaily.objects.filter(source_id__in=source_ids, day__gte=first_day, day__lte=last_day).delete()
    summed = (AllocationHourly.objects
              .filter(source_id__in=source_ids, hour__gte=day_start(first_day),
                      hour__lt=day_start(last_day + timedelta(days=1)))
              .annotate(day=TruncDate("hour")).values(*DAILY_KEY).annotate(total=Sum("gpu_hours")).order_by())
    sql, params = summed.query.sql_with_params()
    connection = connections[router.db_for_write(AllocationDaily)]
    quote = connection.ops.quote_name
    names = [AllocationDaily._meta.get_field(name.removesuffix("_id")).column for name in DAILY_KEY]
    columns = ", ".join(quote(name) for name in names)
    with connection.cursor() as cursor:  # by name: the subquery lists its fields and annotations in its own order
        cursor.execute(f"INSERT INTO {quote(AllocationDaily._meta.db_table)} ({columns}, {quote('gpu_hours')}) "
                       f"SELECT {columns}, {quote('total')} FROM ({sql}) s", params)


def rebuild(start=None, end=None):
    """Recompute the whole rollup (or the hours of [start, end)) from the stored jobs: after a bulk load, or once
    when the rollup is added to an installation that has jobs. Returns the hourly rows written."""
    start = start or SlurmJob.objects.filter(gpus__gt=0).aggregate(first=Min("start_time"))["first"]
    end = end or timezone.now()
    if start is None:
        return 0
    node_ids = list(Node.objects.values_list("pk", flat=True))
    source_ids = list(TelemetrySource.objects.values_list("pk", flat=True))
    written = 0
    day = timedelta(days=1)
    moment = utc_hour(start)
    while moment < end:  # a day at a time: bounded memory however long the history
        written += refresh(node_ids, source_ids, moment, min(moment + day, end))
        moment += day
    return written


# What ``allocated`` groups by -> the rollup's field (site: the node's).
ROLLUP_GROUPS = {"account": "account", "partition": "partition", "node": "node_id", "site": "node__site_id"}


def names(by):
    """The groups of ``by``: None (all in one), a name, or a tuple of names (keys are then tuples)."""
    return () if by is None else by if isinstance(by, tuple) else (by,)


def allocated(start, end, now, by, account=None, partition=None, nodes=None):
    """Allocated GPU-hours in [start, end] per ``by`` (account, partition, node or site, or a tuple of them: the
    keys are then tuples) of the jobs of a team
    (``account``) and ``partition`` when given, on ``nodes`` (ids or a queryset) when given:
    ``{group: {"gpu_hours", "multi_node_gpu_hours"}}``, as ``allocation.clipped_gpu_time`` counts them (module
    docstring), in at most six queries whatever the history."""
    return Reader(now, account, partition, nodes).read({None: (start, end)}, by)[None]


def allocated_in_windows(windows, now, account=None, partition=None, nodes=None):
    """``allocated`` in each of many windows ``{key: (start, end)}``, all groups together: ``{key: gpu_hours}``. The
    rollup is read in two queries however many windows; the jobs only for the open hour and unsettled runs."""
    found = Reader(now, account, partition, nodes).read(windows, None)
    return {key: sum(row["gpu_hours"] for row in groups.values()) for key, groups in found.items()}


def allocated_for_groups(windows, now, by="account"):
    """Allocated GPU-hours of one group in each of many windows, each with its own group and time span (a plan's
    workloads, each its team's runs): ``windows`` is ``{key: (value of by, start, end)}``, the answer
    ``{key: {"gpu_hours", "jobs"}}`` (jobs: those whose run overlaps the window). The rollup in two queries, the jobs
    counted in one over the runs that overlap a window."""
    if not windows:
        return {}
    found = Reader(now).read({key: (start, end) for key, (_, start, end) in windows.items()}, by)
    overlapping, counts = Q(), {}
    for index, (value, start, end) in enumerate(windows.values()):
        window = Q(**{by: value}) & allocation.overlaps(start, end)
        overlapping |= window
        counts[f"n{index}"] = Count("pk", filter=window)
    jobs = SlurmJob.objects.filter(overlapping).aggregate(**counts)
    return {key: {"gpu_hours": found[key].get(value, {}).get("gpu_hours", 0.0), "jobs": jobs[f"n{index}"]}
            for index, (key, (value, _, _)) in enumerate(windows.items())}


class Reader:
    """Reads allocated GPU-hours of one scope for windows: whole days from the daily rows (no node scope), whole hours
    from the hourly rows, the rest from the jobs (``allocation.clipped_gpu_time_in_pieces``)."""

    def __init__(self, now, account=None, partition=None, nodes=None):
        self.now, self.nodes = now, nodes
        self.scope = {name: value for name, value in (("account", account), ("partition", partition))
                      if value not in (None, "")}
        self.jobs = SlurmJob.objects.filter(**self.scope)

    def read(self, windows, by):
        """``{window key: {group: {"gpu_hours", "multi_node_gpu_hours"}}}`` (by None: one group, None)."""
        totals = {key: defaultdict(lambda: {"gpu_hours": 0.0, "multi_node_gpu_hours": 0.0}) for key in windows}
        days, hours, pieces = {}, {}, {}
        for key, (start, end) in windows.items():
            end = min(end, self.now)
            first, last = next_hour(start), utc_hour(end)
            if first >= last:  # within an hour or two: from the jobs
                pieces[key] = [(start, end, None)]
                continue
            pieces[key] = [(start, first, None), (last, end, None), (first, last, unsettled)]
            hours[key] = [(first, last)]
            if self.nodes is None and set(names(by)) <= {"account", "partition"}:
                days[key], hours[key] = whole_days(first, last)
        group = [ROLLUP_GROUPS[name] for name in names(by)]
        self.add(totals, AllocationDaily.objects.filter(**self.scope), "day", days, group)
        hourly = AllocationHourly.objects.filter(**self.scope)
        self.add(totals, hourly if self.nodes is None else hourly.filter(node__in=self.nodes), "hour", hours, group)
        if not self.any_unsettled():
            pieces = {key: [piece for piece in spans if piece[2] is None] for key, spans in pieces.items()}
        listed = [(key, piece) for key, spans in pieces.items() for piece in spans]
        per_piece = allocation.clipped_gpu_time_per_piece(  # every window's pieces in one go: three queries
            self.jobs, [piece for _, piece in listed], self.now, by or "account", self.nodes)
        for index, groups in per_piece.items():
            for group_key, row in groups.items():
                for name, value in row.items():
                    totals[listed[index][0]][group_key if by else None][name] += value
        return {key: {group_key: {name: max(0.0, value) for name, value in row.items()}
                      for group_key, row in groups.items()} for key, groups in totals.items()}

    @staticmethod
    def add(totals, rows, field, spans, group):
        """Sum ``rows`` (daily or hourly) in each window's ``spans`` of ``field``, per group: one query."""
        conditions = {key: Q() for key in spans}
        for key, ranges in spans.items():
            for begin, finish in ranges:
                conditions[key] |= Q(**{f"{field}__gte": begin, f"{field}__lt": finish})
        conditions = {key: condition for key, condition in conditions.items() if condition}
        if not conditions:
            return
        anywhere = Q()
        for condition in conditions.values():
            anywhere |= condition
        aliases = {key: f"w{index}" for index, key in enumerate(conditions)}
        grouped = rows.filter(anywhere).values_list(*group, "multi_node").annotate(
            **{aliases[key]: Sum("gpu_hours", filter=condition) for key, condition in conditions.items()}).order_by()
        width = len(group)
        for row in grouped:
            group_key = None if not width else row[0] if width == 1 else tuple(row[:width])
            multi, sums = row[width], row[width + 1:]
            for key, value in zip(conditions, sums, strict=True):
                totals[key][group_key]["gpu_hours"] += value or 0.0
                if multi:
                    totals[key][group_key]["multi_node_gpu_hours"] += value or 0.0

    def any_unsettled(self):
        """Whether any run in scope has an end that depends on the reader's clock (one query on the end index)."""
        return self.jobs.filter(unsettled(), start_time__isnull=False, gpus__gt=0).exists()


def whole_days(first, last):
    """The local days that lie wholly in [first, last) as a span of dates, and the spans of hours they leave."""
    day = timezone.localdate(first)
    if day_start(day) < first:
        day += timedelta(days=1)
    final = timezone.localdate(last) - timedelta(days=1)  # the last day that ends by ``last``
    if final < day:
        return [], [(first, last)]
    after = final + timedelta(days=1)
    hours = [(begin, finish) for begin, finish in ((first, day_start(day)), (day_start(after), last)) if begin < finish]
    return [(day, after)], hours


# One row saved or deleted through the ORM (the admin, the tests); the ingest writes in bulk and calls ``refresh``.
def run_span(job):
    """[start, end) of a stored run as the rollup counts it, or None (not started, or ``unsettled``)."""
    end = job.end_time or job.running_until
    return (job.start_time, end) if job.start_time and end and end > job.start_time else None


def refresh_job(job, node_ids, spans):
    spans = [span for span in spans if span]
    if spans:
        refresh(node_ids, [job.source_id], min(s[0] for s in spans), max(s[1] for s in spans))


def job_nodes(job_pk):
    return list(SlurmJobNode.objects.filter(job_id=job_pk).values_list("node_id", flat=True))


def before_job_saved(sender, instance, raw=False, **kwargs):
    if raw:
        return
    stored = SlurmJob.objects.filter(pk=instance.pk).first() if instance.pk else None
    instance._stored_span = run_span(stored) if stored else None


def after_job_saved(sender, instance, raw=False, **kwargs):
    if not raw:
        refresh_job(instance, job_nodes(instance.pk), [getattr(instance, "_stored_span", None), run_span(instance)])


def before_job_deleted(sender, instance, **kwargs):
    instance._stored_nodes = job_nodes(instance.pk)


def after_job_deleted(sender, instance, **kwargs):
    refresh_job(instance, getattr(instance, "_stored_nodes", []), [run_span(instance)])


def after_job_node_changed(sender, instance, raw=False, **kwargs):
    job = SlurmJob.objects.filter(pk=instance.job_id).first()
    if job and not raw:
        refresh_job(job, [instance.node_id], [run_span(job)])


def after_excess_changed(sender, instance, raw=False, **kwargs):
    if not raw:
        refresh([instance.node_id], [], instance.start, instance.end)


def connect():
    """Keep the rollup in step with single rows saved through the ORM (called from the app's ``ready``)."""
    from django.db.models import signals

    signals.pre_save.connect(before_job_saved, sender=SlurmJob, dispatch_uid="rollup-job-pre")
    signals.post_save.connect(after_job_saved, sender=SlurmJob, dispatch_uid="rollup-job")
    signals.pre_delete.connect(before_job_deleted, sender=SlurmJob, dispatch_uid="rollup-job-pre-delete")
    signals.post_delete.connect(after_job_deleted, sender=SlurmJob, dispatch_uid="rollup-job-delete")
    for name, receiver, model in (("node", after_job_node_changed, SlurmJobNode),
                                  ("excess", after_excess_changed, AllocationExcess)):
        signals.post_save.connect(receiver, sender=model, dispatch_uid=f"rollup-{name}")
        signals.post_delete.connect(receiver, sender=model, dispatch_uid=f"rollup-{name}-delete")
