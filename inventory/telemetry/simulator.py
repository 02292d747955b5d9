"""A deterministic model of the demo fleet's telemetry: what its DCGM exporters and Slurm would report.

Everything is a pure function of (GPU or node, time): the same moment always gives the same numbers, so
the demo's 7-day backfill (``hour_records``), the live exporter page (``metrics_text``) and the Slurm job
records (``jobs``) tell one consistent story, and tests can check what each scenario claims.

How it works. Each partition follows a named ``Scenario``. Its nodes are grouped into blocks of ``job_nodes``
consecutive hostnames (zrh-h100-001…004), and time into slots of ``slot_hours``; in every slot a block runs one
multi-node job (or, in ``train-h100``, one on each half of it) or one job per node (or nothing), chosen by a hash of
(block, slot). A GPU's utilization is its node's current job's level, plus noise; between jobs it idles. Busy
probability and the inference traffic follow the day (Central European time), so nights and weekends are quieter.

Scenarios, by the partitions ``seed_demo`` creates:

- ``train-h200``: saturated: 2-node LLM jobs back to back, GPUs ~90 % busy and more, queue waits of hours;
- ``a100-legacy``: storage-starved: GPUs allocated around the clock but waiting on I/O (bursts of work
  between stalls: mean ~25–40 %, max high);
- ``train-h100``: network-bound: data-parallel jobs on 1, 2 or 4 nodes whose per-GPU utilization falls with
  the node count (~80 % on one node, ~67 % on two, ~55 % on four: all-reduce waits over InfiniBand);
- ``inference``: model serving, utilization follows user traffic: busy by day, quiet at night;
- idle nodes (``IDLE_NODES``) and drained (degraded) nodes sit near 0 %; nodes in burn-in run stress
  tests at ~100 %; nodes not in use (delivered, in repair, retired) and GPUs in repair report nothing;
  degraded GPUs now and then report XID errors.
- health (``sim_health``): temperatures and the SM clock follow the load; degraded GPUs run 14 °C hotter, have
  remapped rows and now and then count ECC single-bit, NVLink and PCIe replay errors; healthy ones count none.
  GPUs without a memory-temperature sensor (GDDR boards: L40S, L4, T4…) report DCGM's "not supported" sentinel;
  the demo's GPUs with a pending row remap report it, and one GPU a failed row remap.

DCGM's energy counter (``energy_mj``) counts each GPU's energy since its driver loaded: every node reboots once a
week (``driver_loaded``), at an hour of its own, and its GPUs' counters start again from 0. Hour by hour the counter
grows by the hour's mean power as ``hour_records`` computes it: the live counter and the backfilled hours agree. The
Slurm side (``jobs``, ``job_faults``, host lists) is ``sim_slurm``, re-exported here.
Any other partition gets a generic ``mixed`` scenario, so the simulator also serves a fleet made by hand.
"""

import math
import re
import zlib
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from . import dcgm, sim_health
from .records import HourRecord

EPOCH = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
HOUR = 3600
LOCAL_OFFSET = 3600  # both demo sites are on Central European time (daylight saving ignored)
NOISE_SECONDS = 10  # values change every 10 s, faster than any scrape interval
REBOOT_DAYS = 7  # every node reboots once a week: its GPUs' energy counters start again from 0
POINTS = 4  # moments per hour whose mean stands for the hour (backfilled hours, the energy counter)

IDLE_NODES = {"zrh-h100-015", "zrh-h100-016", "lys-h100-004"}
REPORTING = {"in_service", "degraded", "burn_in"}  # node states in which its exporter answers
SILENT_GPUS = {"ordered", "in_repair", "retired"}
XID_CODES = (63, 94)  # row remapping pending, contained ECC error: what the demo's degraded GPUs suffer
# How jobs end early: (cumulative share of all jobs, (state, earliest cut as a share of the run)). The user's
# (FAILED, OUT_OF_MEMORY, CANCELLED, TIMEOUT) and the infrastructure's: killed by an XID 79 (FAILED_XID: FAILED
# 1–5 minutes after it, on one of its GPUs), NODE_FAIL, and REQUEUED after an XID 79 (goodput, issue 20).
# The infrastructure's 0.8 % of jobs give the demo fleet about 0.003 interruptions per GPU-day, within the published
# range (Llama 3: 0.0005; Kokolis et al. 2024, Meta's research clusters: a few per 1,000); REQUEUED keeps its slice
# (the demo's requeued runs stay the same ones) and TIMEOUT takes what the others gave up.
FATES = ((0.04, ("FAILED", 0.1)), (0.055, ("OUT_OF_MEMORY", 0.05)), (0.075, ("CANCELLED", 0.2)),
         (0.112, ("TIMEOUT", 1.0)), (0.113, ("FAILED_XID", 0.1)), (0.114, ("NODE_FAIL", 0.1)),
         (0.12, ("REQUEUED", 0.1)))

# dcgm-exporter's modelName is the driver's product name.
PRODUCT_NAMES = {"H100 SXM 80GB": "NVIDIA H100 80GB HBM3", "H200 SXM 141GB": "NVIDIA H200",
                 "A100 80GB SXM": "NVIDIA A100-SXM4-80GB"}
PCI_BUSES = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")  # an 8-GPU HGX baseboard

JOB_NAMES = {
    "llm-pretrain": ("llama-70b-pretrain", "moe-8x22b-ablation", "tokenizer-sweep", "llm-13b-long-context"),
    "vision": ("vit-h14-pretrain", "detr-finetune", "sam-distill", "diffusion-xl-train"),
    "speech": ("whisper-large-ft", "tts-distill", "asr-conformer", "speech-lm-pretrain"),
    "platform": ("vllm-llama3-8b", "vllm-mixtral", "triton-embeddings", "vllm-llama3-70b"),
}
USERS = {
    "llm-pretrain": ("amueller", "jkowalski", "tnguyen"), "vision": ("lchen", "pdubois"),
    "speech": ("mrossi", "ekim"), "platform": ("svc-inference",),
}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    job_nodes: int  # nodes per block: the width of a multi-node job
    multi_node_share: float  # chance that a slot's job spans the whole block (or two halves: ``half_share``)
    slot_hours: int
    busy_day: float  # chance that a slot has a job, by day and at night
    busy_night: float
    util: tuple  # GPU utilization while a job runs (%): low, high
    tensor_ratio: float  # tensor pipe activity / graphics engine activity
    memory: tuple  # share of GPU memory a job uses: low, high
    wait_minutes: tuple  # queue wait: low, high
    bursty: bool = False  # work comes in bursts between I/O stalls
    traffic: bool = False  # utilization follows daytime traffic (serving)
    half_share: float = 0.0  # chance that a multi-node slot runs two half-block jobs instead of one (width ≥ 4)
    # Share of a job's per-GPU utilization lost per doubling of its nodes (waiting on all-reduce over the
    # fabric): ``util`` is what a single-node job runs at; 0 scales perfectly.
    scaling_loss: float = 0.0


SCENARIOS = {
    "train-h200": Scenario(
        "saturated", "Saturated: 2-node LLM jobs back to back, GPUs busy, queue waits of hours.",
        job_nodes=2, multi_node_share=0.8, slot_hours=8, busy_day=1.0, busy_night=1.0, util=(92, 99),
        tensor_ratio=0.62, memory=(0.85, 0.97), wait_minutes=(120, 720)),
    "a100-legacy": Scenario(
        "storage-starved", "Storage-starved: GPUs allocated but waiting on reads from scratch storage.",
        job_nodes=2, multi_node_share=0.3, slot_hours=4, busy_day=1.0, busy_night=0.95, util=(30, 42),
        tensor_ratio=0.35, memory=(0.55, 0.8), wait_minutes=(1, 15), bursty=True),
    "train-h100": Scenario(
        "network-bound", "Network-bound: data-parallel jobs slower per GPU the more nodes they span (all-reduce).",
        job_nodes=4, multi_node_share=0.85, slot_hours=6, busy_day=1.0, busy_night=0.8, util=(76, 86),
        tensor_ratio=0.5, memory=(0.7, 0.9), wait_minutes=(10, 90), half_share=0.35, scaling_loss=0.17),
    "inference": Scenario(
        "day-night serving", "Model serving: utilization follows user traffic, busy by day, quiet at night.",
        job_nodes=1, multi_node_share=0.0, slot_hours=24, busy_day=1.0, busy_night=1.0, util=(10, 80),
        tensor_ratio=0.3, memory=(0.6, 0.75), wait_minutes=(0, 2), traffic=True),
}
MIXED = Scenario(
    "mixed", "Mixed single-node jobs.", job_nodes=1, multi_node_share=0.0, slot_hours=6, busy_day=0.85,
    busy_night=0.6, util=(60, 85), tensor_ratio=0.45, memory=(0.5, 0.9), wait_minutes=(5, 60))


@dataclass(frozen=True)
class SimNode:
    hostname: str
    partition: str = ""
    team: str = ""
    cluster: str = "demo"
    state: str = "in_service"


@dataclass(frozen=True)
class SimGPU:
    uuid: str
    slot: int
    node: SimNode
    model_name: str = "H100 SXM 80GB"
    memory_gb: int = 80
    tdp_w: int = 700
    state: str = "in_service"
    # A GPU moved to a silent state (in repair...) reported until then: unix seconds of the move, None if never.
    silent_from: float | None = None
    # The fault its degradation recorded ("XID 79: ..."): (code, unix seconds); the gauge holds it from then on.
    fault: tuple | None = None


def scenario_for(partition):
    return SCENARIOS.get(partition, MIXED)


def fleet():
    """The inventory's installed GPUs (and their nodes) as the simulator sees them; two queries (the GPUs, then the
    lifecycle records that say when a GPU fell silent or what fault degraded it: ``gpu_history``)."""
    from inventory.models import GPU

    nodes, gpus = {}, []
    silent_from, faults = gpu_history()
    rows = (GPU.objects.filter(node__isnull=False).select_related("node__site", "gpu_model")
            .order_by("node__hostname", "slot"))
    for gpu in rows:
        node = gpu.node
        if node.pk not in nodes:
            nodes[node.pk] = SimNode(node.hostname, node.partition, node.owner_team_id,
                                     re.sub(r"[^a-z0-9]+", "-", node.site.name.lower()).strip("-"), node.state)
        gpus.append(SimGPU(gpu.uuid, gpu.slot or 0, nodes[node.pk], gpu.gpu_model.name, gpu.gpu_model.memory_gb,
                           gpu.gpu_model.tdp_w, gpu.state, silent_from.get(gpu.pk) if gpu.state in SILENT_GPUS
                           else None, faults.get(gpu.pk)))
    return gpus


def gpu_history():
    """``(silent_from, faults)`` by GPU id, from the GPUs' lifecycle records (one query): when each GPU last moved
    to a silent state, and the XID its last move to degraded names ("XID 79: GPU fell off the bus"). A GPU in
    repair today reported until it was moved there, and its fault is on its XID gauge from then on: the demo's
    week shows the fault that took it out rather than a GPU that never reported (issue 37)."""
    from django.contrib.contenttypes.models import ContentType

    from inventory.models import GPU, StateTransition

    from . import xid as catalogue  # this module has its own xid()

    silent_from, faults = {}, {}
    records = (StateTransition.objects.filter(content_type=ContentType.objects.get_for_model(GPU),
                                              to_state__in=[*SILENT_GPUS, "degraded"])
               .exclude(from_state="").order_by("created", "pk").values_list("object_id", "to_state", "reason",
                                                                             "created"))
    for gpu_id, state, reason, created in records:
        if state in SILENT_GPUS:
            silent_from[gpu_id] = created.timestamp()
        elif (code := catalogue.named_code(reason)) is not None:
            faults[gpu_id] = (code, created.timestamp())
    return silent_from, faults


def nodes_of(gpus):
    return list({gpu.node.hostname: gpu.node for gpu in gpus}.values())


# --- deterministic randomness -------------------------------------------------------------------------------

MASK = (1 << 64) - 1


def mix(*parts):
    """A 64-bit number that depends only on ``parts`` (integers): splitmix64 over them."""
    x = 0x9E3779B97F4A7C15
    for part in parts:
        x = (x ^ (part & MASK)) * 0xBF58476D1CE4E5B9 & MASK
        x = (x ^ (x >> 31)) * 0x94D049BB133111EB & MASK
        x ^= x >> 29
    return x


def unit(*parts):
    """A uniform number in [0, 1) that depends only on ``parts``."""
    return mix(*parts) / 2**64


@lru_cache(maxsize=100_000)
def seed(text):
    return zlib.crc32(text.encode())


def between(low_high, u):
    low, high = low_high
    return low + (high - low) * u


def daylight(t):
    """0 at 03:00, 1 at 15:00 local time; weekends at most half."""
    local = t + LOCAL_OFFSET
    level = 0.5 - 0.5 * math.cos(2 * math.pi * ((local % 86400) / 3600 - 3) / 24)
    weekday = datetime.fromtimestamp(local, UTC).weekday()
    return level * (0.5 if weekday >= 5 else 1.0)


# --- jobs: blocks of nodes × slots of time ------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Consecutive nodes of one partition that multi-node jobs span (zrh-h100-001…004). Depends only on a
    node's own hostname and partition, so a GPU's value needs no knowledge of the rest of the fleet."""

    partition: str
    prefix: str
    number: int  # block index: node index // width
    width: int

    @property
    def scenario(self):
        return scenario_for(self.partition)

    def position(self, hostname):
        return node_index(hostname)[1] % self.width

    def slot_start(self, t):
        """Start of the slot holding ``t``; blocks are phase-shifted by whole hours so they do not all turn
        over at once."""
        length = self.scenario.slot_hours * HOUR
        phase = seed(f"{self.prefix}{self.number}") % self.scenario.slot_hours * HOUR
        return EPOCH + phase + (t - EPOCH - phase) // length * length


@dataclass(frozen=True)
class Job:
    job_id: int
    positions: tuple  # positions in the block
    submit: float
    start: float
    end: float
    state: str  # the state it ends in
    level: float  # GPU utilization while it runs
    memory: float  # share of GPU memory it uses
    # A hardware fault that ends it: (position in ``positions``, GPU slot, when, XID code); None for most jobs.
    fault: tuple | None = None
    restarts: int = 0  # Slurm's restart_cnt: a requeued job's next run has the same id and 1


def node_index(hostname):
    """'zrh-h100-007' → ('zrh-h100-', 6, 3): prefix, 0-based index, digits; no number → (hostname, 0, 0)."""
    match = re.fullmatch(r"(.*?)(\d+)", hostname)
    if not match:
        return hostname, 0, 0
    return match.group(1), int(match.group(2)) - 1, len(match.group(2))


def block_of(node):
    prefix, index, digits = node_index(node.hostname)
    width = scenario_for(node.partition).job_nodes if digits else 1
    return Block(node.partition, prefix if digits else node.hostname, index // width, width)


@lru_cache(maxsize=50_000)
def slot_jobs(block, start):
    """The jobs a block runs in the slot that starts at ``start`` (unix seconds): one across the block or one
    per node, each maybe none (by the scenario's busy chance at that time of day), ending a few minutes
    before the slot does or earlier when it fails or is cancelled."""
    scenario = block.scenario
    length = scenario.slot_hours * HOUR
    key = seed(f"{block.partition}/{block.prefix}/{block.number}")
    slot = int(start // HOUR)
    busy = scenario.busy_night + (scenario.busy_day - scenario.busy_night) * daylight(start + length / 2)
    if block.width > 1 and unit(key, slot, 1) < scenario.multi_node_share:
        half = block.width // 2
        if block.width >= 4 and unit(key, slot, 10) < scenario.half_share:
            groups = [tuple(range(half)), tuple(range(half, block.width))]
        else:
            groups = [tuple(range(block.width))]
    else:
        groups = [(position,) for position in range(block.width)]
    prefix_code = seed(block.prefix) % 100
    planned = []
    for group in groups:
        first = group[0]

        def u(channel, first=first):
            return unit(key, slot, first, channel)

        if u(2) >= busy:
            continue
        begin = start + 60 + u(3) * 10 * 60
        finish = planned_end = start + length - 60 - u(4) * 10 * 60
        fate = u(5)
        state, fault = "COMPLETED", None
        if fate < 0.12:  # the job ends early (TIMEOUT: at its limit)
            state, cut = FATES[next(i for i, (share, _) in enumerate(FATES) if fate < share)][1]
            if state != "TIMEOUT":
                finish = begin + (finish - begin) * (cut + (1 - cut - 0.1) * u(6))
            if state in ("FAILED_XID", "REQUEUED"):  # an XID 79 on one of its GPUs 1 to 5 minutes before
                state = "FAILED" if state == "FAILED_XID" else state
                fault = (int(u(12) * len(group)), int(u(13) * 8), finish - 60 * (1 + 4 * u(14)), 79)
        wait = between(scenario.wait_minutes, u(7) ** 2) * 60  # most waits short, a few long
        job = Job(
            # Unique without a registry (for up to 100 nodes per hostname prefix): hours since the epoch
            # at the slot's start, the host prefix, the job's first node.
            job_id=1_000_000 + (slot - int(EPOCH // HOUR)) * 10_000 + prefix_code * 100
            + (block.number * block.width + first) % 100,
            positions=group, submit=begin - wait, start=begin, end=finish, state=state,
            level=between(scenario.util, u(8)) * (1 - scenario.scaling_loss) ** math.log2(len(group)),
            memory=between(scenario.memory, u(9)), fault=fault,
        )
        planned.append(job)
        # A requeued job runs again under its id on the same nodes: submitted at the requeue (Slurm resets the
        # submit time), started 2–12 minutes later, to the end it was planned for.
        restart = finish + 120 + u(15) * 600
        if state == "REQUEUED" and restart < planned_end - 300:
            planned.append(replace(job, submit=finish, start=restart, end=planned_end, state="COMPLETED", fault=None,
                                restarts=1))
    return tuple(planned)


def job_at(node, t):
    """The job ``node`` runs at ``t``, or None."""
    block = block_of(node)
    position = block.position(node.hostname)
    for job in slot_jobs(block, block.slot_start(t)):
        if position in job.positions and job.start <= t < job.end:
            return job
    return None


# --- GPU values ---------------------------------------------------------------------------------------------


def activity(node, t):
    """What a node does at ``t``: ('job', Job), ('burn_in', None) or ('idle', None)."""
    if node.state == "burn_in":
        return "burn_in", None
    if node.state == "degraded" or node.hostname in IDLE_NODES:  # drained, or nobody uses it
        return "idle", None
    job = job_at(node, t)
    return ("job", job) if job else ("idle", None)


def reports(gpu, t=None):
    """Whether ``gpu`` reports at ``t`` (unix seconds; None: now): its node answers, and the GPU is not silent, or
    was not yet at ``t`` (``silent_from``)."""
    if gpu.node.state not in REPORTING:
        return False
    if gpu.state not in SILENT_GPUS:
        return True
    return t is not None and gpu.silent_from is not None and t < gpu.silent_from


def gpu_sample(gpu, moment, current=None):
    """The DCGM values of ``gpu`` at ``moment`` (datetime or unix seconds), in the exporter's units (MiB,
    W, %, ratios); None when the GPU reports nothing (its node or itself is in repair). ``current``: the
    node's ``activity`` at that moment, when the caller already knows it."""
    t = moment.timestamp() if isinstance(moment, datetime) else float(moment)
    if not reports(gpu, t):
        return None
    util, used, free, power, engine, tensor = values(gpu, t, current or activity(gpu.node, t))
    return {
        dcgm.GPU_UTIL: round(util),
        dcgm.FB_USED: round(used),
        dcgm.FB_FREE: round(free),
        dcgm.POWER_USAGE: round(power, 3),
        dcgm.GR_ENGINE_ACTIVE: round(engine, 6),
        dcgm.PIPE_TENSOR_ACTIVE: round(tensor, 6),
        dcgm.XID_ERRORS: xid(gpu, t),
        dcgm.TOTAL_ENERGY: round(energy_mj(gpu, t)),
        **sim_health.health_sample(gpu, t, util, power),
    }


def values(gpu, t, current):
    """(util %, memory used MiB, free MiB, power W, engine ratio, tensor ratio) of a reporting GPU."""
    kind, job = current
    g = seed(gpu.uuid)
    bits = mix(g, int(t // NOISE_SECONDS))  # one hash, three independent numbers
    noise = (bits & 0xFFFF) / 65536 - 0.5  # -0.5 … 0.5
    burst = (bits >> 16 & 0xFFFF) / 65536
    jitter = (bits >> 32 & 0xFFFF) / 65536
    scenario = scenario_for(gpu.node.partition)
    total_mib = gpu.memory_gb * 1024
    if kind == "job":
        level = between(scenario.util, daylight(t)) if scenario.traffic else job.level  # serving follows traffic
        level += ((g ^ int(job.start)) % 1000 / 1000 - 0.5) * 6  # the GPUs of a job differ a little
        if scenario.bursty:  # computing (~90 %) or stalled on I/O (~2 %), in the job's proportion
            util = 88 + 10 * noise if burst < level / 88 else 2 + 4 * (noise + 0.5)
        else:
            util = level + 8 * noise
        used = total_mib * (job.memory + 0.02 * noise)
        tensor_ratio = scenario.tensor_ratio
    elif kind == "burn_in":
        util, used, tensor_ratio = 99 + 2 * noise, total_mib * 0.9, 0.7
    else:
        util, used, tensor_ratio = max(0.0, 1.5 * noise), 2.0, 0.0
    util = min(100.0, max(0.0, util))
    engine = util / 100 * (0.93 + 0.05 * jitter)
    idle_w = gpu.tdp_w * 0.1
    power = max(idle_w * 0.8, idle_w + (gpu.tdp_w * 0.92 - idle_w) * util / 100 * (0.8 + 0.3 * tensor_ratio)
                + 4 * noise)
    reserved = 600
    used = min(total_mib - reserved, max(0.0, used))
    return util, used, total_mib - reserved - used, power, engine, engine * tensor_ratio


def moments(hour, points=POINTS):
    """``points`` moments spread evenly over the hour that starts at ``hour`` (unix seconds)."""
    return [hour + (k + 0.5) * HOUR / points for k in range(points)]


def driver_loaded(node, t):
    """When the driver of ``node``'s GPUs last loaded, at or before ``t``: the node reboots every
    ``REBOOT_DAYS`` at a whole hour of its own, so nodes do not all reboot at once."""
    period = REBOOT_DAYS * 24 * HOUR
    phase = seed(node.hostname) % (REBOOT_DAYS * 24) * HOUR
    return EPOCH + phase + (t - EPOCH - phase) // period * period


@lru_cache(maxsize=200_000)
def hour_energy_j(gpu, hour):
    """Joules ``gpu`` uses in the hour that starts at ``hour``: its mean power at the hour's ``moments``."""
    return sum(values(gpu, t, activity(gpu.node, t))[3] for t in moments(hour)) / POINTS * HOUR


def energy_mj(gpu, t):
    """DCGM's energy counter at ``t``: mJ since the driver loaded; within an hour it grows evenly by the
    hour's energy."""
    hour = t // HOUR * HOUR
    joules = sum(hour_energy_j(gpu, h) for h in range(int(driver_loaded(gpu.node, t)), int(hour), HOUR))
    return 1000 * (joules + hour_energy_j(gpu, hour) * (t - hour) / HOUR)


def xid(gpu, t):
    """A GPU's recorded fault from its time on (the gauge holds the last code); otherwise degraded GPUs have an XID
    episode in about one hour in five, a few minutes long; 0 otherwise."""
    if gpu.fault and t >= gpu.fault[1]:
        return gpu.fault[0]
    if gpu.state != "degraded":
        return 0
    g, hour = seed(gpu.uuid), int(t // HOUR)
    if unit(g, hour, 5) >= 0.2:
        return 0
    begin = hour * HOUR + unit(g, hour, 6) * 55 * 60
    return XID_CODES[g % len(XID_CODES)] if begin <= t < begin + 180 else 0


# --- what sources serve -------------------------------------------------------------------------------------


def labels(gpu):
    return {
        "gpu": str(gpu.slot), "UUID": gpu.uuid, "pci_bus_id": f"00000000:{PCI_BUSES[gpu.slot % 8]}:00.0",
        "device": f"nvidia{gpu.slot}", "modelName": PRODUCT_NAMES.get(gpu.model_name, f"NVIDIA {gpu.model_name}"),
        "Hostname": gpu.node.hostname,
    }


def metrics_text(gpus, moment):
    """The page a dcgm-exporter on each of these GPUs' nodes would serve at ``moment``, as one page."""
    samples = [(gpu, gpu_sample(gpu, moment)) for gpu in gpus]
    samples = [(gpu, values) for gpu, values in samples if values is not None]
    lines = []
    for series, (kind, help_text) in dcgm.SERIES_HELP.items():
        lines += [f"# HELP {series} {help_text}", f"# TYPE {series} {kind}"]
        for gpu, values in samples:
            label_text = ",".join(f'{name}="{value}"' for name, value in labels(gpu).items())
            lines.append(f"{series}{{{label_text}}} {values[series]}")
    return "\n".join(lines) + "\n"


def hour_records(gpus, start, end, points=POINTS, interval_seconds=60):
    """``HourRecord``s for the complete hours in [start, end), from the same model, as Prometheus or the
    portal's own scrapes every ``interval_seconds`` would have rolled them up: means of ``points`` moments
    per hour (enough for charts; the max is the max of those), the XID gauge read at every scrape,
    samples = scrapes per hour, the hour fully covered."""
    first = math.ceil(start.timestamp() / HOUR) * HOUR
    last = int(end.timestamp() // HOUR) * HOUR
    by_node = defaultdict(list)
    for gpu in gpus:
        if reports(gpu, first):
            by_node[gpu.node].append(gpu)
    scrapes = HOUR // interval_seconds
    records = []
    for node, node_gpus in by_node.items():
        keys = [dcgm.series_key(labels(gpu)) for gpu in node_gpus]
        for hour in range(first, last, HOUR):
            at = [(t, activity(node, t)) for t in moments(hour, points)]
            when = datetime.fromtimestamp(hour, UTC)
            for gpu, key in zip(node_gpus, keys, strict=True):
                if not reports(gpu, hour):  # fell silent (in repair) before this hour
                    continue
                util, used, _, power, engine, tensor = zip(*(values(gpu, t, now) for t, now in at), strict=True)
                gauge = [0]
                if gpu.state == "degraded" or gpu.fault:  # only they have XIDs: spare the others 60 calls an hour
                    gauge = [xid(gpu, hour + k * interval_seconds) for k in range(scrapes)]
                records.append(HourRecord(
                    series=key, hour=when, util_mean=sum(util) / points, util_max=max(util),
                    mem_used_mean_gb=dcgm.mib_to_gb(sum(used) / points), power_mean_w=sum(power) / points,
                    energy_wh=sum(power) / points, gr_engine_active_mean=sum(engine) / points,
                    tensor_active_mean=sum(tensor) / points, samples=scrapes, xid_last=gauge[-1],
                    xid_max=max(gauge), xid_min=min(gauge),
                    xid_changes=sum(1 for a, b in zip(gauge, gauge[1:], strict=False) if a != b),
                    **sim_health.health_hour(gpu, hour, util, power),
                ))
    return records


# --- months of daily history, for the demand forecast -------------------------------------------------------

HISTORY_GROWTH = 0.04  # demand grew 4 % a month towards today's level
SEASON = {8: 0.82, 12: 0.88, 1: 0.95, 7: 0.93}  # summer holidays and the year's end are quieter


@dataclass(frozen=True)
class DayRecord:
    uuid: str
    day: object  # date
    util_mean: float
    util_max: float
    mem_used_mean_gb: float
    power_mean_w: float


def typical_util(scenario):
    """A GPU's mean utilization in a scenario over a day: busy share × the middle of its utilization range."""
    busy = (scenario.busy_day + scenario.busy_night) / 2
    return busy * between(scenario.util, 0.5)


def day_records(gpus, first_day, last_day, today):
    """One ``DayRecord`` per reporting GPU and day from ``first_day`` to ``last_day`` (inclusive): today's level
    of each partition's scenario, lower in the past by ``HISTORY_GROWTH`` a month, with ``SEASON``, quieter
    weekends and day-to-day noise; ``IDLE_NODES`` near 0 %, as in the hourly telemetry (nobody uses them, then as
    now). Much coarser than ``hour_records``, and quick: it stands for the months before the hourly telemetry so
    that the demand forecast has history to fit."""
    records = []
    days = (last_day - first_day).days + 1
    for gpu in gpus:
        if not reports(gpu, datetime(first_day.year, first_day.month, first_day.day, tzinfo=UTC).timestamp()):
            continue
        scenario = scenario_for(gpu.node.partition)
        idle = gpu.node.hostname in IDLE_NODES
        level, key = (0.5 if idle else typical_util(scenario)), seed(gpu.uuid)
        for offset in range(days):
            day = first_day + timedelta(days=offset)
            if gpu.silent_from is not None and not reports(gpu, datetime(day.year, day.month, day.day,
                                                                         tzinfo=UTC).timestamp()):
                break  # silent from then on
            months_ago = (today - day).days / 30.4
            factor = (1 + HISTORY_GROWTH) ** -months_ago * SEASON.get(day.month, 1.0)
            factor *= 0.8 if day.weekday() >= 5 else 1.0
            noise = 0.85 + 0.3 * unit(key, day.toordinal())
            util = min(100.0, level * factor * noise)
            memory = 0.0 if idle else gpu.memory_gb * between(scenario.memory, 0.5) * min(1.0, util / max(level, 1))
            records.append(DayRecord(gpu.uuid, day, util, min(100.0, util * 1.3), memory,
                                     gpu.tdp_w * (0.2 + 0.75 * util / 100)))
    return records

from .sim_slurm import active_jobs, hostlist, job_faults, jobs, number, sacct_job  # noqa: E402, F401
