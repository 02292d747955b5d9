"""Slurm job figures for the dashboards and the API: queue wait, allocated GPU-hours, multi-node share.

Plain functions over ``SlurmJob`` querysets (filter the queryset first: by source, site, time), each one
query, grouped in the database. They run on PostgreSQL (production, tests) and SQLite (the demo).

Definitions:

- *queue wait* of a job: ``start_time - submit_time`` (negative clock skew counts as 0). Only jobs that
  started count: a pending job's wait is not known yet.
- *allocated GPU-hours* of a job in a window [start, end]: allocated GPUs × the hours of the job's run,
  [start_time, end_time — or, while it runs, the last moment the source saw it running], that lie inside the
  window. Jobs that never started count 0. Per node, the jobs' GPU-hours are clipped to the node's GPUs ×
  the window's hours (``allocation``), so no total exceeds what the hardware could give.
- *multi-node share* of a partition: the part of its allocated GPU-hours in the window that come from jobs
  spanning more than one node.
"""

from datetime import timedelta
from itertools import groupby

from django.db import connections
from django.db.models import Aggregate, Count, DurationField, ExpressionWrapper, F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from . import allocation

GROUPS = ("partition", "account", "user", "cluster")
ZERO = timedelta(0)


class PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont``: the value at ``fraction`` of the ordered group, interpolated linearly."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression, fraction, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


def queue_wait_percentiles(queryset, by="partition"):
    """Per ``by`` group: started jobs and their p50/p95 queue wait in hours, ordered by group.

    ``[{"partition": "a100", "jobs": 5, "p50_hours": 2.0, "p95_hours": 3.8}, …]``. Percentiles interpolate
    linearly between the nearest waits (PostgreSQL's ``percentile_cont``, computed by the database there;
    elsewhere the waits are read as one list per group and the same formula is applied in Python).
    """
    started = queryset.filter(start_time__isnull=False)
    check_group(by)
    if connections[queryset.db].vendor == "postgresql":
        return wait_percentiles_in_database(started, by)
    return wait_percentiles_in_python(started, by)


def queue_wait():
    """A job's queue wait as a duration, never negative."""
    return Greatest(ExpressionWrapper(F("start_time") - F("submit_time"), output_field=DurationField()),
                    Value(ZERO))


def wait_percentiles_in_database(started, by):
    rows = (started.values(by)
            .annotate(jobs=Count("pk"), p50=PercentileCont(queue_wait(), 0.5, output_field=DurationField()),
                      p95=PercentileCont(queue_wait(), 0.95, output_field=DurationField()))
            .order_by(by))
    return [{by: row[by], "jobs": row["jobs"], "p50_hours": hours(row["p50"]), "p95_hours": hours(row["p95"])}
            for row in rows]


def wait_percentiles_in_python(started, by):
    rows = started.annotate(wait=queue_wait()).order_by(by, "wait").values_list(by, "wait")
    result = []
    for group, waits in groupby(rows.iterator(), key=lambda row: row[0]):
        waits = [hours(wait) for _, wait in waits]
        result.append({by: group, "jobs": len(waits), "p50_hours": percentile(waits, 0.5),
                       "p95_hours": percentile(waits, 0.95)})
    return result


def percentile(ordered, fraction):
    """``percentile_cont`` over an ascending list: linear interpolation between the two nearest values."""
    if not ordered:
        return None
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def allocated_gpu_hours(queryset, start, end, by="account", now=None):
    """Per ``by`` group (``account`` = team, or ``partition``…): allocated GPU-hours inside [start, end].

    ``[{"account": "llm", "gpu_hours": 123.5}, …]``, ordered by group; jobs still running count until the
    source last saw them running (at most ``now``); clipped per node to its GPUs (``allocation``).
    """
    check_group(by)
    totals = allocation.clipped_gpu_time(queryset, start, end, now or timezone.now(), by)
    return [{by: group, "gpu_hours": totals[group]["gpu_hours"]} for group in sorted(totals, key=str)]


def multi_node_share(queryset, start, end, now=None):
    """Per partition: allocated GPU-hours inside [start, end], those from multi-node jobs, and their share.

    ``[{"partition": "h100", "gpu_hours": 96.0, "multi_node_gpu_hours": 64.0, "share": 0.667}, …]``;
    ``share`` is None for a partition without GPU-hours in the window.
    """
    totals = allocation.clipped_gpu_time(queryset, start, end, now or timezone.now(), "partition")
    return [{"partition": partition, **totals[partition], "share": share(totals[partition])}
            for partition in sorted(totals, key=str)]


def share(row):
    """The multi-node share of a group's ``{"gpu_hours", "multi_node_gpu_hours"}``; None without GPU-hours."""
    return row["multi_node_gpu_hours"] / row["gpu_hours"] if row["gpu_hours"] else None


in_window = allocation.in_window  # jobs with GPUs whose run may overlap [start, end]


def hours(duration):
    return None if duration is None else duration.total_seconds() / 3600


def check_group(by):
    if by not in GROUPS:
        raise ValueError(f"group by one of {', '.join(GROUPS)}, not {by!r}")
