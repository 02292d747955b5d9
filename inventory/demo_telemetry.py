"""The demo's telemetry history (``inventory.demo.seed_demo``): the 7 days before now backfilled from the simulator
through the pull's write path, ``JOB_HISTORY_MONTHS`` of Slurm jobs before them, the XID faults that ended jobs, and
``HISTORY_MONTHS`` of daily rows for the forecast. Each writes only what is missing, so seeding again adds nothing."""

from datetime import timedelta

from django.db.models import Min
from django.utils import timezone

from inventory.goodput.recording import record_interruptions
from inventory.models import GPU
from inventory.telemetry import simulator, slurm, xid
from inventory.telemetry.models import GPUDaily, SlurmJob, TelemetrySource, XidEvent
from inventory.telemetry.pull import store
from inventory.telemetry.records import Collected
from inventory.telemetry.rollups import floor_hour, rollup_usage
from portal.db import bulk_upsert

BACKFILL = timedelta(days=7)
HISTORY_MONTHS = 25  # two years and a bit: enough for the forecast to fit a yearly season
JOB_HISTORY_MONTHS = 2  # whole calendar months of Slurm jobs before the backfilled week: runs to calibrate on

def backfill(exporter, jobs_source):
    """Up to 7 days of the simulator's telemetry that the sources do not have yet (all of it on the first
    run; on a later run, the hours since the last pull), written as pulls write it: GPU hours, node
    hours and days, Slurm jobs. Returns (GPU hours, jobs) written."""
    now = timezone.now()
    earliest = floor_hour(now) - BACKFILL
    gpus = simulator.fleet()
    start = max(exporter.synced_until or earliest, earliest)
    hours = simulator.hour_records(gpus, start, now, interval_seconds=exporter.interval_seconds)
    store(exporter, Collected(hours=hours), now)
    TelemetrySource.objects.filter(pk=exporter.pk).update(synced_until=now)

    start = max(jobs_source.synced_until or earliest, earliest)
    jobs = slurm.parse_jobs(simulator.jobs(simulator.nodes_of(gpus), start, now))
    store(jobs_source, Collected(jobs=jobs), now)
    TelemetrySource.objects.filter(pk=jobs_source.pk).update(synced_until=slurm.resume_from(jobs, start, now))
    return len(hours), len(jobs)


def job_history(jobs_source, now=None):
    """The simulator's Slurm jobs from the first day of ``JOB_HISTORY_MONTHS`` whole months before this one up to
    the backfilled week, stored as a pull stores them, unless the source has jobs from then already. The jobs
    still running at the week's start are stored as running then; the week's backfill brings their end. Returns the
    jobs written."""
    now = now or timezone.now()
    end = floor_hour(now) - BACKFILL
    first = timezone.localtime(now).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    for _ in range(JOB_HISTORY_MONTHS):
        first = (first - timedelta(days=1)).replace(day=1)
    if SlurmJob.objects.filter(source=jobs_source, start_time__lt=first + BACKFILL).exists():
        return 0
    jobs = slurm.parse_jobs(simulator.jobs(simulator.nodes_of(simulator.fleet()), first, end))
    store(jobs_source, Collected(jobs=jobs), end)
    return len(jobs)


def job_faults(exporter, now=None):
    """The XID 79 events of the simulator's jobs that hardware faults killed, from the job history's first day to
    now (as a scrape read them: at the minute; the hourly backfill reads the gauge only at each hour's end), then
    the interruptions of every job since then (``inventory.goodput``). Both are idempotent: events are unique per
    GPU, time and code, interruptions per job and end. Returns the events written."""
    now = now or timezone.now()
    first = SlurmJob.objects.aggregate(first=Min("end_time"))["first"]
    if first is None:
        return 0
    gpu_ids = {(hostname, slot): pk for hostname, slot, pk in GPU.objects.values_list("node__hostname", "slot", "pk")}
    events = [XidEvent(gpu_id=gpu_ids[(hostname, slot)], source=exporter, ts=ts, hour=floor_hour(ts), code=code,
                       kind=xid.kind_of(code))
              for hostname, slot, ts, code in simulator.job_faults(simulator.nodes_of(simulator.fleet()), first, now)
              if (hostname, slot) in gpu_ids]
    written = XidEvent.objects.bulk_create(events, ignore_conflicts=True, batch_size=2000)
    record_interruptions(first, now + timedelta(seconds=1), now)
    return len(written)


def daily_history(today=None):
    """``HISTORY_MONTHS`` of daily GPU rows before the backfilled week, unless some are there already.
    Returns the rows written."""
    today = today or timezone.localdate()
    last_day = today - BACKFILL - timedelta(days=1)
    first_day = (last_day - timedelta(days=HISTORY_MONTHS * 366 // 12)).replace(day=1)
    if GPUDaily.objects.filter(day__lte=last_day).exists():
        return 0
    gpu_ids = dict(GPU.objects.values_list("uuid", "pk"))
    # hours = 24: a simulated day has a utilization reading every hour.
    rows = [(gpu_ids[r.uuid], r.day, 24, r.util_mean, r.util_max, r.mem_used_mean_gb, r.power_mean_w,
             r.power_mean_w * 24, 24)
            for r in simulator.day_records(simulator.fleet(), first_day, last_day, today)]
    written = bulk_upsert(GPUDaily, ["gpu_id", "day"], ["hours", "util_mean", "util_max", "mem_used_mean_gb",
                                                        "power_mean_w", "energy_wh", "samples"], rows)
    rollup_usage(first_day, last_day)  # what the 30-day and 1-year dashboards read
    return written
