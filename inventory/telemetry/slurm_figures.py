"""The Slurm figures behind the utilization dashboard and ``/api/inventory/allocations/``: allocated GPU-hours per team
and partition (from the rollup kept at pull time, ``allocation_rollup``), the jobs with GPU time in a range, the
multi-node share and the queue waits. Ranges are those of ``queries``; only the partition and team filters apply
to jobs."""

from collections import defaultdict

from django.db.models import Count
from django.utils import timezone

from . import allocation_rollup, jobstats
from .models import SlurmJob
from .queries import NONE_LABEL, UnknownParameter, calendar_month, get_range

# Filter name -> lookup on a Slurm job. Jobs know neither the site nor the GPU model of their GPUs (a Slurm
# cluster may span sites and models), so those filters do not apply to them; the dashboard says so.
JOB_FILTER_LOOKUPS = {"partition": "partition", "team": "account"}
ALLOCATION_GROUPS = ("account", "partition")  # group_by of ``allocations``; account = team


def slurm_jobs(filters=None):
    """The Slurm jobs that the partition and team (Slurm account) filters select; other filters are ignored."""
    jobs = SlurmJob.objects.all()
    for name, value in (filters or {}).items():
        if value not in (None, "") and name in JOB_FILTER_LOOKUPS:
            jobs = jobs.filter(**{JOB_FILTER_LOOKUPS[name]: value})
    return jobs


def ignored_job_filters(filters):
    """The names of the filters that are set but do not apply to Slurm jobs (site, GPU model)."""
    return [name for name, value in (filters or {}).items()
            if value not in (None, "") and name not in JOB_FILTER_LOOKUPS]


def span(range_key, now=None, month=None):
    """``(start, end)`` of the figures: the range (a rolling one until now, a calendar one until its end or now while
    it lasts), or the calendar month that begins on ``month`` (``queries.calendar_month``; until now while it
    lasts)."""
    now = now or timezone.now()
    if month is None:
        chosen = get_range(range_key)
        return chosen.start(now), chosen.end(now)
    start, end = calendar_month(month)
    return start, min(end, now)


def queue_waits(range_key, filters=None, now=None, month=None):
    """Queue wait p50/p95 (hours) per partition of the Slurm jobs that started in the range (or ``month``):
    ``[{"partition", "jobs", "p50_hours", "p95_hours"}]`` (``jobstats``; only the partition and team filters
    apply)."""
    start, end = span(range_key, now, month)
    jobs = slurm_jobs(filters).filter(start_time__gte=start, start_time__lt=end)
    return jobstats.queue_wait_percentiles(jobs, by="partition")


def allocations(group_by, range_key, filters=None, now=None, waits=None, month=None):
    """Allocated GPU-hours per team (``account``) or ``partition`` over the range (from its start until now; jobs
    still running count until now), from the Slurm jobs the partition and team filters select, most GPU-hours
    first: ``[{"key", "name", "gpu_hours", "jobs"}]``, ``jobs`` being the jobs with GPU time in the range.

    Partitions add ``multi_node_gpu_hours`` and ``multi_node_share`` (% of their GPU-hours from jobs on more
    than one node; ``jobstats.multi_node_share``) and the queue wait of the jobs started in the range
    (``jobs_started``, ``queue_wait_p50_hours``, ``queue_wait_p95_hours``; ``waits``: rows of ``queue_waits``
    already read for the same range and filters). The GPU-hours come from the rollup kept at pull time
    (``allocation_rollup``): no query reads the job history but the jobs' count.
    """
    if group_by not in ALLOCATION_GROUPS:
        raise UnknownParameter(f"Unknown group_by '{group_by}'; use one of {', '.join(ALLOCATION_GROUPS)}.")
    return allocation_groupings(range_key, filters, now, waits, (group_by,), month)[group_by]


def allocation_groupings(range_key, filters=None, now=None, waits=None, group_bys=ALLOCATION_GROUPS, month=None):
    """``allocations`` of each of ``group_bys`` from one read of the figures: ``{group_by: rows}`` (the utilization
    page shows both; eight queries for both, the queue waits included). ``month``: the calendar month that begins
    on that day instead of the range (``span``)."""
    now = now or timezone.now()
    (start, end), jobs = span(range_key, now, month), slurm_jobs(filters)
    counted = (jobstats.in_window(jobs, start, end).values_list(*ALLOCATION_GROUPS).annotate(Count("pk"))
               .order_by())
    if "partition" in group_bys and waits is None:
        waits = queue_waits(range_key, filters, now, month)
    waits = {row["partition"]: row for row in waits or []}
    scope = {name: (filters or {}).get(key) for key, name in JOB_FILTER_LOOKUPS.items()}
    totals = allocation_rollup.allocated(start, end, now, ALLOCATION_GROUPS, **scope)
    found = {}
    for group_by in group_bys:
        position = ALLOCATION_GROUPS.index(group_by)
        summed, counts = defaultdict(lambda: {"gpu_hours": 0.0, "multi_node_gpu_hours": 0.0}), defaultdict(int)
        for pair, row in totals.items():
            for name, value in row.items():
                summed[pair[position]][name] += value
        for *pair, jobs_counted in counted:
            counts[pair[position]] += jobs_counted
        found[group_by] = allocation_rows(group_by, summed, counts, waits)
    return found


def allocation_rows(group_by, totals, counts, waits):
    groups = []
    for key in sorted(totals, key=str):
        row = totals[key]
        group = {"key": key, "name": key or NONE_LABEL, "gpu_hours": round(row["gpu_hours"], 2),
                 "jobs": counts.get(key, 0)}
        if group_by == "partition":
            wait, share = waits.get(key, {}), jobstats.share(row)
            group.update(
                multi_node_gpu_hours=round(row["multi_node_gpu_hours"], 2),
                multi_node_share=None if share is None else round(100 * share, 2),
                jobs_started=wait.get("jobs", 0),
                queue_wait_p50_hours=wait.get("p50_hours"),
                queue_wait_p95_hours=wait.get("p95_hours"),
            )
        groups.append(group)
    groups.sort(key=lambda g: (-g["gpu_hours"], g["name"]))
    return groups


def allocation_totals(partitions):
    """Allocated GPU-hours, jobs and multi-node share (%) of all jobs, from ``allocations("partition", …)``
    (every job is in one partition)."""
    gpu_hours = sum(g["gpu_hours"] for g in partitions)
    multi_node = sum(g["multi_node_gpu_hours"] for g in partitions)
    return {"gpu_hours": round(gpu_hours, 2), "jobs": sum(g["jobs"] for g in partitions),
            "multi_node_share": round(100 * multi_node / gpu_hours, 2) if gpu_hours else None}
