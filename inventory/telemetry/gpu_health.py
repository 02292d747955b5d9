"""GPU health on the node and GPU pages (issue 19): the range a page shows (24 h, 7 d, 30 d or custom dates), each
GPU's health figures over it from the rollups, and the badges that flag what needs a look; the node page's
utilization line per GPU (``gpu_series``).

Two queries whatever the number of GPUs or buckets: the GPUs, then their rollup rows in the range (hourly rows up
to ``HOURLY_DAYS`` days, daily rows beyond). A bucket without a row, or a field the exporter does not publish, is
None (a gap on the chart), never 0; a badge is raised only on figures that were reported. A sensor the GPU lacks
(no memory temperature in a range it reported in: DCGM said "not supported", or no series) shows "no sensor".
The row-remap gauges read 1 now (``HealthReading``, one more query) raise "row remap failed" / "pending" badges.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from portal.forms import OutOfCalendar, parse_day

from . import remap
from .charts import time_labels
from .models import GPUDaily, GPUHourly, HealthEvent, HealthReading, XidEvent
from .queries import get_range, rollup_rows
from .rollups import day_start, floor_hour

# Rollup field → (chart title, unit). The order is the GPU page's order of charts.
METRICS = {
    "util_mean": ("Utilization", "%"),
    "gpu_temp_max_c": ("GPU temperature (max)", "°C"),
    "memory_temp_max_c": ("Memory temperature (max)", "°C"),
    "power_mean_w": ("Power (mean)", "W"),
    "sm_clock_mean_mhz": ("SM clock (mean)", "MHz"),
    "ecc_sbe_errors": ("Single-bit ECC errors", "errors"),
    "ecc_dbe_errors": ("Double-bit ECC errors", "errors"),
    "xid_errors": ("XID events (hardware)", "events"),
    "nvlink_errors": ("NVLink errors", "errors"),
    "pcie_replays": ("PCIe replays", "replays"),
    "remapped_rows": ("Remapped rows", "rows"),
}
COUNTS = {"ecc_sbe_errors", "ecc_dbe_errors", "xid_errors", "nvlink_errors", "pcie_replays", "remapped_rows"}
# Metrics a GPU may have no sensor for (GDDR boards have no memory-temperature sensor) → what it lacks.
SENSORS = {"memory_temp_max_c": "memory-temperature sensor"}
DEFAULT_METRIC = "gpu_temp_max_c"
RANGES = {"24h": ("24 hours", timedelta(hours=24)), "7d": ("7 days", timedelta(days=7)),
          "30d": ("30 days", timedelta(days=30))}
DEFAULT_RANGE = "7d"
HOURLY_DAYS = 14  # longer custom ranges read daily rows
MAX_DAYS = 366
# The badges' thresholds are settings (portal/settings.py: GPU_HOT_C, GPU_MEMORY_HOT_C, GPU_SBE_ECC_WARN,
# GPU_NVLINK_ERRORS_WARN, GPU_PCIE_REPLAYS_WARN), read when a badge is drawn. Double-bit ECC errors and hardware
# XID events are always flagged.


@dataclass(frozen=True)
class Span:
    key: str  # "24h", "7d", "30d" or "custom"
    label: str
    buckets: tuple  # aware datetimes (hourly) or dates (daily), oldest first
    daily: bool
    start_date: date | None = None
    end_date: date | None = None

    @property
    def model(self):
        return GPUDaily if self.daily else GPUHourly

    @property
    def time_field(self):
        return "day" if self.daily else "hour"


def span(params, now=None):
    """``(Span, error)`` from a page's query string: ``range`` (24h, 7d, 30d) or ``start`` and ``end`` dates
    (YYYY-MM-DD, both included). Bad input gives the default range and a message saying what was wrong."""
    now = now or timezone.now()
    if params.get("start") or params.get("end"):
        try:
            first, last = parse_day(params.get("start", "")), parse_day(params.get("end", ""))
        except OutOfCalendar as error:  # a year the ranges cannot count in (9999-12-31 overflowed)
            return span({}, now)[0], str(error)
        except ValueError:
            return span({}, now)[0], "Enter both dates as YYYY-MM-DD."
        if last < first:
            return span({}, now)[0], "The end date is before the start date."
        if (last - first).days >= MAX_DAYS:
            return span({}, now)[0], f"Choose at most {MAX_DAYS} days."
        return custom(first, last), None
    key = params.get("range") or DEFAULT_RANGE
    if key not in RANGES:
        return span({}, now)[0], f"Unknown range '{key}'; use one of {', '.join(RANGES)} or dates."
    label, length = RANGES[key]
    if length > timedelta(days=HOURLY_DAYS):
        last = timezone.localdate(now)
        days = length.days
        return Span(key, label, tuple(last - timedelta(days=days - 1 - i) for i in range(days)), True), None
    last, hours = floor_hour(now), int(length.total_seconds() // 3600)
    return Span(key, label, tuple(last - timedelta(hours=hours - 1 - i) for i in range(hours)), False), None


def custom(first, last):
    days = (last - first).days + 1
    label = f"{first:%Y-%m-%d} – {last:%Y-%m-%d}"
    if days > HOURLY_DAYS:
        return Span("custom", label, tuple(first + timedelta(days=i) for i in range(days)), True, first, last)
    start = day_start(first)
    hours = [timezone.localtime(start + timedelta(hours=i)) for i in range(days * 24)]
    return Span("custom", label, tuple(hours), False, first, last)


def bounds(chosen):
    first, last = chosen.buckets[0], chosen.buckets[-1]
    if chosen.daily:
        return first, last
    return first, last + timedelta(hours=1) - timedelta(microseconds=1)


def figures(gpu_ids, chosen):
    """GPU id → metric → values per bucket (None: no reading). One query."""
    first, last = bounds(chosen)
    time_field = chosen.time_field
    rows = (chosen.model.objects.filter(gpu_id__in=gpu_ids, **{f"{time_field}__range": (first, last)})
            .values("gpu_id", *METRICS, t=F(time_field)))
    cells = defaultdict(dict)
    for row in rows:
        cells[row["gpu_id"]][row["t"]] = row  # aware datetimes compare and hash by instant, whatever their zone
    index = {t: i for i, t in enumerate(chosen.buckets)}
    result = {}
    for gpu_id in gpu_ids:
        values = {metric: [None] * len(chosen.buckets) for metric in METRICS}
        for t, row in cells[gpu_id].items():
            if t in index:
                for metric in METRICS:
                    values[metric][index[t]] = row[metric]
        result[gpu_id] = values
    return result


@dataclass(frozen=True)
class Badge:
    key: str  # row_remap_failure, row_remap_pending, hot, ecc, xid, nvlink, pcie, remapped, ok, no-data
    text: str
    severity: str  # "bad", "warn", "ok", "muted"
    title: str = ""


def total(values):
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def highest(values):
    present = [v for v in values if v is not None]
    return max(present) if present else None


def badges(values, remap_on=()):
    """What a GPU's figures over the range flag: a row-remap gauge that reads 1 now (``remap_on``: its kinds), hot,
    ECC errors, XID events, NVLink / PCIe errors, remapped rows; "healthy" when it reported and nothing is flagged;
    "no health data" when it reported nothing."""
    found = [Badge(kind, *remap.BADGES[kind]) for kind in remap.BADGES if kind in remap_on]
    hot_c, memory_hot_c = settings.GPU_HOT_C, settings.GPU_MEMORY_HOT_C
    hottest, memory = highest(values["gpu_temp_max_c"]), highest(values["memory_temp_max_c"])
    if hottest is not None and hottest >= hot_c:
        found.append(Badge("hot", f"hot {hottest:.0f} °C", "bad", f"GPU temperature reached {hottest:.0f} °C "
                           f"(at {hot_c:g} °C and above it slows its clocks)"))
    elif memory is not None and memory >= memory_hot_c:
        found.append(Badge("hot", f"memory hot {memory:.0f} °C", "bad", f"memory reached {memory:.0f} °C "
                           f"(flagged at {memory_hot_c:g} °C)"))
    sbe, dbe = total(values["ecc_sbe_errors"]) or 0, total(values["ecc_dbe_errors"]) or 0
    if dbe:
        found.append(Badge("ecc", f"ECC {dbe:g} double-bit", "bad", f"{dbe:g} uncorrectable and {sbe:g} corrected "
                           "ECC errors in the range"))
    elif sbe and sbe >= settings.GPU_SBE_ECC_WARN:
        found.append(Badge("ecc", f"ECC {sbe:g} single-bit", "warn", f"{sbe:g} corrected ECC errors in the range"))
    xid_events = total(values["xid_errors"]) or 0
    if xid_events:
        found.append(Badge("xid", f"XID ×{xid_events}", "bad", f"{xid_events} hardware XID event(s) in the range"))
    for metric, key, words, warn_at in (
            ("nvlink_errors", "nvlink", "NVLink errors", settings.GPU_NVLINK_ERRORS_WARN),
            ("pcie_replays", "pcie", "PCIe replays", settings.GPU_PCIE_REPLAYS_WARN)):
        count = total(values[metric])
        if count and count >= warn_at:
            found.append(Badge(key, f"{words} {count:g}", "warn", f"{count:g} {words} in the range"))
    rows = highest(values["remapped_rows"])
    if rows:
        found.append(Badge("remapped", f"{rows:g} remapped rows", "warn", "memory rows remapped after ECC errors"))
    if found:
        return found
    if any(v is not None for metric in METRICS for v in values[metric]):
        return [Badge("ok", "healthy", "ok", "reported, and nothing flagged in the range")]
    return [Badge("no-data", "no health data", "muted", "no telemetry in the range")]


def no_sensor(values, metric):
    """What the GPU lacks when ``metric`` is one a GPU may have no sensor for and it reported none of it in a range
    in which it reported other figures (None otherwise): drawn as "no sensor", never as an empty chart or 0."""
    if metric not in SENSORS or any(v is not None for v in values[metric]):
        return None
    reported = any(v is not None for other in METRICS if other != metric for v in values[other])
    return SENSORS[metric] if reported else None


def remap_states(gpu_ids):
    """GPU id → the row-remap gauges that read 1 at their last reading (event kinds). One query."""
    found = defaultdict(set)
    for gpu_id, kind in HealthReading.objects.filter(gpu_id__in=gpu_ids, value__gt=0).values_list("gpu_id", "kind"):
        found[gpu_id].add(kind)
    return found


def health_events(gpu_id, limit=20):
    """A GPU's latest health events (row remap failed / pending), newest first."""
    return list(HealthEvent.objects.filter(gpu_id=gpu_id)[:limit])


def series_chart(chosen, metric, lines):
    """JSON for charts.js' time series: ``lines`` are ``(name, values)``."""
    return {
        "x": time_labels(chosen.buckets),
        "series": [{"name": name, "y": values} for name, values in lines],
        "x_title": "", "y_title": METRICS[metric][1], "y_range": [0, 100] if metric == "util_mean" else None,
        "legend": False, "counts": metric in COUNTS,
    }


# --- the fault's own metric on a telemetry ticket (support reads these) ----------------------------------

FAULT_DAYS_BEFORE = 1  # a fault ticket shows its GPU from the day before it opened


def fault_span(opened, now=None):
    """The days a fault ticket shows: from the day before it opened to today (at most ``MAX_DAYS``)."""
    today = timezone.localdate(now or timezone.now())
    first = max(timezone.localdate(opened) - timedelta(days=FAULT_DAYS_BEFORE), today - timedelta(days=MAX_DAYS - 1))
    return custom(min(first, today), today)


def ecc_errors(gpu_id, chosen):
    """A GPU's ECC errors over ``chosen``: ``{"chart", "single_bit", "double_bit"}`` (totals None where its exporter
    publishes no ECC counter). One query."""
    values = figures([gpu_id], chosen)[gpu_id]
    return {
        "chart": series_chart(chosen, "ecc_sbe_errors", [("single-bit", values["ecc_sbe_errors"]),
                                                         ("double-bit", values["ecc_dbe_errors"])]),
        "single_bit": total(values["ecc_sbe_errors"]), "double_bit": total(values["ecc_dbe_errors"]),
    }


def xid_events(gpu_id, since, codes=None, exclude_codes=None):
    """A GPU's hardware XID events since ``since``, newest first (``codes`` / ``exclude_codes`` narrow them)."""
    events = XidEvent.objects.filter(gpu_id=gpu_id, ts__gte=since, kind=XidEvent.Kind.HARDWARE)
    if codes is not None:
        events = events.filter(code__in=codes)
    if exclude_codes is not None:
        events = events.exclude(code__in=exclude_codes)
    return list(events)


def gpu_series(node, range_key="7d", now=None):
    """One utilization line per GPU of ``node``: ``{"times": [...], "lines": [{"gpu_id", "name",
    "values"}]}``, None where a GPU has no row for a bucket. Two queries."""
    span = get_range(range_key)
    gpus = list(node.gpus.order_by("slot").values("pk", "slot"))
    buckets = span.buckets(now)
    cells = defaultdict(dict)
    for row in (
        rollup_rows(range_key, None, now).filter(gpu__node=node)
        .values("gpu_id", "util_mean", t=F(span.time_field))
    ):
        cells[row["gpu_id"]][row["t"]] = round(row["util_mean"], 2)
    return {
        "times": buckets,
        "lines": [
            {"gpu_id": gpu["pk"], "name": f"gpu{gpu['slot']}", "values": [cells[gpu["pk"]].get(t) for t in buckets]}
            for gpu in gpus
        ],
    }
