"""Expansion recommendations from telemetry: the fleet's warning signs, detected.

The analysis (daily by Celery beat, ``planning.tasks.analyse_recommendations``, or on demand from the
recommendations page) reads the last ``window_days`` of GPU hourly rollups and Slurm job records, the
nodes' warranty and fault history, and writes a ``Recommendation`` per bottleneck it finds, with its
evidence (figures and a chart's series) and a suggested action. Three layers, one module each:

- ``gather`` (the query layer): set-based aggregates, a constant number of queries whatever the fleet's
  size, returning plain data (``PartitionStats`` per Slurm partition, ``NodeHealth`` per suspect node);
- ``rules`` (this module: the plain data and the rules ``capacity_bound`` … ``ageing``): plain functions over
  that data, no database;
- ``store``: ``run``, the entry point, gathers, applies the rules and writes the findings idempotently (one open
  recommendation per kind and scope, updated on every run), resolves open ones the rules no longer find, and
  leaves alone what a manager decided on lately. ``accept`` turns one into a draft capacity plan, ``dismiss``
  records why not.

Definitions (per partition, over the window, nodes in service only)
    - *utilization*: mean of the GPUs' hourly mean utilization (``GPUHourly.util_mean``).
    - *busy hour*: a GPU-hour whose max utilization reached ``busy_util_max`` (work ran in it).
    - *stall share*: 1 − (Σ mean / Σ max utilization) over busy hours: how much of a busy hour the GPUs
      waited between bursts of full speed. DCGM has no "waiting on data loading" counter; bursts of full speed
      between near-idle stalls are its signature in the rollups (all-reduce waits are shorter and steadier).
    - *allocated share*: Slurm-allocated GPU-hours (``jobstats.multi_node_share``) / GPU-hours observed.
    - *queue wait* p50/p95 of jobs started in the window (``jobstats.queue_wait_percentiles``); *GPUs
      waiting*: Σ GPUs × wait of the jobs submitted in the window (pending ones until now) / window hours.
    - *frame-buffer use*: memory used / the GPU model's memory while jobs ran: per node-hour the frame buffer
      used (GPU-hours) and the GPU-hours Slurm's jobs held there, Σ used / Σ held over the window, so that
      short jobs with gaps between them do not dilute it (``add_memory``). Where Slurm placed no job on the
      partition's nodes, the mean over busy hours.
    - *per-GPU utilization by node count*: the jobs in the window grouped by how many nodes they ran on
      (``WIDTHS``: 1, 2, 3–4, 5–8, 9+); per group the jobs, their GPU-hours and the mean ``util_mean`` of their
      nodes' GPUs (in whatever state the nodes are now) over the full hours each job ran (``add_widths``).
      Only jobs holding their nodes whole count: a shared node mixes other jobs' work into its GPUs, and
      Slurm does not say which GPUs were whose.
      DCGM's utilization is the throughput proxy every source reports (SM and tensor activity often are not).

Rules and thresholds (``Thresholds``; the defaults are ``THRESHOLDS``)
    - capacity-bound: utilization ≥ 80 % and long queue waits (p50 ≥ 1 h or p95 ≥ 4 h, over ≥ 5 started jobs)
      → add nodes (enough that the busy GPUs plus the GPUs waiting on average fill the partition to the 80 %
      target) or rent burst capacity. Accepting pre-fills the plan's bill of materials with that many nodes of the
      partition's model.
    - scheduling-bound: long queue waits while ≥ 25 % of the observed GPU-hours were not allocated to any job,
      and utilization below 80 % → fix the queue policy (limits, reservations, fragmentation), not hardware.
    - storage-bound: ≥ 70 % of GPU-hours allocated, and either busy-hour utilization < 50 % with a stall share
      ≥ 35 % (bursty), or, where DCGM's profiling fields are collected on at least half the busy GPU-hours,
      their graphics engine activity (``PROF_GR_ENGINE_ACTIVE``) < 35 % (steadily starved) → more storage read
      throughput (or data loading closer to the GPUs).
    - network-bound: per-GPU utilization falls with node count, the widest group (≥ 5 jobs and ≥ 50 GPU-hours,
      like the single-node group it is compared with) ≥ 15 % below single-node jobs, and the fast fabric
      (InfiniBand, RoCE) of the nodes those multi-node jobs ran on is oversubscribed (a leaf switch their
      attachments go through has a downlink:uplink ratio > 1) or gives less than 400 Gb/s per GPU
      → interconnect upgrade of those switches. High severity when multi-node jobs carry ≥ 50 % of the
      allocated GPU-hours, else medium. Falling utilization on a non-blocking, fast fabric is not raised
      (NCCL settings or the model's own scaling, not hardware); nor is it without the fabric recorded.
    - memory-bound: frame-buffer use ≥ 85 % in busy hours and out-of-memory failures (a Slurm
      ``OUT_OF_MEMORY`` job, or ≥ 5 % of ≥ 10 ended jobs ``FAILED``) → larger-memory GPUs.
    - ageing (per site): nodes out of warranty, or with repeated faults: ≥ 2 days with a move to degraded or a
      hardware ticket people filed (the node or one of its GPUs) in a year, or hardware XID events (a new code
      on the sticky gauge, not hours of it) on ≥ 3 days in 30 → replace them.

    - under-used (reclaim before you buy; the idle GPU-hours priced at each node's cost per GPU-hour from its
      contracts, else ``settings.IDLE_GPU_HOUR_COST``, and the evidence says which):
      * idle nodes (per partition): in-service nodes with ≥ 3 idle days in the window, a day (UTC) being idle when
        it has readings for ≥ 12 of its hours and its GPUs' mean utilization is < 5 % → return them to the pool;
      * over-allocated teams (per Slurm account): over the node-hours with telemetry, the GPU-hours the team's jobs
        held (capped at the GPUs that reported) against their busy GPU-hours (held × the node's mean utilization
        in that hour, DCGM): busy < 40 % of held, over ≥ 100 held GPU-hours → move the team to a shared partition
        or shrink its allocation;
      * stuck nodes (per site): nodes delivered or in burn-in for more than ``stuck_days`` (14) days, from the
        lifecycle record → chase the vendor or finish burn-in. Their GPU-hours since then are priced as well.

    - reliability-bound (per partition, ``inventory.goodput``'s figures over the window): the infrastructure's
      interruptions lost (work since the last checkpoint plus the restart wait, an estimate) more than
      ``RELIABILITY_LOST_SHARE`` (5 %) of the partition's allocated GPU-hours → burn in, replace the repeat
      offenders (nodes with ≥ 2 of them), keep spare nodes, shorten the checkpoint interval. The evidence lists the
      worst nodes, the reasons (XID classes), the GPU models and the lost GPU-hours' cost.

A recommendation dismissed or accepted is not raised again for ``snooze_days`` (30) after the decision.
"""

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings

from .differential import capacity_differential, scheduling_differential
from .evidence import figure, pct
from .models import Recommendation

K = Recommendation.Kind
SEV = Recommendation.Severity


@dataclass(frozen=True)
class Thresholds:
    window_days: int = 7
    busy_util_max: float = 20.0  # %: an hour counts as busy when its max utilization reached this
    idle_util: float = 5.0  # %: an hour below this mean is idle
    util_high: float = 80.0  # %: capacity-bound at or above
    target_util: float = 80.0  # %: capacity is sized so that the load fills it to this
    wait_p50_hours: float = 1.0  # long queue waits: p50 at or above…
    wait_p95_hours: float = 4.0  # …or p95 at or above
    min_jobs: int = 5  # started jobs needed before queue waits count
    unallocated_share: float = 0.25  # scheduling-bound: share of observed GPU-hours no job had
    storage_allocated_share: float = 0.7
    storage_busy_util: float = 50.0  # %: below
    storage_stall_share: float = 0.35  # at or above
    # …or, where DCGM's profiling fields are collected on at least half the busy GPU-hours, a graphics-engine
    # activity below this in busy hours, on GPUs that jobs hold: starved without bursts (DCGM's own measure).
    storage_engine_active: float = 0.35
    # A group of jobs by node count counts with this many jobs and GPU-hours: below, a few jobs' quirks
    # (a slow input pipeline, a small model) would decide the mean.
    network_min_jobs: int = 5
    network_min_gpu_hours: float = 50.0
    # Data-parallel jobs that overlap all-reduce with compute keep ≥ 90 % per-GPU utilization to a few nodes
    # on a non-blocking fabric, and groups of healthy jobs differ by a few %: a 15 % fall is the fabric.
    network_util_drop: float = 0.15
    network_multi_node_share: float = 0.5  # high severity at or above: most of the work would gain
    fabric_gbps_per_gpu: float = 400.0  # NDR reference designs give each GPU its own 400 Gb/s rail; less is thin
    memory_share: float = 0.85  # frame-buffer use at or above
    failed_share: float = 0.05  # of ended jobs, with at least…
    min_ended_jobs: int = 10
    fault_days: int = 2  # days with a move to degraded in ``fault_window_days``
    fault_window_days: int = 365
    xid_days: int = 3  # days with XID errors in ``xid_window_days``
    xid_window_days: int = 30
    snooze_days: int = 30  # a decided recommendation is not raised again for this long
    idle_day_util: float = 5.0  # %: a node's day whose GPUs averaged below this is idle…
    idle_day_min_hours: int = 12  # …counted when it has readings for at least this many of its hours
    idle_days: int = 3  # under-used: a node in service with at least this many idle days in the window
    team_used_share: float = 0.4  # under-used: a team's busy GPU-hours below this share of the GPU-hours it held
    team_min_gpu_hours: float = 100.0  # …over at least this many held GPU-hours with telemetry
    stuck_days: int = 14  # under-used: a node delivered or in burn-in for longer than this
    # reliability-bound: infrastructure interruptions' lost GPU-hours above this share of the partition's allocated
    # GPU-hours (None: ``settings.RELIABILITY_LOST_SHARE``); a node with this many of them is a repeat offender.
    reliability_lost_share: float | None = None
    repeat_offender_interruptions: int = 2


THRESHOLDS = Thresholds()


# --- Plain data -------------------------------------------------------------------------------------------


@dataclass
class PartitionStats:
    """What the window says about one Slurm partition (nodes in service only); None: not observed."""

    partition: str
    gpus: int = 0
    gpu_hours: float = 0.0
    util_mean: float | None = None
    busy_hours: float = 0.0
    busy_util: float | None = None
    stall_share: float | None = None
    idle_share: float | None = None
    memory_share: float | None = None
    engine_active: float | None = None  # mean PROF_GR_ENGINE_ACTIVE (0-1) of busy hours where reported
    engine_hours: float = 0.0  # busy GPU-hours with it reported
    allocated_gpu_hours: float = 0.0
    multi_node_share: float | None = None
    jobs_started: int = 0
    wait_p50_hours: float | None = None
    wait_p95_hours: float | None = None
    gpus_waiting: float = 0.0
    widths: list = field(default_factory=list)  # ``Width`` per node-count group with jobs, narrowest first
    ended_jobs: int = 0
    failed_jobs: int = 0
    oom_jobs: int = 0
    # The fast fabric of the nodes its multi-node jobs ran on: the highest downlink:uplink ratio of the
    # switches they attach to, those above 1 ({name: ratio}), the fabrics' names and the weakest node's
    # bandwidth per GPU slot. None: not recorded.
    oversubscription: float | None = None
    oversubscribed_switches: dict = field(default_factory=dict)
    fabrics: list = field(default_factory=list)
    fabric_gbps_per_gpu: float | None = None
    nodes: int = 0
    gpus_out_of_service: int = 0  # degraded or in repair (``inventory.capacity``): returned first, before buying
    site_id: int | None = None
    site_name: str = ""
    node_model_id: int | None = None
    node_model_name: str = ""
    gpu_slots: int = 8
    node_price: Decimal | None = None
    series: dict = field(default_factory=dict)  # {"x": [...], "util": [...], "util_max": [...], "memory": [...]}

    @property
    def allocated_share(self):
        # At most 1: more GPU-hours allocated than observed means GPUs that did not report, not > 100 %.
        return min(1.0, self.allocated_gpu_hours / self.gpu_hours) if self.gpu_hours else None


WIDTHS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, None))  # node-count groups: (fewest, most or None)


@dataclass
class Width:
    """Jobs of one partition that ran on ``low``…``high`` nodes: their GPU-hours measured (full hours with
    telemetry) and the sum of their GPUs' hourly mean utilization over those hours."""

    low: int
    high: int | None
    jobs: int = 0
    gpu_hours: float = 0.0
    util_sum: float = 0.0

    @property
    def label(self):
        if self.low == self.high:
            return f"{self.low} node{'s' if self.low > 1 else ''}"
        return f"{self.low}+ nodes" if self.high is None else f"{self.low}–{self.high} nodes"

    @property
    def util(self):
        return self.util_sum / self.gpu_hours if self.gpu_hours else None


def width_of(node_count):
    return next(i for i, (low, high) in enumerate(WIDTHS) if node_count >= low and (high is None or node_count <= high))


@dataclass
class NodeHealth:
    node_id: int
    hostname: str
    site_id: int
    site_name: str
    node_model_id: int
    node_model_name: str
    node_price: Decimal | None
    warranty_end: object = None  # a date or None
    fault_days: int = 0
    xid_errors: int = 0
    xid_days: int = 0


@dataclass
class IdleNode:
    """An in-service node's idle days in the window: GPU-hours observed and idle (Σ 1 − utilization) in them."""

    node_id: int
    hostname: str
    partition: str
    site_id: int
    idle_days: int
    gpu_hours: float
    idle_gpu_hours: float
    util_mean: float  # % over its idle days
    hour_cost: float  # per GPU-hour
    priced_by_contract: bool


@dataclass
class TeamUse:
    """A Slurm account's GPU-hours held on nodes with telemetry in the window and the busy part of them."""

    account: str
    held_gpu_hours: float = 0.0
    busy_gpu_hours: float = 0.0
    idle_cost: float = 0.0  # (held − busy) priced per node
    contract_priced_hours: float = 0.0  # held GPU-hours on nodes priced by a contract
    partitions: dict = field(default_factory=dict)  # partition → held GPU-hours

    @property
    def used_share(self):
        return self.busy_gpu_hours / self.held_gpu_hours if self.held_gpu_hours else None


@dataclass
class StuckNode:
    node_id: int
    hostname: str
    state: str  # the label: "Delivered", "Burn-in"
    site_id: int
    site_name: str
    since: object  # a datetime
    days: int
    gpus: int
    hour_cost: float
    priced_by_contract: bool


@dataclass
class Finding:
    """One recommendation as the rules see it, before it is written."""

    kind: str
    key: str
    severity: str
    title: str
    summary: str
    action: str
    figures: list
    chart: dict
    partition: str = ""
    site_id: int | None = None
    node_model_id: int | None = None
    node_count: int = 0
    node_price: Decimal | None = None
    measured: dict = field(default_factory=dict)  # the rule's inputs as numbers, for a plan made from it
    # The differential: what the rule checked besides its finding, and why each was ruled out (or taken first),
    # as ``ruled_out(kind, why, *figures)``.
    ruled_out: list = field(default_factory=list)

    @property
    def evidence(self):
        return {"figures": self.figures, "chart": self.chart, **({"measured": self.measured} if self.measured else {}),
                "ruled_out": self.ruled_out}



def long_waits(p, t):
    return p.jobs_started >= t.min_jobs and (
        (p.wait_p50_hours or 0) >= t.wait_p50_hours or (p.wait_p95_hours or 0) >= t.wait_p95_hours)


def util_chart(p, title, names=("util",)):
    labels = {"util": "mean utilization (%)", "util_max": "max utilization (%)", "memory": "frame buffer used (%)"}
    return {"type": "timeseries", "title": title, "data": {
        "x": p.series.get("x", []), "x_title": "hour (UTC)", "y_title": "GPU utilization (%)", "y_range": [0, 100],
        "series": [{"name": labels[name], "y": p.series.get(name, [])} for name in names],
    }}


def wait_figures(p, t):
    return [
        figure("Queue wait p50", p.wait_p50_hours, "h", f"≥ {t.wait_p50_hours} h, or p95 ≥ {t.wait_p95_hours} h"),
        figure("Queue wait p95", p.wait_p95_hours, "h"),
        figure("Jobs started", p.jobs_started, "", f"≥ {t.min_jobs}"),
    ]


# --- Rules: plain functions over plain data -------------------------------------------------------------


def capacity_bound(p, t=THRESHOLDS):
    if p.util_mean is None or p.util_mean < t.util_high or not long_waits(p, t):
        return None
    # The queued work fills added capacity to the target too, as a plan's analysis sizes it: capacity for
    # (busy GPUs + GPUs waiting) at the target utilization, less the GPUs in service. GPUs of the partition out of
    # service (degraded, in repair) come back before anything bought arrives: they count first.
    extra_gpus = max(0.0, (p.gpus * p.util_mean / 100 + p.gpus_waiting) / (t.target_util / 100) - p.gpus)
    returned = min(p.gpus_out_of_service, math.ceil(extra_gpus))
    to_buy = max(0.0, extra_gpus - returned)
    nodes = math.ceil(to_buy / max(p.gpu_slots, 1)) if to_buy else 0
    severity = SEV.HIGH if (p.wait_p95_hours or 0) >= 2 * t.wait_p95_hours or p.util_mean >= 90 else SEV.MEDIUM
    model = p.node_model_name or "nodes"
    price = f" at {p.node_price:,.0f} {settings.COST_CURRENCY} each" if p.node_price is not None else ""
    where = f"partition {p.partition or '(none)'}"
    first = (f"Return the {p.gpus_out_of_service} GPUs of {where} out of service (degraded or in repair) to service "
             "first" if p.gpus_out_of_service else "")
    if nodes:
        buy = (f"add {nodes} × {model}{price} to {where}, or rent burst capacity for about "
               f"{math.ceil(to_buy)} GPUs until they arrive.")
        action = f"{first}; then {buy}" if first else buy[0].upper() + buy[1:]
    else:
        action = f"{first}: they cover the {math.ceil(extra_gpus)} GPUs needed, so buy nothing yet."
    return Finding(
        kind=K.CAPACITY, key=f"{K.CAPACITY}:partition={p.partition}", severity=severity,
        title=f"Partition {p.partition or '(none)'} is capacity-bound",
        summary=(f"GPUs were {p.util_mean:.0f} % busy and jobs waited {p.wait_p50_hours:.1f} h (p50), "
                 f"{p.wait_p95_hours:.1f} h (p95) to start: demand exceeds the {p.gpus} GPUs in service. "
                 f"On average {p.gpus_waiting:.1f} GPUs' worth of jobs sat in the queue."),
        action=action,
        figures=[
            figure("Mean GPU utilization", p.util_mean, "%", f"≥ {t.util_high:.0f} %"),
            *wait_figures(p, t),
            figure("GPUs in service", p.gpus),
            figure("GPUs out of service (degraded or in repair)", p.gpus_out_of_service, "GPUs", "returned first"),
            figure("GPUs' worth of jobs waiting (mean)", p.gpus_waiting, "GPUs"),
            figure("Suggested nodes", nodes, model,
                   f"to bring utilization to {t.target_util:.0f} % and clear the queue"
                   + (f", after the {returned} GPUs returned to service" if returned else "")),
        ],
        chart=util_chart(p, f"Utilization of partition {p.partition}"),
        partition=p.partition, site_id=p.site_id, node_model_id=p.node_model_id, node_count=nodes,
        node_price=p.node_price,
        measured={"gpus": p.gpus, "util_mean": round(p.util_mean, 2), "gpus_waiting": round(p.gpus_waiting, 2),
                  "target_util": t.target_util, "gpu_slots": p.gpu_slots, "extra_gpus": round(extra_gpus, 2),
                  "gpus_out_of_service": p.gpus_out_of_service, "returned_gpus": returned},
        ruled_out=[capacity_differential(p, extra_gpus, returned), scheduling_differential(p, t)],
    )


def scheduling_bound(p, t=THRESHOLDS):
    unallocated = None if p.allocated_share is None else max(0.0, 1 - p.allocated_share)
    if (unallocated is None or unallocated < t.unallocated_share or not long_waits(p, t)
            or (p.util_mean or 0) >= t.util_high):
        return None
    idle_gpus = unallocated * p.gpus
    return Finding(
        kind=K.SCHEDULING, key=f"{K.SCHEDULING}:partition={p.partition}",
        severity=SEV.HIGH if unallocated >= 2 * t.unallocated_share else SEV.MEDIUM,
        title=f"Partition {p.partition or '(none)'} is scheduling-bound",
        summary=(f"Jobs waited {p.wait_p50_hours:.1f} h (p50), {p.wait_p95_hours:.1f} h (p95) to start while "
                 f"{pct(unallocated):.0f} % of the GPU-hours observed (about {idle_gpus:.0f} of {p.gpus} GPUs) "
                 "ran no job: the queue holds work back, not a lack of GPUs."),
        action=("Fix the queue policy, not the hardware: look at partition and account limits (GRES, QOS "
                "MaxTRES), reservations and drained nodes, node sharing for jobs smaller than a node, and "
                "backfill settings so that waiting jobs fit the idle GPUs."),
        figures=[
            figure("GPU-hours not allocated to any job", pct(unallocated), "%", f"≥ {pct(t.unallocated_share):.0f} %"),
            *wait_figures(p, t),
            figure("Mean GPU utilization", p.util_mean, "%", f"< {t.util_high:.0f} %"),
            figure("GPU-hours observed", p.gpu_hours, "GPU-h"),
            figure("GPU-hours allocated (Slurm)", p.allocated_gpu_hours, "GPU-h"),
        ],
        chart={"type": "hbar", "title": "GPU-hours in the window", "data": {
            "labels": ["observed (telemetry)", "allocated to jobs (Slurm)", "not allocated"], "x_title": "GPU-hours",
            "series": [{"name": "GPU-hours", "values": [round(p.gpu_hours, 1), round(p.allocated_gpu_hours, 1),
                                                         round(max(0.0, p.gpu_hours - p.allocated_gpu_hours), 1)]}],
        }},
        partition=p.partition, site_id=p.site_id,
    )


def bursty(p, t):
    """Busy GPUs ran in bursts of full speed between stalls (the DCGM utilization signature)."""
    return (p.busy_util is not None and p.busy_util < t.storage_busy_util and p.stall_share is not None
            and p.stall_share >= t.storage_stall_share)


def steadily_starved(p, t):
    """The graphics engine was steadily idle on held GPUs (DCGM profiling fields, where collected)."""
    return (p.engine_active is not None and p.engine_hours >= 0.5 * p.busy_hours
            and p.engine_active < t.storage_engine_active)


def storage_bound(p, t=THRESHOLDS):
    if p.allocated_share is None or p.allocated_share < t.storage_allocated_share:
        return None
    if not (bursty(p, t) or steadily_starved(p, t)):
        return None
    if bursty(p, t):
        severe = p.busy_util < t.storage_busy_util * 0.7
        sign = (f"busy GPUs averaged {p.busy_util:.0f} % in bursts of full speed between stalls: about "
                f"{pct(p.stall_share):.0f} % of their time went waiting for data.")
    else:
        severe = p.engine_active < t.storage_engine_active * 0.7
        sign = (f"their graphics engines were active only {pct(p.engine_active):.0f} % of the time, steadily "
                "(DCGM's profiling counters): the GPUs are held, but starved of data.")
    return Finding(
        kind=K.STORAGE, key=f"{K.STORAGE}:partition={p.partition}",
        severity=SEV.HIGH if severe else SEV.MEDIUM,
        title=f"Partition {p.partition or '(none)'} is storage-bound",
        summary=f"{pct(p.allocated_share):.0f} % of the GPU-hours were allocated to jobs, yet {sign}",
        action=("Raise storage read throughput for this partition's jobs: a faster scratch tier, more parallel "
                "file system servers, or local NVMe staging and more data-loader workers, before adding GPUs."),
        figures=[
            figure("GPU-hours allocated to jobs", pct(p.allocated_share), "%",
                   f"≥ {pct(t.storage_allocated_share):.0f} %"),
            figure("Utilization of busy GPUs", p.busy_util, "%", f"< {t.storage_busy_util:.0f} %"),
            figure("Stall share (data-loading wait)", pct(p.stall_share), "%", f"≥ {pct(t.storage_stall_share):.0f} %"),
            figure("Graphics engine active (DCGM profiling)", pct(p.engine_active), "%",
                   f"< {pct(t.storage_engine_active):.0f} %, steadily (or the two above)"),
            figure("Mean GPU utilization", p.util_mean, "%"),
        ],
        chart=util_chart(p, f"Mean and peak utilization of partition {p.partition}", ("util", "util_max")),
        partition=p.partition, site_id=p.site_id,
    )


def network_bound(p, t=THRESHOLDS):
    counted = [w for w in p.widths if w.jobs >= t.network_min_jobs and w.gpu_hours >= t.network_min_gpu_hours]
    single = next((w for w in counted if w.low == 1), None)
    widest = counted[-1] if counted else None
    if single is None or widest is single or not single.util:
        return None
    drop = 1 - widest.util / single.util
    oversubscribed = p.oversubscription is not None and p.oversubscription > 1
    thin = p.fabric_gbps_per_gpu is not None and p.fabric_gbps_per_gpu < t.fabric_gbps_per_gpu
    if drop < t.network_util_drop or not (oversubscribed or thin):
        return None
    name = p.partition or "(none)"
    fabrics = ", ".join(p.fabrics)
    switches = ", ".join(f"{switch} ({ratio:.2f}:1)" for switch, ratio in p.oversubscribed_switches.items())
    fixes = []
    if oversubscribed:
        fixes.append(f"add spine uplinks to {switches} for a non-blocking (1:1) fat tree")
    if thin:
        fixes.append(f"give each GPU its own {t.fabric_gbps_per_gpu:.0f} Gb/s rail on {fabrics} "
                     f"(now {p.fabric_gbps_per_gpu:.0f} Gb/s per GPU)")
    weakness = " and ".join(
        ([f"oversubscribed up to {p.oversubscription:.2f}:1"] if oversubscribed else [])
        + ([f"gives only {p.fabric_gbps_per_gpu:.0f} Gb/s per GPU"] if thin else []))
    multi = p.multi_node_share or 0.0
    figures = []
    for w in p.widths:
        figures += [
            figure(f"Jobs on {w.label}", w.jobs, "", f"≥ {t.network_min_jobs} to count"),
            figure(f"GPU-hours of jobs on {w.label}", w.gpu_hours, "GPU-h",
                   f"≥ {t.network_min_gpu_hours:.0f} to count"),
            figure(f"Per-GPU utilization on {w.label}", w.util, "%",
                   "the reference" if w is single else ("compared" if w is widest else "")),
        ]
    return Finding(
        kind=K.NETWORK, key=f"{K.NETWORK}:partition={p.partition}",
        severity=SEV.HIGH if multi >= t.network_multi_node_share else SEV.MEDIUM,
        title=f"Partition {name} is network-bound",
        summary=(f"Per-GPU utilization falls with the nodes a job spans: {single.util:.0f} % on one node, "
                 f"{widest.util:.0f} % on {widest.label} ({pct(drop):.0f} % lower, {widest.jobs} jobs), while "
                 f"multi-node jobs carry {pct(multi):.0f} % of the partition's GPU-hours. The fabric between "
                 f"their nodes ({fabrics}) is {weakness}: their GPUs wait on gradient all-reduce."),
        action=(f"Upgrade the interconnect of partition {name}: {'; '.join(fixes)}. Until then, "
                "place multi-node jobs under as few leaf switches as possible (Slurm topology/tree)."),
        figures=[
            *figures,
            figure(f"Per-GPU utilization lost on {widest.label}", pct(drop), "%",
                   f"≥ {pct(t.network_util_drop):.0f} % below single-node jobs"),
            figure("GPU-hours from multi-node jobs", pct(p.multi_node_share), "%",
                   f"≥ {pct(t.network_multi_node_share):.0f} % for high severity"),
            figure("Fabric oversubscription (worst switch)", p.oversubscription, ":1", "> 1 is oversubscribed"),
            figure("Oversubscribed switches", switches or None),
            figure("Fabric bandwidth per GPU (weakest node)", p.fabric_gbps_per_gpu, "Gb/s",
                   f"< {t.fabric_gbps_per_gpu:.0f} is thin"),
        ],
        chart={"type": "hbar", "title": f"Per-GPU utilization by node count, partition {name}", "data": {
            "labels": [w.label for w in p.widths], "x_title": "mean per-GPU utilization (%)", "x_range": [0, 100],
            "series": [{"name": "mean per-GPU utilization (%)", "values": [round(w.util, 1) for w in p.widths]}],
        }},
        partition=p.partition, site_id=p.site_id,
    )


def memory_bound(p, t=THRESHOLDS):
    if p.memory_share is None or p.memory_share < t.memory_share:
        return None
    failed_share = p.failed_jobs / p.ended_jobs if p.ended_jobs else 0.0
    if not (p.oom_jobs or (p.ended_jobs >= t.min_ended_jobs and failed_share >= t.failed_share)):
        return None
    return Finding(
        kind=K.MEMORY, key=f"{K.MEMORY}:partition={p.partition}",
        severity=SEV.HIGH if p.oom_jobs else SEV.MEDIUM,
        title=f"Partition {p.partition or '(none)'} is memory-bound",
        summary=(f"Jobs used {pct(p.memory_share):.0f} % of their GPUs' frame buffer while they ran, and "
                 f"{p.failed_jobs} of {p.ended_jobs} jobs that ended failed ({p.oom_jobs} out of memory): "
                 "models no longer fit."),
        action=("Move these workloads to larger-memory GPUs (e.g. 141 GB H200 or 192 GB B200 in place of 80 GB "
                "parts), or budget for activation checkpointing and more sharding, which costs throughput."),
        figures=[
            figure("Frame buffer used while jobs ran", pct(p.memory_share), "%", f"≥ {pct(t.memory_share):.0f} %"),
            figure("Out-of-memory jobs", p.oom_jobs, "", "≥ 1, or failed share"),
            figure("Failed jobs", pct(failed_share), "%",
                   f"≥ {pct(t.failed_share):.0f} % of ≥ {t.min_ended_jobs} ended jobs"),
            figure("Jobs ended", p.ended_jobs),
        ],
        chart=util_chart(p, f"Frame buffer use of partition {p.partition}", ("memory", "util")),
        partition=p.partition, site_id=p.site_id,
    )


def is_ageing(node, today, t=THRESHOLDS):
    """(out of warranty, repeated faults) of a node."""
    expired = node.warranty_end is not None and node.warranty_end < today
    faulty = node.fault_days >= t.fault_days or node.xid_days >= t.xid_days
    return expired, faulty


def ageing(nodes, today, t=THRESHOLDS):
    """One finding per site with nodes out of warranty or with repeated faults."""
    by_site = defaultdict(list)
    for node in nodes:
        expired, faulty = is_ageing(node, today, t)
        if expired or faulty:
            by_site[node.site_id].append((node, expired, faulty))
    findings = []
    for site_id, rows in sorted(by_site.items()):
        rows.sort(key=lambda row: row[0].hostname)
        expired = [n.hostname for n, e, _ in rows if e]
        faulty = [n.hostname for n, _, f in rows if f]
        both = [n.hostname for n, e, f in rows if e and f]
        model_counts = Counter((n.node_model_id, n.node_model_name, n.node_price) for n, _, _ in rows)
        (model_id, model_name, price), _ = model_counts.most_common(1)[0]
        site = rows[0][0].site_name
        parts = []
        if expired:
            parts.append(f"{len(expired)} out of warranty ({', '.join(expired)})")
        if faulty:
            parts.append(f"{len(faulty)} with repeated faults ({', '.join(faulty)})")
        findings.append(Finding(
            kind=K.AGEING, key=f"{K.AGEING}:site={site_id}",
            severity=SEV.HIGH if both or len(faulty) >= 3 else SEV.MEDIUM,
            title=f"{len(rows)} ageing node{'s' if len(rows) != 1 else ''} at {site}",
            summary=f"At {site}, {len(rows)} nodes are due for replacement: {'; '.join(parts)}.",
            action=(f"Replace {len(rows)} node{'s' if len(rows) != 1 else ''} ({model_name} or its successor)"
                    + (f", starting with {', '.join(both)} (out of warranty and faulting)" if both else "")
                    + "; until then keep spares and a support contract for them."),
            figures=[
                figure("Nodes out of warranty", len(expired), "", "warranty end before today"),
                figure("Nodes with repeated faults", len(faulty), "",
                       f"≥ {t.fault_days} days degraded in {t.fault_window_days} d or XID errors on "
                       f"≥ {t.xid_days} days in {t.xid_window_days} d"),
                figure("Both", len(both)),
                {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                    {"hostname": n.hostname, "warranty_end": n.warranty_end.isoformat() if n.warranty_end else None,
                     "out_of_warranty": e, "fault_days": n.fault_days, "xid_days": n.xid_days,
                     "xid_errors": n.xid_errors} for n, e, _ in rows]},
            ],
            chart={"type": "hbar", "title": "Faults per node", "data": {
                "labels": [n.hostname for n, _, _ in rows], "x_title": "days with the fault",
                "series": [{"name": f"days moved to degraded ({t.fault_window_days} d)",
                            "values": [n.fault_days for n, _, _ in rows]},
                           {"name": f"days with XID errors ({t.xid_window_days} d)",
                            "values": [n.xid_days for n, _, _ in rows]}],
            }},
            site_id=site_id, node_model_id=model_id, node_count=len(rows), node_price=price,
        ))
    return findings


def priced(contract_share):
    """What priced an idle cost, in words, from the share of its GPU-hours priced by a contract."""
    default = f"{settings.IDLE_GPU_HOUR_COST:.2f} {settings.COST_CURRENCY} per GPU-hour (IDLE_GPU_HOUR_COST)"
    if contract_share >= 1:
        return "each node's cost per GPU-hour from its contracts"
    if contract_share <= 0:
        return f"the default {default}: no contract gives these nodes a cost"
    return (f"each node's cost per GPU-hour from its contracts ({pct(contract_share):.0f} % of the GPU-hours), "
            f"else the default {default}")


def money(amount):
    return f"{amount:,.0f} {settings.COST_CURRENCY}"


def idle_nodes(nodes, t=THRESHOLDS):
    """One finding per partition with in-service nodes idle on ≥ ``idle_days`` days of the window."""
    by_partition = defaultdict(list)
    for n in nodes:
        if n.idle_days >= t.idle_days:
            by_partition[n.partition].append(n)
    findings = []
    for partition, rows in sorted(by_partition.items()):
        rows.sort(key=lambda n: n.hostname)
        idle_hours = sum(n.idle_gpu_hours for n in rows)
        cost = sum(n.idle_gpu_hours * n.hour_cost for n in rows)
        contract = sum(n.idle_gpu_hours for n in rows if n.priced_by_contract) / idle_hours if idle_hours else 0.0
        name = partition or "(none)"
        hosts = ", ".join(n.hostname for n in rows)
        count = f"{len(rows)} node{'s' if len(rows) != 1 else ''}"
        findings.append(Finding(
            kind=K.UNDER_USED, key=f"{K.UNDER_USED}:idle:partition={partition}",
            severity=SEV.HIGH if len(rows) >= 3 else SEV.MEDIUM,
            title=f"{count} idle in partition {name}",
            summary=(f"In partition {name}, {count} in service sat idle (GPUs below {t.idle_day_util:.0f} % on "
                     f"average) on {t.idle_days} or more days of the last {t.window_days}: {hosts}. Their idle days "
                     f"held {idle_hours:,.0f} idle GPU-hours, {money(cost)} at {priced(contract)}."),
            action=(f"Reclaim before you buy: return {hosts} to the shared pool (or move them to a partition with "
                    "a queue), or power them down until demand returns."),
            figures=[
                figure("Idle nodes", len(rows), "", f"≥ {t.idle_days} idle days in {t.window_days}"),
                figure("Idle GPU-hours (on idle days)", idle_hours, "GPU-h"),
                figure("Cost of the idle GPU-hours", round(cost, 2), settings.COST_CURRENCY, priced(contract)),
                {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                    {"hostname": n.hostname, "idle_days": n.idle_days, "util_mean": round(n.util_mean, 2),
                     "idle_gpu_hours": round(n.idle_gpu_hours, 2), "hour_cost": round(n.hour_cost, 4),
                     "priced_by": "contract" if n.priced_by_contract else "default",
                     "idle_cost": round(n.idle_gpu_hours * n.hour_cost, 2)} for n in rows]},
            ],
            chart={"type": "hbar", "title": f"Idle days per node, partition {name}", "data": {
                "labels": [n.hostname for n in rows], "x_title": f"days below {t.idle_day_util:.0f} %",
                "series": [{"name": "idle days", "values": [n.idle_days for n in rows]}]}},
            partition=partition, site_id=rows[0].site_id, node_count=len(rows),
            measured={"idle_gpu_hours": round(idle_hours, 2), "idle_cost": round(cost, 2)},
        ))
    return findings


def over_allocated(teams, t=THRESHOLDS):
    """One finding per Slurm account whose jobs held GPUs far more than they used them."""
    findings = []
    for team in sorted(teams, key=lambda team: team.account):
        share = team.used_share
        if share is None or team.held_gpu_hours < t.team_min_gpu_hours or share >= t.team_used_share:
            continue
        unused = team.held_gpu_hours - team.busy_gpu_hours
        contract = team.contract_priced_hours / team.held_gpu_hours
        main = max(team.partitions, key=team.partitions.get) if team.partitions else ""
        partitions = ", ".join(f"{p or '(none)'} ({h:,.0f} GPU-h)" for p, h in sorted(team.partitions.items()))
        findings.append(Finding(
            kind=K.UNDER_USED, key=f"{K.UNDER_USED}:team={team.account}",
            severity=SEV.HIGH if share < t.team_used_share / 2 else SEV.MEDIUM,
            title=f"Team {team.account or '(none)'} uses {pct(share):.0f} % of the GPUs it holds",
            summary=(f"Jobs of account {team.account or '(none)'} held {team.held_gpu_hours:,.0f} GPU-hours in the "
                     f"last {t.window_days} days ({partitions}), yet kept them busy only {pct(share):.0f} % of the "
                     f"time (DCGM): {unused:,.0f} GPU-hours held and unused, {money(team.idle_cost)} at "
                     f"{priced(contract)}."),
            action=(f"Move team {team.account or '(none)'} from partition {main or '(none)'} to a shared partition "
                    "(or allow node sharing), and right-size its jobs' GPU requests, so that the GPUs it holds "
                    "idle return to the pool."),
            figures=[
                figure("GPU-hours held (Slurm, with telemetry)", team.held_gpu_hours, "GPU-h",
                       f"≥ {t.team_min_gpu_hours:.0f} to count"),
                figure("Busy GPU-hours (DCGM)", team.busy_gpu_hours, "GPU-h"),
                figure("Used share of the held GPU-hours", pct(share), "%", f"< {pct(t.team_used_share):.0f} %"),
                figure("Cost of the held, unused GPU-hours", round(team.idle_cost, 2), settings.COST_CURRENCY,
                       priced(contract)),
            ],
            chart={"type": "hbar", "title": f"GPU-hours of team {team.account}", "data": {
                "labels": ["held (Slurm)", "busy (DCGM)"], "x_title": "GPU-hours",
                "series": [{"name": "GPU-hours",
                            "values": [round(team.held_gpu_hours, 1), round(team.busy_gpu_hours, 1)]}]}},
            partition=main,
            measured={"held_gpu_hours": round(team.held_gpu_hours, 2), "busy_gpu_hours": round(team.busy_gpu_hours, 2),
                      "idle_cost": round(team.idle_cost, 2)},
        ))
    return findings


def stuck_nodes(nodes, t=THRESHOLDS):
    """One finding per site with nodes delivered or in burn-in for longer than ``stuck_days``."""
    by_site = defaultdict(list)
    for n in nodes:
        if n.days > t.stuck_days:
            by_site[n.site_id].append(n)
    findings = []
    for site_id, rows in sorted(by_site.items()):
        rows.sort(key=lambda n: (-n.days, n.hostname))
        gpu_hours = sum(n.gpus * n.days * 24 for n in rows)
        cost = sum(n.gpus * n.days * 24 * n.hour_cost for n in rows)
        contract = sum(n.gpus * n.days * 24 for n in rows if n.priced_by_contract) / gpu_hours if gpu_hours else 0.0
        site = rows[0].site_name
        listed = ", ".join(f"{n.hostname} ({n.state.lower()} for {n.days} days)" for n in rows)
        count = f"{len(rows)} node{'s' if len(rows) != 1 else ''}"
        findings.append(Finding(
            kind=K.UNDER_USED, key=f"{K.UNDER_USED}:stuck:site={site_id}",
            severity=SEV.HIGH if max(n.days for n in rows) > 2 * t.stuck_days else SEV.MEDIUM,
            title=f"{count} stuck before service at {site}",
            summary=(f"At {site}, {count} waited longer than {t.stuck_days} days to enter service: {listed}. "
                     f"Their {gpu_hours:,.0f} GPU-hours since then went unused: {money(cost)} at {priced(contract)}."),
            action=("Chase the vendor for the parts or fixes that hold them back, and finish burn-in, so that these "
                    "nodes enter service before anything new is bought."),
            figures=[
                figure("Nodes stuck in delivered or burn-in", len(rows), "", f"> {t.stuck_days} days"),
                figure("GPU-hours unused since", gpu_hours, "GPU-h"),
                figure("Cost of those GPU-hours", round(cost, 2), settings.COST_CURRENCY, priced(contract)),
                {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                    {"hostname": n.hostname, "state": n.state, "since": n.since.isoformat(), "days": n.days,
                     "gpus": n.gpus, "hour_cost": round(n.hour_cost, 4),
                     "priced_by": "contract" if n.priced_by_contract else "default"} for n in rows]},
            ],
            chart={"type": "hbar", "title": f"Days before service, {site}", "data": {
                "labels": [n.hostname for n in rows], "x_title": "days in the state",
                "series": [{"name": "days", "values": [n.days for n in rows]}]}},
            site_id=site_id, node_count=len(rows),
            measured={"gpu_hours": gpu_hours, "idle_cost": round(cost, 2)},
        ))
    return findings


# --- Reliability-bound: what infrastructure interruptions cost (inventory.goodput's figures) -----------------


@dataclass
class Reliability:
    """A partition's goodput over the window (``inventory.goodput.queries.goodput_by``'s figures: ``figures`` for
    the partition, ``nodes`` and ``models`` per fault node and GPU model) and its infrastructure interruptions by
    reason (``reasons``: {words: count})."""

    partition: str
    figures: dict
    nodes: list = field(default_factory=list)
    models: list = field(default_factory=list)
    reasons: dict = field(default_factory=dict)
    cost_basis: str = ""
    checkpoint_minutes: list = field(default_factory=list)  # the intervals the estimates assumed


def lost_share_limit(t=THRESHOLDS):
    return settings.RELIABILITY_LOST_SHARE if t.reliability_lost_share is None else t.reliability_lost_share


def lost_share(figures):
    """Lost GPU-hours (work since the last checkpoint plus the restart wait) / allocated GPU-hours; None without
    an allocation."""
    allocated = figures["allocated_gpu_hours"]
    return figures["lost_gpu_hours"] / allocated if allocated else None


def reliability_bound(r, t=THRESHOLDS):
    """A finding when infrastructure interruptions cost the partition more than the limit's share of its
    allocated GPU-hours."""
    g, limit = r.figures, lost_share_limit(t)
    share = lost_share(g)
    if share is None or not g["interruptions"] or share <= limit:
        return None
    name = r.partition or "(none)"
    offenders = [n for n in r.nodes if n["interruptions"] >= t.repeat_offender_interruptions]
    worst = ", ".join(f"{n['name']} ({n['interruptions']}, {n['lost_gpu_hours']:,.0f} GPU-h)" for n in r.nodes[:5])
    reasons = ", ".join(f"{words} ×{count}" for words, count in r.reasons.items())
    models = ", ".join(f"{m['name']} ({m['interruptions']}, {m['lost_gpu_hours']:,.0f} GPU-h)" for m in r.models)
    intervals = sorted(set(r.checkpoint_minutes))
    checkpoint = f"every {'/'.join(str(m) for m in intervals)} min" if intervals else "unknown"
    actions = ["burn in nodes (and nodes back from repair) before they take jobs"]
    if offenders:
        actions.append(f"replace or repair the repeat offenders {', '.join(n['name'] for n in offenders)}")
    actions.append("keep spare nodes in the partition so that a failed node's job restarts at once")
    actions.append(f"shorten the checkpoint interval of its long runs (now assumed {checkpoint})")
    return Finding(
        kind=K.RELIABILITY, key=f"{K.RELIABILITY}:partition={r.partition}",
        severity=SEV.HIGH if share >= 2 * limit else SEV.MEDIUM,
        title=f"Infrastructure failures cost partition {name} {pct(share):.1f} % of its GPU-hours",
        summary=(f"In the last {t.window_days} days {g['interruptions']} job"
                 f"{'s were' if g['interruptions'] != 1 else ' was'} interrupted by the infrastructure in partition "
                 f"{name} ({reasons}): an estimated {g['lost_gpu_hours']:,.1f} GPU-hours lost (work since the last "
                 f"checkpoint, {checkpoint}, plus the wait to restart), {pct(share):.1f} % of its "
                 f"{g['allocated_gpu_hours']:,.0f} allocated GPU-hours, {money(g['lost_cost'])} at {r.cost_basis}. "
                 f"Worst nodes: {worst or 'none on record'}. GPU models: {models or 'unknown'}."),
        action="; ".join(actions).capitalize() + ".",
        figures=[
            figure("Infrastructure interruptions", g["interruptions"], ""),
            figure("Lost GPU-hours (estimate)", g["lost_gpu_hours"], "GPU-h"),
            figure("Allocated GPU-hours", g["allocated_gpu_hours"], "GPU-h"),
            figure("Lost share of the allocated GPU-hours", pct(share), "%", f"> {pct(limit):g} %"),
            figure("Cost of the lost GPU-hours", g["lost_cost"], settings.COST_CURRENCY, r.cost_basis),
            figure("Goodput ratio", g["goodput_ratio"], ""),
            {"label": "Worst nodes", "value": None, "unit": "", "rule": "", "rows": [
                {"hostname": n["name"], "interruptions": n["interruptions"], "lost_gpu_hours": n["lost_gpu_hours"],
                 "lost_cost": n["lost_cost"], "repeat_offender": n in offenders} for n in r.nodes]},
            {"label": "Reasons", "value": None, "unit": "", "rule": "", "rows": [
                {"reason": words, "interruptions": count} for words, count in r.reasons.items()]},
            {"label": "GPU models", "value": None, "unit": "", "rule": "", "rows": [
                {"gpu_model": m["name"], "interruptions": m["interruptions"], "lost_gpu_hours": m["lost_gpu_hours"],
                 "interruptions_per_1000_gpu_days": m["interruptions_per_1000_gpu_days"]} for m in r.models]},
        ],
        chart={"type": "hbar", "title": f"Lost GPU-hours per node, partition {name}", "data": {
            "labels": [n["name"] for n in r.nodes], "x_title": "GPU-hours lost (estimate)",
            "series": [{"name": "lost GPU-hours", "values": [n["lost_gpu_hours"] for n in r.nodes]}]}},
        partition=r.partition, node_count=len(offenders),
        measured={"lost_gpu_hours": g["lost_gpu_hours"], "allocated_gpu_hours": g["allocated_gpu_hours"],
                  "lost_cost": g["lost_cost"], "interruptions": g["interruptions"]},
    )


PARTITION_RULES = (capacity_bound, scheduling_bound, storage_bound, network_bound, memory_bound)


def analyse(partitions, nodes, today, t=THRESHOLDS, under_used=None, reliability=()):
    """Every finding of every rule, for the partitions' and nodes' plain data; ``under_used``: (idle nodes, teams,
    stuck nodes) for the under-used rules; ``reliability``: the partitions' ``Reliability``."""
    findings = []
    for p in partitions:
        findings += [f for rule in PARTITION_RULES if (f := rule(p, t))]
    findings += ageing(nodes, today, t)
    if under_used:
        idle, teams, stuck = under_used
        findings += idle_nodes(idle, t) + over_allocated(teams, t) + stuck_nodes(stuck, t)
    findings += [f for r in reliability if (f := reliability_bound(r, t))]
    return findings
