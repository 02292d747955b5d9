"""The rules' plain data: the thresholds, what the query layer (``gather``) hands them and the finding they
return. No database."""

from dataclasses import dataclass, field
from decimal import Decimal

from ..models import Recommendation

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
    # …with evidence of pressure: at least this many jobs ended OUT_OF_MEMORY in the window (one is one run's batch
    # size; a full frame buffer alone is an inference server's preallocation); high severity from this share of the
    # ended jobs. Generic FAILED jobs are no memory evidence (a code error, an NCCL timeout end the same way).
    memory_oom_jobs: int = 2
    memory_oom_share: float = 0.05
    failed_share: float = 0.05  # unused since memory-bound needs OOM jobs: kept for callers that set it
    min_ended_jobs: int = 10
    fault_days: int = 2  # days with a move to degraded in ``fault_window_days``
    fault_window_days: int = 365
    xid_days: int = 3  # days with XID errors in ``xid_window_days``
    xid_window_days: int = 30
    # Ageing: faults on a node under warranty are a repair (RMA), not ageing, unless they are spread over its model's
    # nodes at the site: at least this many of them fault, and at least this share (a fleet-wide wear or a bad batch).
    repair_spread_nodes: int = 3
    repair_spread_share: float = 0.2
    snooze_days: int = 30  # a decided recommendation is not raised again for this long
    idle_day_util: float = 5.0  # %: a node's day whose GPUs averaged below this is idle…
    idle_day_min_hours: int = 12  # …counted when it has readings for at least this many of its hours
    idle_days: int = 3  # under-used: a node in service with at least this many idle days in the window
    team_min_gpu_hours: float = 100.0  # under-used teams: judged over at least this many held GPU-hours with telemetry
    stuck_days: int = 14  # under-used: a node delivered or in burn-in for longer than this
    # under-used, idle nodes, against their own history (the daily rollups of the ``idle_history_weeks`` weeks before
    # the window): a week is observed with ≥ ``idle_days`` days with readings, idle with ≥ ``idle_days`` idle days.
    # Reclaim when ≥ ``idle_history_weeks_idle`` earlier weeks were idle too (one week of use allowed: a test, a
    # demo); busy in more weeks than that allows, the window's idle days are a dip, not the node's trend.
    idle_history_weeks: int = 4
    idle_history_weeks_idle: int = 3
    # With too little history to decide (a new node or fleet): medium severity at most, and not raised when on most
    # of its idle days at least this share of the fleet's other nodes were idle too (a holiday). Its partition's are
    # not enough: a new partition nobody uses looks like one in a maintenance week (raised, unconfirmed).
    idle_shared_share: float = 0.5
    # Over-allocated teams: a held GPU-hour ran nothing (no process) when its max utilization stayed below
    # ``team_unused_util_max`` and its memory used, where DCGM reports it, below ``team_no_process_memory_gb``
    # (a CUDA context alone takes ~0.5 GB); raised when such GPU-hours reach ``team_unused_share`` of those held.
    # Low but non-zero utilization is a performance problem (storage, input pipeline), not over-allocation.
    team_unused_util_max: float = 2.0
    team_no_process_memory_gb: float = 1.0
    team_unused_share: float = 0.3
    # reliability-bound: infrastructure interruptions' lost GPU-hours above this share of the partition's allocated
    # GPU-hours (None: ``settings.RELIABILITY_LOST_SHARE``); a node with this many of them is a repeat offender.
    reliability_lost_share: float | None = None
    repeat_offender_interruptions: int = 2
    # capacity-bound, before buying: another partition of the same GPU model gives whole nodes when its mean
    # utilization is below this (a partition half busy or more is in use, whatever its spare)…
    rebalance_util_max: float = 50.0
    # …and only the nodes beyond what its busiest hours need: this quantile of its hourly utilization, plus its
    # own queue, at ``target_util`` (a day-busy, night-idle service keeps what its days need).
    rebalance_peak_quantile: float = 0.95


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
    oom_users: int = 0  # distinct Slurm users among them
    # The fast fabric of the nodes its multi-node jobs ran on: the highest downlink:uplink ratio of the
    # switches they attach to, those above 1 ({name: ratio}), the fabrics' names and the weakest node's
    # bandwidth per GPU slot. None: not recorded.
    oversubscription: float | None = None
    oversubscribed_switches: dict = field(default_factory=dict)
    fabrics: list = field(default_factory=list)
    fabric_gbps_per_gpu: float | None = None
    nodes: int = 0
    gpus_out_of_service: int = 0  # degraded or in repair (``inventory.capacity``): returned first, before buying
    gpus_arriving: int = 0  # delivered or in burn-in (``inventory.capacity``): they enter service before a purchase
    # The main GPU model of its in-service GPUs and the other partitions seen in the window (``Peer``, one per
    # partition and GPU model): idle ones of the same model are moved before anything is bought (``gather.rebalance``).
    gpu_model_id: int | None = None
    gpu_model_name: str = ""
    peers: list = field(default_factory=list)
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


@dataclass
class Peer:
    """Another partition's nodes of one GPU model, and that partition's load over the window, as the capacity rule
    weighs moving them: ``gpus_total`` GPUs reporting in the partition, ``util_peak`` the ``rebalance_peak_quantile``
    of its hourly mean utilization (%); ``nodes``/``gpus`` its in-service nodes of ``gpu_model_id`` and their GPUs
    in service."""

    partition: str
    gpu_model_id: int | None
    gpu_model_name: str
    nodes: int
    gpus: int
    gpus_total: int
    util_mean: float
    util_peak: float
    gpus_waiting: float = 0.0
    jobs_started: int = 0
    wait_p50_hours: float | None = None
    wait_p95_hours: float | None = None


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
    # Like is compared with like: the GPU model and fast fabric of the nodes its jobs ran on ("": not recorded)…
    gpu_model: str = ""
    fabric: str = ""
    # …and, for multi-node groups, those nodes and their fabric as ``PartitionStats`` has it for the partition.
    node_ids: set = field(default_factory=set)
    fabrics: list = field(default_factory=list)
    oversubscription: float | None = None
    oversubscribed_switches: dict = field(default_factory=dict)
    fabric_gbps_per_gpu: float | None = None

    @property
    def label(self):
        if self.low == self.high:
            return f"{self.low} node{'s' if self.low > 1 else ''}"
        return f"{self.low}+ nodes" if self.high is None else f"{self.low}–{self.high} nodes"

    @property
    def util(self):
        return self.util_sum / self.gpu_hours if self.gpu_hours else None

    @property
    def group(self):
        return (self.gpu_model, self.fabric)

    @property
    def group_label(self):
        return f"{self.gpu_model or 'GPU model not recorded'} on {self.fabric or 'no fast fabric'}"


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
    fleet_nodes: int = 0  # nodes (not retired) of its model at its site, itself included; 0: not counted


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
    # Its own history (the ``idle_history_weeks`` before the window, daily rollups): weeks with readings, idle
    # weeks, mean utilization (None: no readings).
    weeks_observed: int = 0
    weeks_idle: int = 0
    history_util: float | None = None
    # Of its idle days in the window, those when ≥ ``idle_shared_share`` of the fleet's other nodes were idle too,
    # and the mean share of the fleet's (of its partition's) other nodes idle on its idle days (None: no others).
    shared_idle_days: int = 0
    others_idle_share: float | None = None
    partition_idle_share: float | None = None
    # Mean utilization (%) of the fleet and of its partition (nodes in service) in the window and in the weeks before.
    fleet_util: float | None = None
    fleet_history_util: float | None = None
    partition_util: float | None = None
    partition_history_util: float | None = None


@dataclass
class TeamUse:
    """A Slurm account's GPU-hours held on nodes with telemetry in the window and the busy part of them."""

    account: str
    held_gpu_hours: float = 0.0
    busy_gpu_hours: float = 0.0
    idle_cost: float = 0.0  # the unused GPU-hours priced per node
    contract_priced_hours: float = 0.0  # held GPU-hours on nodes priced by a contract
    partitions: dict = field(default_factory=dict)  # partition → held GPU-hours
    # The held GPU-hours by what ran: nothing (no process: the unused ones ``idle_cost`` prices), a process that
    # computed nothing all hour (memory held), something at a low mean utilization (< ``storage_busy_util``).
    unused_gpu_hours: float = 0.0
    stalled_gpu_hours: float = 0.0
    low_util_gpu_hours: float = 0.0

    @property
    def unused_share(self):
        return self.unused_gpu_hours / self.held_gpu_hours if self.held_gpu_hours else None

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
