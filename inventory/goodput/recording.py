"""Recording interruptions: the jobs that ended in a window, classified (``attribution.classify``) against the
faults of their nodes, with the infrastructure's lost GPU-hours estimated, upserted as ``Interruption`` rows.

Set-based: a fixed number of queries per window (jobs, their nodes, XID events, ECC hours, degraded moves, the
upsert, the clean-up), whatever the number of jobs. Recording a window again gives the same rows: rows are keyed
by (job, end) and replaced; a row whose job still ends at that time but is no longer an interruption (its state
was corrected) is deleted. Each run of a requeued job is a ``SlurmJob`` row of its own, so the interrupted run's
row stays when the job runs again."""

from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import F, Min, OuterRef, Q, Subquery
from django.utils import timezone

from inventory.models import GPU, LifecycleState, Node, StateTransition
from inventory.telemetry.models import GPUHourly, SlurmJob, SlurmJobNode, XidEvent

from . import attribution, hooks
from .models import Interruption

HOUR = timedelta(hours=1)
ESTIMATE_FIELDS = ["checkpoint_minutes", "lost_run_gpu_hours", "next_start", "restart_wait_hours",
                   "lost_wait_gpu_hours", "lost_gpu_hours", "assumptions"]
ROW_FIELDS = ["state", "started_at", "gpus", "account", "partition", "cause", "reason", "node", "gpu", "xid_event",
              "transition", "fault_ts", *ESTIMATE_FIELDS]


def settings_window():
    return (timedelta(minutes=settings.GOODPUT_FAULT_WINDOW_MINUTES),
            timedelta(minutes=settings.GOODPUT_FAULT_LAG_MINUTES),
            timedelta(hours=settings.GOODPUT_RESTART_WAIT_CAP_HOURS))


def ended_jobs(start, end):
    """Jobs that ran and ended in [start, end) in a state that may be an interruption, each with ``next_start``:
    when the same team's next job on the same partition started (at or after its end; None: none yet)."""
    later = (SlurmJob.objects.filter(account=OuterRef("account"), partition=OuterRef("partition"),
                                     start_time__gte=OuterRef("end_time"))
             .values("account").annotate(first=Min("start_time")).values("first"))
    return (SlurmJob.objects.filter(end_time__gte=start, end_time__lt=end, start_time__isnull=False,
                                    state__in=attribution.ENDED_STATES)
            .annotate(next_start=Subquery(later)))


def faults_near(jobs, start, end):
    """``attribution.Fault``s of the nodes ``jobs`` ran on, from ``start`` (less the window) to ``end`` (plus the
    lag): hardware XID events, hours with double-bit ECC errors, moves of the nodes or their GPUs to degraded."""
    window, lag, _ = settings_window()
    since, until = start - window, end + lag
    # The nodes as a list (a few thousand at most): as a nested subquery PostgreSQL may plan the XID join badly.
    node_ids = list(SlurmJobNode.objects.filter(job__in=jobs, node__isnull=False).order_by()
                    .values_list("node_id", flat=True).distinct())
    if not node_ids:
        return []
    faults = [
        attribution.Fault(attribution.xid_reason(code), ts, node_id, gpu_id, xid_event_id=pk)
        for pk, ts, code, gpu_id, node_id in XidEvent.objects.filter(
            kind=XidEvent.Kind.HARDWARE, ts__gte=since, ts__lte=until, gpu__node_id__in=node_ids)
        .values_list("pk", "ts", "code", "gpu_id", "gpu__node_id")
    ]
    faults += [
        attribution.Fault(attribution.ECC_COUNTER, hour, node_id, gpu_id, until=hour + HOUR)
        for hour, gpu_id, node_id in GPUHourly.objects.filter(
            ecc_dbe_errors__gt=0, hour__gte=since - HOUR, hour__lte=until, gpu__node_id__in=node_ids)
        .values_list("hour", "gpu_id", "gpu__node_id")
    ]
    types = ContentType.objects.get_for_models(Node, GPU)
    gpu_nodes = GPU.objects.filter(node_id__in=node_ids)
    for pk, ts, type_id, object_id, gpu_node in (
            StateTransition.objects.filter(to_state=LifecycleState.DEGRADED, created__gte=since, created__lte=until)
            .filter(Q(content_type=types[Node], object_id__in=node_ids)
                    | Q(content_type=types[GPU], object_id__in=gpu_nodes.values("pk")))
            .annotate(gpu_node=Subquery(GPU.objects.filter(pk=OuterRef("object_id")).values("node_id")))
            .values_list("pk", "created", "content_type_id", "object_id", "gpu_node")):
        is_gpu = type_id == types[GPU].pk
        faults.append(attribution.Fault(attribution.DEGRADED, ts, gpu_node if is_gpu else object_id,
                                        object_id if is_gpu else None, transition_id=pk))
    return faults


def estimate(job, minutes, now):
    """The estimate's fields of an infrastructure interruption of ``job`` (``attribution.py``'s assumptions)."""
    _, _, cap = settings_window()
    lost_run = attribution.lost_run_hours(job.start_time, job.end_time, job.gpus, timedelta(minutes=minutes))
    wait = attribution.restart_wait(job.end_time, job.next_start, cap, now)
    wait_hours = None if wait is None else wait.total_seconds() / 3600
    lost_wait = None if wait_hours is None else job.gpus * wait_hours
    return {
        "checkpoint_minutes": minutes,
        "lost_run_gpu_hours": lost_run,  # unrounded: sums of them stay within the allocation
        "next_start": job.next_start if job.next_start and job.next_start - job.end_time <= cap else None,
        "restart_wait_hours": wait_hours,
        "lost_wait_gpu_hours": lost_wait,
        "lost_gpu_hours": lost_run + (lost_wait or 0),
        "assumptions": (f"Estimate: a checkpoint every {minutes} min from the job's start (work since the last one "
                        f"lost), plus the wait until the team's next job on the partition started, at most "
                        f"{settings.GOODPUT_RESTART_WAIT_CAP_HOURS:g} h" + ("" if wait_hours is not None
                                                                            else " (no job started yet)") + "."),
    }


def classify_jobs(jobs, faults, now):
    """``Interruption`` rows (unsaved) for ``jobs`` (of ``ended_jobs``, as a list), given their nodes' ``faults``."""
    window, lag, _ = settings_window()
    nodes = defaultdict(list)
    for job_id, node_id in (SlurmJobNode.objects.filter(job__in=[job.pk for job in jobs], node__isnull=False)
                            .order_by("node_id").values_list("job_id", "node_id")):
        nodes[job_id].append(node_id)
    minutes = hooks.checkpoint_minutes({job.account for job in jobs})
    rows = []
    for job in jobs:
        found = attribution.classify(job.state, job.start_time, job.end_time, set(nodes[job.pk]), faults,
                                     window, lag)
        if found is None:
            continue
        fault = found.fault if found.cause == attribution.INFRASTRUCTURE else None
        only_node = nodes[job.pk][0] if len(nodes[job.pk]) == 1 else None
        row = Interruption(
            job=job, state=job.state, started_at=job.start_time, ended_at=job.end_time, gpus=job.gpus,
            account=job.account, partition=job.partition, cause=found.cause, reason=found.reason,
            node_id=fault.node_id if fault else only_node, gpu_id=fault.gpu_id if fault else None,
            xid_event_id=fault.xid_event_id if fault else None,
            transition_id=fault.transition_id if fault else None, fault_ts=fault.ts if fault else None,
        )
        if found.cause == attribution.INFRASTRUCTURE:
            for name, value in estimate(job, minutes[job.account], now).items():
                setattr(row, name, value)
        rows.append(row)
    return rows


def record_interruptions(start, end, now=None):
    """Classify the jobs that ended in [start, end) and store their interruptions (module docstring). Returns
    ``{"interruptions": n, "infrastructure": n, "deleted": n}``."""
    now = now or timezone.now()
    jobs = list(ended_jobs(start, end))
    rows = classify_jobs(jobs, faults_near(ended_jobs(start, end), start, end) if jobs else [], now)
    with transaction.atomic():
        Interruption.objects.bulk_create(rows, batch_size=1000, update_conflicts=True,
                                         unique_fields=["job", "ended_at"], update_fields=ROW_FIELDS)
        # Rows whose job still ends then but is no interruption any more (its record was corrected).
        deleted, _ = (Interruption.objects.filter(ended_at__gte=start, ended_at__lt=end, job__end_time=F("ended_at"))
                      .exclude(job__in=[job.pk for job in jobs]).delete())
    return {"interruptions": len(rows),
            "infrastructure": sum(row.cause == attribution.INFRASTRUCTURE for row in rows), "deleted": deleted}
