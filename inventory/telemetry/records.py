"""Plain records that collectors return: no database, no Django, so parsers are tested on their own.

A collector (Prometheus, exporter scrape, Slurm) turns what a source says into these records; the pull
(``pull.py``) matches them to the inventory and writes them with upserts.
"""

import math
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class SeriesKey:
    """How a source names a GPU: DCGM's ``UUID`` label, else ``Hostname`` + ``gpu`` index."""

    uuid: str = ""
    hostname: str = ""
    gpu_index: str = ""
    model_name: str = ""

    @property
    def key(self):
        return self.uuid or f"{self.hostname}/gpu{self.gpu_index}"


@dataclass
class HourRecord:
    """One GPU's hour as the source aggregated it (Prometheus ``*_over_time`` queries)."""

    series: SeriesKey
    hour: datetime
    util_mean: float | None = None
    util_max: float | None = None
    mem_used_mean_gb: float | None = None
    power_mean_w: float | None = None
    energy_wh: float | None = None
    gr_engine_active_mean: float | None = None
    tensor_active_mean: float | None = None
    xid_errors: int = 0  # hardware XID events in the hour: set by the pull from the events it found
    # The XID gauge over the hour (Prometheus): its last, highest and lowest value and how often it changed.
    xid_last: int | None = None
    xid_max: int | None = None
    xid_min: int | None = None
    xid_changes: int = 0
    samples: int = 0
    mig: tuple = ()  # (instance id, profile) of the MIG instances summed into this GPU's figures
    # Health (None: not reported): hottest readings, mean SM clock, errors counted in the hour (a counter's
    # increase), retired pages and remapped rows as the GPU's total at the hour's end.
    gpu_temp_max_c: float | None = None
    memory_temp_max_c: float | None = None
    sm_clock_mean_mhz: float | None = None
    ecc_sbe_errors: int | None = None
    ecc_dbe_errors: int | None = None
    nvlink_errors: int | None = None
    pcie_replays: int | None = None
    retired_pages: int | None = None
    remapped_rows: int | None = None
    # DCGM's row-remap gauges (0/1) over the hour: their last and highest reading (the pull makes health events).
    row_remap_failure_last: int | None = None
    row_remap_failure_max: int | None = None
    row_remap_pending_last: int | None = None
    row_remap_pending_max: int | None = None


@dataclass
class SampleRecord:
    """One GPU at one instant (an exporter scrape)."""

    series: SeriesKey
    ts: datetime
    util: float | None = None
    mem_used_gb: float | None = None
    mem_free_gb: float | None = None
    power_w: float | None = None
    gr_engine_active: float | None = None
    tensor_active: float | None = None
    xid: int | None = None
    energy_mj: float | None = None  # DCGM's energy counter: mJ since the driver loaded
    gpu_temp_c: float | None = None
    memory_temp_c: float | None = None
    sm_clock_mhz: float | None = None
    # Error counters as DCGM counts them (the rollup stores their increase in each hour).
    ecc_sbe: float | None = None
    ecc_dbe: float | None = None
    nvlink_errors: float | None = None  # all NVLink error kinds, summed
    pcie_replay: float | None = None
    retired_pages: float | None = None  # single- and double-bit retired pages, summed
    remapped_rows: float | None = None  # correctable and uncorrectable remapped rows, summed
    row_remap_failure: int | None = None  # DCGM's row-remap gauges (0/1): the pull makes health events of them
    row_remap_pending: int | None = None
    mig: tuple = ()  # (instance id, profile) of the MIG instances summed into this GPU's figures


@dataclass
class JobRecord:
    """One Slurm job from accounting."""

    job_id: str
    submit_time: datetime
    start_time: datetime | None = None
    end_time: datetime | None = None
    cluster: str = ""
    name: str = ""
    user: str = ""
    account: str = ""
    partition: str = ""
    state: str = ""
    nodes: str = ""
    node_count: int = 0
    gpus: int = 0
    # A job still running counts up to this moment, never up to whenever the answer is read: start + elapsed,
    # or the answer's own time. None when the answer says neither (the pull then uses the time it asked).
    running_until: datetime | None = None
    # Slurm's restart count (``restart_cnt``): how many times the job was requeued before this run. None when the
    # answer does not say (sacct before 23.02 and most slurmdbd answers).
    restarts: int | None = None
    # Slurm's state reason (why a pending job waits: Priority, Resources, AssocGrpGRESMinutes…); "" when not said.
    reason: str = ""


class Quality:
    """What a pull left out, corrected or clipped, counted per kind with the first examples of each: the
    source page's data-quality panel. ``KINDS`` names each kind as the panel shows it."""

    KINDS = {
        "job_skipped": "Jobs counted as 0 GPU-hours (ended, but no end or elapsed time)",
        "job_end_inferred": "Ended jobs without an end time (end = start + elapsed)",
        "job_running_at_pull": "Running jobs without elapsed time (counted up to the pull)",
        "job_clock_skew": "Running jobs ahead of the portal's clock (counted up to the pull)",
        "job_requeue_inferred": "Requeued runs closed when a later run of the job appeared (end = its requeue)",
        "job_runs_missing": "Requeued jobs with earlier runs never seen (requeued and restarted between pulls)",
        "job_overbooked": "Jobs on over-allocated nodes (allocations clipped to the node's GPUs)",
        "job_unknown_host": "Jobs on hosts not in the inventory (allocations not checked)",
        "unknown_series": "Series that match no GPU",
        "mig_instances": "MIG instances (summed into their GPU)",
        "not_finite": "Samples that are not finite numbers (NaN, Inf)",
        "dcgm_blank": "DCGM blank values: fields a GPU does not report (not supported, not found, not permitted), "
                      "stored empty, never as a figure",
        "future": "Samples from the future (left out)",
        "warning": "Parse warnings",
    }
    EXAMPLES = 50  # per kind; the count says how many in all

    def __init__(self):
        self.counts, self.examples = {}, {}

    def add(self, kind, example=None, count=1):
        if kind not in self.KINDS:
            raise ValueError(f"unknown data-quality kind {kind!r}")
        self.counts[kind] = self.counts.get(kind, 0) + count
        examples = self.examples.setdefault(kind, [])
        if example is not None and len(examples) < self.EXAMPLES:
            examples.append(str(example)[:500])

    def __bool__(self):
        return bool(self.counts)


@dataclass
class Collected:
    """What one pull brought back, and up to when the source's data is now complete."""

    hours: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    jobs: list = field(default_factory=list)
    synced_until: datetime | None = None
    warnings: list = field(default_factory=list)  # bad data that was skipped, said in the source's log
    quality: Quality = field(default_factory=Quality)  # counted per kind, for the source page


class SourceError(Exception):
    """The source could not be read (down, timeout, HTTP error, unreadable answer)."""


def finite(value):
    """A float, or None for anything that is not a finite number (NaN, +Inf, '', garbage)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
