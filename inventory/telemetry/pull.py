"""One pull of one telemetry source, start to end.

1. Choose the window: from where the source's data was last complete (``synced_until``), or, on first
   contact, ``backfill_hours`` back; up to now. After an outage the next pull resumes there: no gap.
2. Ask the source's collector (``COLLECTORS[kind]``) for records; every outbound request is bounded by
   the source's timeout.
3. Match series to inventory GPUs; list those that match nothing as unknown series.
4. Write with upserts: GPU hours (or scraped samples rolled up into hours), then node hours and days;
   Slurm jobs by (source, job id). A retried or overlapping pull replaces rows, it never adds to them.
5. Record the outcome: on success ``last_success_at``, ``synced_until`` and the next pull; on failure the
   error, ``stale_since`` (kept from the first failure) and an exponentially growing delay. Any answer the
   portal cannot read ends the pull as failed with the reason, whatever the parser raised: a source never
   keeps showing "ok" after a crash.
6. Keep a ``PullReport``: counts and the data-quality notes (jobs clipped or skipped and why, unknown
   series, MIG instances, values that are not numbers, DCGM blank values, warnings), shown on the source's page.
"""

import logging
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from portal import events

from . import allocation, allocation_rollup, health, slurm
from .matching import GPUMatcher
from .models import PullReport, SlurmJob, TelemetrySample, TelemetrySource, UnknownSeries
from .records import Collected, SourceError
from .rollups import floor_hour, refresh, rollup_samples, upsert_gpu_hours

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 3600
FUTURE_TOLERANCE = timedelta(minutes=5)


def collectors():
    """Kind → ``collect(source, start, end) -> Collected``. Imported late: each lives in its module."""
    from . import exporter, prometheus, slurm

    return {
        TelemetrySource.Kind.PROMETHEUS: prometheus.collect,
        TelemetrySource.Kind.EXPORTER: exporter.collect,
        TelemetrySource.Kind.SLURM: slurm.collect,
    }


def backoff_seconds(failures, interval):
    """1st failure: retry after one interval (at least a minute), then twice as long each time, at most 1 h."""
    return min(max(interval, 60) * 2 ** (failures - 1), MAX_BACKOFF_SECONDS)


def pull(source, now=None):
    """Pull ``source`` once; returns a short summary dict. Raises ``SourceError`` after recording it."""
    now = now or timezone.now()
    start = source.synced_until or floor_hour(now - timedelta(hours=source.backfill_hours))
    TelemetrySource.objects.filter(pk=source.pk).update(last_attempt_at=now)
    collected = Collected()
    try:
        collected = collectors()[source.kind](source, start, now)
        with transaction.atomic():
            summary = store(source, collected, now)
            record_success(source, collected.synced_until or now, now)
            save_report(source, now, start, collected, summary)
    except SourceError as error:
        fail(source, str(error), now, start, collected)
        raise
    except Exception as error:  # a parser or a write that choked on the answer: a failed pull, said why
        log.exception("telemetry source %s: pull failed on an unexpected answer", source.name)
        message = f"the answer could not be read ({type(error).__name__})"  # its text may quote the answer
        fail(source, message, now, start, collected)
        raise SourceError(message) from error
    for warning in collected.warnings:
        log.warning("telemetry source %s: %s", source.name, warning)
    return summary


def fail(source, message, now, start, collected):
    record_failure(source, message, now)
    save_report(source, now, start, collected, {}, error=message)


def save_report(source, now, start, collected, summary, error=""):
    """One ``PullReport`` for this pull; older ones past ``TELEMETRY_PULL_REPORTS_KEPT`` are deleted."""
    quality = collected.quality
    for warning in collected.warnings:
        quality.add("warning", warning)
    PullReport.objects.create(
        source=source, started_at=now, finished_at=timezone.now(), ok=not error, error=error[:2000],
        window_start=start, window_end=now, counts=summary, quality=quality.counts, examples=quality.examples,
    )
    old = PullReport.objects.filter(source=source).values_list("pk", flat=True)[settings.TELEMETRY_PULL_REPORTS_KEPT:]
    PullReport.objects.filter(pk__in=list(old)).delete()


def store(source, collected, now):
    """Write what a collector brought back; returns counts for the log and the task result."""
    matcher = GPUMatcher(record.series for record in [*collected.hours, *collected.samples])
    unknown, latest = {}, now + FUTURE_TOLERANCE

    def match(records):
        pairs = []
        for record in records:
            if record_time(record) > latest:
                collected.quality.add("future", f"{record.series.key} at {record_time(record):%Y-%m-%d %H:%M}")
                continue
            gpu_id = matcher.gpu_id(record.series)
            if gpu_id is None:
                if record.series.key not in unknown:
                    collected.quality.add("unknown_series", record.series.key)
                unknown[record.series.key] = record.series
            else:
                pairs.append((gpu_id, record))
        return pairs

    matched_hours = match(collected.hours)
    hours = upsert_gpu_hours(matched_hours)
    samples = match(collected.samples)
    xid_events = health.save_xid_events(source, matched_hours, samples, now)
    health_events = health.save_remap_events(source, matched_hours, samples, now)
    if samples:
        TelemetrySample.objects.bulk_create(
            [TelemetrySample(source=source, gpu_id=gpu_id, **sample_fields(record)) for gpu_id, record in samples],
            ignore_conflicts=True, batch_size=2000,
        )
        first = min(record.ts for _, record in samples)
        hours |= rollup_samples(floor_hour(first), floor_hour(now) + timedelta(hours=1), source.interval_seconds,
                                new_since=first, gpu_ids={gpu_id for gpu_id, _ in samples})
    # Only what this pull touched is recounted and rolled up: pulls of other sources' GPUs run beside it.
    gpu_ids = {gpu_id for gpu_id, _ in matched_hours} | {gpu_id for gpu_id, _ in samples}
    health.count_xid_events(hours, gpu_ids)
    refresh(hours, gpu_ids)
    mig = health.save_mig_instances(matched_hours + samples, now)
    save_jobs(source, collected.jobs, now, collected.quality)
    save_unknown(source, unknown.values(), now)
    return {"hours": len(hours), "samples": len(samples), "jobs": len(collected.jobs), "unknown": len(unknown),
            "xid_events": len(xid_events), "health_events": len(health_events), "mig_instances": mig}


def record_time(record):
    return getattr(record, "hour", None) or record.ts


def sample_fields(record):
    return {name: getattr(record, name) for name in (
        "ts", "util", "mem_used_gb", "mem_free_gb", "power_w", "gr_engine_active", "tensor_active", "xid",
        "energy_mj", "gpu_temp_c", "memory_temp_c", "sm_clock_mhz", "ecc_sbe", "ecc_dbe", "nvlink_errors",
        "pcie_replay", "retired_pages", "remapped_rows")}


def save_jobs(source, jobs, now, quality):
    """Upsert the jobs' runs by (source, job id, submit time), close the runs a requeue replaced, then save their
    per-node rows; note the jobs whose run had to be cut (running past the pull's clock, or counted up to the pull)
    and those on over-allocated nodes."""
    if not jobs:
        return
    fields = ["cluster", "name", "user", "account", "partition", "state", "start_time", "end_time",
              "nodes", "node_count", "gpus", "running_until", "restarts", "reason"]
    for job in jobs:
        if job.start_time and job.end_time is None:
            if job.running_until is None:
                quality.add("job_running_at_pull", f"{job.job_id} {job.state}")
                job.running_until = now
            elif job.running_until > now + FUTURE_TOLERANCE:
                quality.add("job_clock_skew", f"{job.job_id}: seen running until {job.running_until:%Y-%m-%d %H:%M}")
                job.running_until = now
    # Where these jobs ran before this answer (a requeued job may have moved, or started at another time):
    # those nodes and times are rebalanced too, so no excess is left from a run the answer replaced.
    earlier = allocation.earlier_runs(source, [job.job_id for job in jobs])
    saved = SlurmJob.objects.bulk_create(
        [SlurmJob(source=source, job_id=job.job_id, submit_time=job.submit_time,
                  **{name: getattr(job, name) for name in fields}) for job in jobs],
        update_conflicts=True, unique_fields=["source", "job_id", "submit_time"], update_fields=fields,
        batch_size=2000,
    )
    close_requeued_runs(source, jobs, quality)
    hosts_of = {}
    for job in jobs:
        try:
            hosts_of[job.job_id, job.submit_time] = slurm.expand_hostlist(job.nodes)
        except ValueError as error:
            quality.add("warning", f"job {job.job_id}: host list not read ({error})")
    node_ids = allocation.save_allocations(saved, hosts_of, quality) | set(earlier)
    started = [job.start_time for job in jobs if job.start_time] + [start for start in earlier.values() if start]
    if node_ids and started:
        for job_id, host, held, gpus in allocation.rebalance(node_ids, min(started), now).values():
            quality.add("job_overbooked", f"{job_id} on {host}: jobs held {held} GPUs, the node has {gpus}")
    if started:  # the hours these runs cover, recomputed: a retried pull replaces them
        ends = [job.end_time or job.running_until for job in jobs if job.start_time]
        allocation_rollup.refresh(node_ids, [source.pk], min(started), max([now, *filter(None, ends)]))


def close_requeued_runs(source, jobs, quality):
    """Close the runs a requeue replaced. Without ``sacct --duplicates`` an answer lists only a job's latest run,
    so a run stored open (seen running or pending at an earlier pull) whose job now shows a later submit time
    was requeued: Slurm resets the submit time at the requeue, so the run ended then. One that had started is
    stored REQUEUED, ending at the next run's submit time; one that never started held nothing and is deleted.
    A job whose restart count says more runs than are on record (requeued and restarted between two pulls) is
    noted: those runs' GPU-hours and interruptions are missing."""
    submits = defaultdict(list)
    for job in jobs:
        submits[job.job_id].append(job.submit_time)
    requeued, never_started = [], []
    ids = list(submits)
    for first in range(0, len(ids), 2000):
        open_runs = SlurmJob.objects.filter(source=source, job_id__in=ids[first:first + 2000], end_time__isnull=True)
        for pk, job_id, submit, start in open_runs.values_list("pk", "job_id", "submit_time", "start_time"):
            following = min((later for later in submits[job_id] if later > submit), default=None)
            if following is None:
                continue
            if start is None:
                never_started.append(pk)
                continue
            end = max(following, start)
            requeued.append(SlurmJob(pk=pk, state="REQUEUED", end_time=end))
            quality.add("job_requeue_inferred", f"{job_id}: run started {start:%Y-%m-%d %H:%M} ended at the "
                        f"requeue, {end:%Y-%m-%d %H:%M}")
    SlurmJob.objects.bulk_update(requeued, ["state", "end_time"], batch_size=2000)
    SlurmJob.objects.filter(pk__in=never_started).delete()
    latest = {job_id: max(times) for job_id, times in submits.items()}
    restarted = {job.job_id: job.restarts for job in jobs if job.restarts and job.submit_time == latest[job.job_id]}
    if restarted:
        on_record = dict(SlurmJob.objects.filter(source=source, job_id__in=list(restarted)).values_list("job_id")
                         .annotate(runs=Count("pk")).order_by())
        for job_id, restarts in restarted.items():
            if on_record.get(job_id, 0) - 1 < restarts:
                quality.add("job_runs_missing", f"{job_id}: restarted {restarts} times, "
                            f"{on_record.get(job_id, 1) - 1} earlier runs on record")


def save_unknown(source, series, now):
    rows = [
        UnknownSeries(source=source, key=s.key, uuid=s.uuid, hostname=s.hostname, gpu_index=str(s.gpu_index),
                      model_name=s.model_name, first_seen=now, last_seen=now)
        for s in series
    ]
    UnknownSeries.objects.bulk_create(rows, update_conflicts=True, unique_fields=["source", "key"],
                                      update_fields=["last_seen", "model_name"])


def record_success(source, synced_until, now):
    TelemetrySource.objects.filter(pk=source.pk).update(
        last_success_at=now, synced_until=synced_until, stale_since=None, consecutive_failures=0,
        next_attempt_at=now + timedelta(seconds=source.interval_seconds),
    )


def record_failure(source, message, now):
    source.refresh_from_db(fields=["consecutive_failures", "stale_since"])
    failures = source.consecutive_failures + 1
    TelemetrySource.objects.filter(pk=source.pk).update(
        last_error=message[:2000], last_error_at=now, consecutive_failures=failures,
        stale_since=source.stale_since or now,
        next_attempt_at=now + timedelta(seconds=backoff_seconds(failures, source.interval_seconds)),
    )
    log.warning("telemetry source %s failed (%d in a row): %s", source.name, failures, message)
    if source.stale_since is None:  # it turns stale now: told once, not at each failure after
        events.emit("source.stale", {"source_id": source.pk, "source": source.name, "kind": source.kind,
                                     "since": now})
