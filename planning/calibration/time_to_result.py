"""What a planned workload's jobs did on the way to its result (the time-to-result page): each run of its jobs (those
``planning.goodput.time_to_result`` counts: its account's, its name pattern's, submitted since its start month) with
its queue wait, GPU-hours and how it ended, and their totals: restarts, queue waits, interruptions by cause and the
GPU-hours the infrastructure's lost (the goodput report's recorded estimates, ``inventory.goodput``).

Two queries: the runs, and their interruptions."""

from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from inventory.goodput.models import Interruption
from inventory.telemetry.models import SlurmJob

from ..goodput import jobs_since_start

MAX_RUNS = 500  # the page lists the latest; the totals count them all


@dataclass
class JobRun:
    job: SlurmJob
    gpu_hours: float
    queue_wait_hours: float | None
    interruptions: list = field(default_factory=list)  # Interruption rows of this run


@dataclass
class WorkloadJobs:
    runs: list  # JobRun, latest submit first (at most MAX_RUNS)
    total_runs: int
    jobs: int  # distinct job ids
    requeued_runs: int  # runs after the first of a job id: its restarts
    queue_wait_hours: float  # Σ of the runs' queue waits
    longest_wait_hours: float | None
    gpu_hours: float  # Σ allocated GPUs × run (until now while one runs)
    interruptions: dict  # cause label -> count
    lost_gpu_hours: float  # Σ of the infrastructure's interruptions' recorded estimates

    @property
    def shown(self):
        return len(self.runs)


def hours(delta):
    return None if delta is None else max(delta, timedelta(0)).total_seconds() / 3600


def workload_jobs(workload, user=None, now=None):
    """The :class:`WorkloadJobs` of ``workload`` (a ``PlanWorkload`` with a Slurm account or job name pattern), of the
    runs ``user`` may read (``SlurmJob.objects.visible_to``; all of them without a user)."""
    now = now or timezone.now()
    rows = SlurmJob.objects.filter(jobs_since_start(workload, now))
    if user is not None:
        rows = rows.visible_to(user)
    every = list(rows.order_by("-submit_time", "-pk"))
    ended = {}
    for row in Interruption.objects.filter(job__in=rows.values("pk")).order_by("ended_at"):
        ended.setdefault(row.job_id, []).append(row)
    runs = [JobRun(job, job.gpu_hours(now), hours(job.queue_wait), ended.get(job.pk, [])) for job in every]
    ids = {run.job.job_id for run in runs}
    waits = [run.queue_wait_hours for run in runs if run.queue_wait_hours is not None]
    counts = {}
    for run in runs:
        for row in run.interruptions:
            counts[row.get_cause_display()] = counts.get(row.get_cause_display(), 0) + 1
    lost = sum(row.lost_gpu_hours or 0.0 for run in runs for row in run.interruptions
               if row.cause == Interruption.Cause.INFRASTRUCTURE)
    return WorkloadJobs(runs=runs[:MAX_RUNS], total_runs=len(runs), jobs=len(ids), requeued_runs=len(runs) - len(ids),
                        queue_wait_hours=sum(waits), longest_wait_hours=max(waits) if waits else None,
                        gpu_hours=sum(run.gpu_hours for run in runs), interruptions=counts, lost_gpu_hours=lost)
