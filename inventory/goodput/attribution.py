"""Who ended a job, and what an infrastructure interruption cost: plain Python over plain data, no Django.

Attribution (``classify``)
    A job is *interrupted* when it ended in any state but COMPLETED. The interruption is the infrastructure's when

    - Slurm says so: ``NODE_FAIL`` (a node of the job stopped answering) or ``BOOT_FAIL`` (a node failed to boot
      for it), or
    - it ended ``FAILED`` or ``REQUEUED`` and a fault of one of its nodes lies near its end: a hardware XID event
      (79: the GPU fell off the bus; 48/63/64/92/94/95/140: ECC), an hour with double-bit ECC errors, or the node
      (or one of its GPUs) moving to *degraded*. "Near" is from ``window`` before the end (never before the job
      started) to ``lag`` after it: a fault is read by the next scrape or pull, a little after it happened.

    Otherwise it is the user's (``FAILED`` with no fault nearby, ``OUT_OF_MEMORY``, ``CANCELLED``, ``TIMEOUT``,
    ``DEADLINE``) or the scheduler's (``PREEMPTED``, and a requeue with no fault nearby: an operator or a
    preemption put it back in the queue). Running, pending and completed jobs are not interruptions.

    Of several faults near the end, the most specific is the cause (``FAULT_ORDER``: an XID 79, then an ECC error,
    then another hardware XID, then the ECC counter, then a degraded node), and of those the latest before the end.

Lost GPU-hours (``lost_run_hours``, ``restart_wait_hours``) — an *estimate*, under these assumptions:

    - the job checkpointed every ``T`` minutes from its start (``T``: the plan's interval when planning supplies
      one, else ``settings.GOODPUT_CHECKPOINT_MINUTES``), so the work since its last checkpoint is its run time
      ``R`` modulo ``T`` (``R`` itself when it never reached one); that times its GPUs is lost;
    - the team then waited until its next job on the same partition started, at most ``cap`` hours (a team that
      stops for a week did not wait a week); those hours times the job's GPUs are lost too. They lie outside the
      allocation, so the goodput ratio (useful / allocated GPU-hours) counts only the first part.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from inventory.telemetry.xid import ECC_CODES

INFRASTRUCTURE, USER, SCHEDULER = "infrastructure", "user", "scheduler"

# Reasons, with the cause each belongs to.
NODE_FAIL, BOOT_FAIL = "node_fail", "boot_fail"
XID_79, ECC, XID, ECC_COUNTER, DEGRADED = "xid_79", "ecc", "xid", "ecc_dbe", "degraded"
FAILED, OOM, CANCELLED, TIMEOUT, DEADLINE = "failed", "oom", "cancelled", "timeout", "deadline"
PREEMPTED, REQUEUED = "preempted", "requeued"

REASONS = {
    NODE_FAIL: "Node failure (Slurm NODE_FAIL)",
    BOOT_FAIL: "Node failed to boot (Slurm BOOT_FAIL)",
    XID_79: "GPU fell off the bus (XID 79) near the end",
    ECC: "ECC error XID near the end",
    XID: "Hardware XID near the end",
    ECC_COUNTER: "Double-bit ECC errors counted near the end",
    DEGRADED: "Node or GPU moved to degraded near the end",
    FAILED: "Failed, no fault nearby",
    OOM: "Out of memory",
    CANCELLED: "Cancelled",
    TIMEOUT: "Time limit reached",
    DEADLINE: "Deadline reached",
    PREEMPTED: "Preempted",
    REQUEUED: "Requeued, no fault nearby",
}
# The order in which faults near the end are preferred as the cause: the most specific first.
FAULT_ORDER = (XID_79, ECC, XID, ECC_COUNTER, DEGRADED)

INFRASTRUCTURE_STATES = {"NODE_FAIL": NODE_FAIL, "BOOT_FAIL": BOOT_FAIL}
FAULT_STATES = {"FAILED": FAILED, "REQUEUED": REQUEUED}  # infrastructure with a fault nearby, else their reason
USER_STATES = {"OUT_OF_MEMORY": OOM, "CANCELLED": CANCELLED, "TIMEOUT": TIMEOUT, "DEADLINE": DEADLINE}
SCHEDULER_STATES = {"PREEMPTED": PREEMPTED}
ENDED_STATES = {*INFRASTRUCTURE_STATES, *FAULT_STATES, *USER_STATES, *SCHEDULER_STATES}


def cause_of(reason):
    if reason in (NODE_FAIL, BOOT_FAIL, *FAULT_ORDER):
        return INFRASTRUCTURE
    return SCHEDULER if reason in (PREEMPTED, REQUEUED) else USER


def xid_reason(code):
    """The reason a hardware XID event stands for."""
    return XID_79 if code == 79 else ECC if code in ECC_CODES else XID


@dataclass(frozen=True)
class Fault:
    """A fault on a node (``node_id``), maybe of one GPU: an XID event (``xid_event_id``), an hour with double-bit
    ECC errors, or a move to degraded (``transition_id``). ``reason``: one of ``FAULT_ORDER``. A fault known only
    to the hour (the ECC counter's increase) lasts from ``ts`` to ``until``: it is near a job's end when that
    period overlaps the job's window."""

    reason: str
    ts: datetime
    node_id: int
    gpu_id: int | None = None
    xid_event_id: int | None = None
    transition_id: int | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class Attribution:
    cause: str
    reason: str
    fault: Fault | None = None


def classify(state, start, end, node_ids, faults, window=timedelta(minutes=10), lag=timedelta(minutes=5)):
    """Who ended a job that ran from ``start`` to ``end`` in Slurm state ``state`` on the nodes ``node_ids``:
    an ``Attribution``, or None when the job is no interruption (completed, still running, never started).
    ``faults``: ``Fault``s of any nodes and times (those of other nodes, or not near the end, are ignored)."""
    if state not in ENDED_STATES or start is None or end is None:
        return None
    fault = nearest_fault(start, end, node_ids, faults, window, lag)
    if state in INFRASTRUCTURE_STATES:
        return Attribution(INFRASTRUCTURE, INFRASTRUCTURE_STATES[state], fault)
    if state in FAULT_STATES:
        if fault is not None:
            return Attribution(INFRASTRUCTURE, fault.reason, fault)
        reason = FAULT_STATES[state]
        return Attribution(cause_of(reason), reason)
    reason = USER_STATES.get(state) or SCHEDULER_STATES[state]
    return Attribution(cause_of(reason), reason)


def nearest_fault(start, end, node_ids, faults, window, lag):
    """The fault that best explains a job's end: of the faults of ``node_ids`` from ``end - window`` (not before
    ``start``) to ``end + lag``, the first reason in ``FAULT_ORDER``, the latest of those at or before the end
    (else the earliest after it). None without one."""
    since, until = max(start, end - window), end + lag
    near = [f for f in faults if f.node_id in node_ids and f.ts <= until and since <= (f.until or f.ts)]
    if not near:
        return None
    return min(near, key=lambda f: (FAULT_ORDER.index(f.reason), f.ts > end, abs((end - f.ts).total_seconds()),
                                    f.xid_event_id or 0, f.transition_id or 0))


def since_checkpoint(run, interval):
    """The part of a run of length ``run`` (a timedelta) after its last checkpoint, checkpoints every ``interval``
    from the start: ``run`` mod ``interval`` (all of ``run`` when ``interval`` is zero or None)."""
    run = max(run, timedelta(0))
    if not interval or interval <= timedelta(0):
        return run
    return run % interval


def lost_run_hours(start, end, gpus, interval):
    """GPU-hours of the work since the last checkpoint (``since_checkpoint`` × GPUs)."""
    return gpus * since_checkpoint(end - start, interval).total_seconds() / 3600


def restart_wait(end, next_start, cap, now):
    """How long the team waited after the interruption at ``end`` until its next job started (``next_start``;
    None: none started yet), at most ``cap``; None while no job has started and ``cap`` has not passed (not known
    yet), ``cap`` once it has."""
    if next_start is None:
        return cap if now - end >= cap else None
    return min(max(next_start - end, timedelta(0)), cap)


def mtbi_hours(gpu_hours, interruptions, gpus):
    """Mean time between infrastructure interruptions for a job of ``gpus`` GPUs, in hours: the GPU-hours per
    interruption, shared by its GPUs (a job of N GPUs meets N GPUs' faults). None without an interruption."""
    if not interruptions or not gpus:
        return None
    return gpu_hours / interruptions / gpus


def expected_restarts(job_hours, mtbi):
    """Expected restarts of a job of ``job_hours`` hours given its ``mtbi_hours``: ``job_hours / mtbi``. None when
    the MTBI is unknown (no interruption seen); 0.0 for a zero MTBI is impossible (MTBI > 0 when defined)."""
    return None if mtbi is None else job_hours / mtbi if mtbi else None


def per_1000_gpu_days(interruptions, gpu_hours):
    """Interruptions per 1,000 GPU-days of allocation; None without allocation."""
    return interruptions / (gpu_hours / 24) * 1000 if gpu_hours else None


def goodput_ratio(allocated, lost_run):
    """(allocated − lost) / allocated, in [0, 1]; None without allocation. ``lost_run`` is the work lost inside the
    allocation (``lost_run_hours``), not the restart wait, which lies outside it."""
    if not allocated:
        return None
    return min(1.0, max(0.0, (allocated - lost_run) / allocated))
