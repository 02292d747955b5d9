"""Expansion recommendations from telemetry: the fleet's warning signs, detected.

The analysis (daily by Celery beat, ``planning.tasks.analyse_recommendations``, or on demand from the
recommendations page) reads the last ``window_days`` of GPU hourly rollups and Slurm job records, the
nodes' warranty and fault history, and writes a ``Recommendation`` per bottleneck it finds, with its
evidence (figures and a chart's series) and a suggested action. Three layers, one module each:

- ``gather`` (the query layer, one module per kind of data): set-based aggregates, a constant number of
  queries whatever the fleet's size, returning plain data (``PartitionStats`` per Slurm partition,
  ``NodeHealth`` per suspect node);
- ``rules`` (this package: the plain data in ``data``, one module per rule, registered in ``RULES``): plain
  functions over that data, no database;
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
    - *per-GPU utilization by node count*: the jobs in the window grouped by the GPU model and fast fabric of
      their nodes, then by how many nodes they ran on (``WIDTHS``: 1, 2, 3–4, 5–8, 9+); per group the jobs, their
      GPU-hours and the mean ``util_mean`` of their nodes' GPUs (in whatever state the nodes are now) over the
      full hours each job ran (``add_widths``). Only jobs holding their nodes whole count: a shared node mixes
      other jobs' work into its GPUs, and Slurm does not say which GPUs were whose; nor do jobs over nodes of
      different GPU models or fabrics (comparable with neither).
      DCGM's utilization is the throughput proxy every source reports (SM and tensor activity often are not).

Rules and thresholds (``Thresholds``; the defaults are ``THRESHOLDS``)
    - capacity-bound: utilization ≥ 80 % and long queue waits (p50 ≥ 1 h or p95 ≥ 4 h, over ≥ 5 started jobs)
      → add nodes (enough that the busy GPUs plus the GPUs waiting on average fill the partition to the 80 %
      target) or rent burst capacity. Before buying, the partition's GPUs out of service (degraded, in repair) are
      returned, then idle nodes of the same GPU model (the model of most of its in-service GPUs) are moved from other
      partitions: a partition gives whole nodes when its mean utilization is < 50 % (``rebalance_util_max``), its
      own jobs do not wait long, and only the nodes beyond what its busiest hours need — the 95th percentile of its
      hourly mean utilization (``rebalance_peak_quantile``) plus its own queue, at the 80 % target — so that it
      stays at or below the target after the move; the most idle first. Other GPU models are not counted (jobs
      sized for one GPU do not run the same on another). What remains is bought: accepting pre-fills the plan's
      bill of materials with that many nodes of the partition's model (``measured``: ``returned_gpus``,
      ``rebalance_gpus``, ``rebalance_from`` {partition: GPUs}). When two busy partitions share one idle donor,
      each counts the donor's whole spare.
    - scheduling-bound: long queue waits while ≥ 25 % of the observed GPU-hours were not allocated to any job,
      and utilization below 80 % → fix the queue policy (limits, reservations, fragmentation), not hardware.
    - storage-bound: ≥ 70 % of GPU-hours allocated, and either busy-hour utilization < 50 % with a stall share
      ≥ 35 % (bursty), or, where DCGM's profiling fields are collected on at least half the busy GPU-hours,
      their graphics engine activity (``PROF_GR_ENGINE_ACTIVE``) < 35 % (steadily starved) → more storage read
      throughput (or data loading closer to the GPUs).
    - network-bound: per-GPU utilization falls with node count, like for like: the widest group (≥ 5 jobs and
      ≥ 50 GPU-hours, like the single-node group it is compared with) ≥ 15 % below single-node jobs on nodes of
      the same GPU model and fast fabric (an A100 is no reference for an H100; where several models and fabrics
      have such a pair, the one whose jobs span most nodes; none: not raised; the differential ``like_for_like``
      names the groups left out), and the fast fabric (InfiniBand, RoCE) of the nodes those multi-node jobs ran on
      is oversubscribed (a leaf switch their attachments go through has a downlink:uplink ratio > 1) or gives less
      than 400 Gb/s per GPU
      → interconnect upgrade of those switches. High severity when multi-node jobs carry ≥ 50 % of the
      allocated GPU-hours, else medium. Falling utilization on a non-blocking, fast fabric is not raised
      (NCCL settings or the model's own scaling, not hardware); nor is it without the fabric recorded.
    - memory-bound: frame-buffer use ≥ 85 % while jobs ran and evidence of pressure: ≥ 2 jobs ended
      ``OUT_OF_MEMORY`` in the window → larger-memory GPUs; high severity when they are ≥ 5 % of the jobs ended.
      A full frame buffer alone is not raised: inference servers (vLLM, TGI) and JAX reserve ~90 % of it at
      start (differential ``preallocation``); nor are generic ``FAILED`` jobs evidence (``failed_jobs``): a code
      error, an NCCL timeout and a CUDA out-of-memory error all end so, and the data does not say which. Slurm's
      ``OUT_OF_MEMORY`` is also its host-memory limit (``--mem``): the action says to read a few jobs' logs first.
    - ageing (per site): nodes out of warranty, or with repeated faults: ≥ 2 days with a move to degraded or a
      hardware ticket people filed (the node or one of its GPUs) in a year, or hardware XID events (a new code
      on the sticky gauge, not hours of it) on ≥ 3 days in 30 → replace them. Except a repair: a node with
      repeated faults under warranty (warranty end today or later) whose model's fleet at the site is otherwise
      healthy — fewer than 3 of those nodes (not retired) fault, or fewer than 20 % of them — is the vendor's to
      repair: open an RMA, buy nothing; it is left out of the finding (so out of an accepted plan's bill of
      materials) and named in its differential (``warranty_repair``, with the nodes faulting against the nodes
      of that model at the site and the warranty ends).
    - repair (per site, ``repairs``): those nodes, one finding a site: open an RMA with the vendor, nothing to buy
      (node count 0); its differential (``fleet_ageing``) says why it is not ageing. Faults spread
      wider (≥ 3 and ≥ 20 %) are wear or a bad batch: replaced, the vendor repairing them meanwhile. A node
      faulting with no warranty recorded is treated as out of it (the differential asks to record it). The
      inventory has no purchase or commissioning date, so service life is not weighed.

    - under-used (reclaim before you buy; the idle GPU-hours priced at each node's cost per GPU-hour from its
      contracts, else ``settings.IDLE_GPU_HOUR_COST``, and the evidence says which):
      * idle nodes (per partition): in-service nodes with ≥ 3 idle days in the window, a day (UTC) being idle when
        it has readings for ≥ 12 of its hours and its GPUs' mean utilization is < 5 %, whose idleness persists
        against their own history: the 4 weeks before the window, from the daily rollups (``GPUDaily``), a week
        counting when it has ≥ 3 days with readings and idle with ≥ 3 idle days. Idle in ≥ 3 of those 4 weeks too:
        confirmed → return them to the pool (high severity with ≥ 3 confirmed nodes in the partition). Busy in
        more than 1 of them: a dip (a holiday, a quiet week), not the node's trend → not raised. With too little
        history to tell (a new node or fleet): not raised when on most of its idle days ≥ 50 % of the fleet's
        other nodes were idle too (a holiday), else raised at medium severity at most, the differential saying it is
        unconfirmed (and whether its partition was idle with it: a maintenance week looks the same). The differential
        (``own_history``, ``fleet_wide_dip``) gives the nodes' idle weeks before and the fleet's and the
        partition's utilization in the window against the weeks before;
      * over-allocated teams (per Slurm account): over the node-hours with telemetry, the GPU-hours the team's jobs
        held (capped at the GPUs that reported) that ran nothing: no process, a GPU-hour whose max utilization
        stayed < 2 % and its memory used, where reported, < 1 GB (the GPUs no job held are counted first among
        those). ≥ 30 % of the held GPU-hours (high at ≥ 60 %), over ≥ 100 held GPU-hours → right-size the jobs'
        GPU requests or move the team to a shared partition. Held GPU-hours that ran something at a low mean
        utilization (< 50 %), or held memory and computed nothing, are a performance problem (storage, the input
        pipeline: storage-bound), not over-allocation: not counted, and the differential
        (``low_utilization_not_unused``) says how many there were;
      * stuck nodes (per site): nodes delivered or in burn-in for more than ``stuck_days`` (14) days, from the
        lifecycle record → chase the vendor or finish burn-in. Their GPU-hours since then are priced as well.

    - reliability-bound (per partition, ``inventory.goodput``'s figures over the window): the infrastructure's
      interruptions lost more than ``RELIABILITY_LOST_SHARE`` (5 %) of the partition's allocated GPU-hours as work
      (since the last checkpoint, an estimate: ``lost_run_gpu_hours``) → burn in, replace the repeat offenders
      (nodes with ≥ 2 of them), keep spare nodes, shorten the checkpoint interval. The share is the goodput page's:
      1 − share = its goodput ratio for the partition and range. The restart wait (the team's GPUs idle until its
      next job started, ≤ ``GOODPUT_RESTART_WAIT_CAP_HOURS``) lies outside the allocation: shown apart, in the
      differential, not in the share. The evidence lists the worst nodes, the reasons (XID classes), the GPU
      models and the cost of the lost work and the wait.

A recommendation dismissed or accepted is not raised again for ``snooze_days`` (30) after the decision.
"""

from ..evidence import figure, pct
from .ageing import ageing, is_ageing, repairs
from .capacity import capacity_bound
from .common import long_waits, money, priced, util_chart, wait_figures
from .data import (
    SEV,
    THRESHOLDS,
    WIDTHS,
    Finding,
    IdleNode,
    K,
    NodeHealth,
    PartitionStats,
    Peer,
    Reliability,
    StuckNode,
    TeamUse,
    Thresholds,
    Width,
    width_of,
)
from .idle import idle_nodes
from .memory import memory_bound
from .network import network_bound
from .reliability import lost_share, lost_share_limit, reliability_bound
from .scheduling import scheduling_bound
from .storage import bursty, steadily_starved, storage_bound
from .stuck import stuck_nodes
from .teams import over_allocated

# The rules, registered in one table: what each reads (one partition's stats, every node's health with the day,
# the under-used data, one partition's reliability) and the function. ``analyse`` runs them in this order.
RULES = (
    ("partition", capacity_bound),
    ("partition", scheduling_bound),
    ("partition", storage_bound),
    ("partition", network_bound),
    ("partition", memory_bound),
    ("nodes", ageing),
    ("nodes", repairs),
    ("idle", idle_nodes),
    ("teams", over_allocated),
    ("stuck", stuck_nodes),
    ("reliability", reliability_bound),
)
PARTITION_RULES = tuple(rule for reads, rule in RULES if reads == "partition")


def analyse(partitions, nodes, today, t=THRESHOLDS, under_used=None, reliability=()):
    """Every finding of every rule, for the partitions' and nodes' plain data; ``under_used``: (idle nodes, teams,
    stuck nodes) for the under-used rules; ``reliability``: the partitions' ``Reliability``."""
    idle, teams, stuck = under_used or ((), (), ())
    each = {"partition": partitions, "reliability": reliability}  # rules run once per item
    whole = {"nodes": (nodes, today), "idle": (idle,), "teams": (teams,), "stuck": (stuck,)}  # once on the list
    findings = []
    for reads, rule in RULES:
        if reads in each:
            findings += [f for item in each[reads] if (f := rule(item, t))]
        else:
            findings += rule(*whole[reads], t)
    return findings


__all__ = [
    "RULES", "PARTITION_RULES", "analyse", "SEV", "K", "THRESHOLDS", "WIDTHS", "Finding", "IdleNode", "NodeHealth",
    "PartitionStats", "Reliability", "StuckNode", "TeamUse", "Thresholds", "Width", "width_of", "ageing", "is_ageing",
    "repairs",
    "capacity_bound", "long_waits", "money", "priced", "util_chart", "wait_figures", "idle_nodes", "memory_bound",
    "network_bound", "lost_share", "lost_share_limit", "reliability_bound", "scheduling_bound", "bursty",
    "steadily_starved", "storage_bound", "stuck_nodes", "over_allocated", "figure", "pct", "Peer",
]
