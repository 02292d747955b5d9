"""GPU health on the node and GPU pages (issue 19): the range a page shows (24 h, 7 d, 30 d or custom dates), each
GPU's health figures over it from the rollups, and the badges that flag what needs a look; the node page's
utilization line per GPU (``gpu_series``).

Two queries whatever the number of GPUs or buckets: the GPUs, then their rollup rows in the range (hourly rows up
to ``HOURLY_DAYS`` days, daily rows beyond). A bucket without a row, or a field the exporter does not publish, is
None (a gap on the chart), never 0; a badge is raised only on figures that were reported. A sensor the GPU lacks
(no memory temperature in a range it reported in: DCGM said "not supported", or no series) shows "no sensor".
The row-remap gauges read 1 now (``HealthReading``, one more query) raise "row remap failed" / "pending" badges.
"""

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from portal.forms import OutOfCalendar, parse_day

from . import remap, xid
from .charts import time_label, time_labels
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
# Fixed y ranges per metric, so that a flat line reads flat (a steady 36 °C is not noise): (low, high), "tdp" the
# GPU model's TDP. A reading above the top raises it (never clipped); counts run from 0 to their highest (at least 1).
AXES = {"util_mean": (0, 100), "gpu_temp_max_c": (20, 100), "memory_temp_max_c": (20, 110),
        "power_mean_w": (0, "tdp"), "sm_clock_mean_mhz": (0, 2200)}
POWER_CEILING_W = 1000  # the power axis's top where the GPU model's TDP is unknown
# Badge severity → rank: the health table sorts a GPU by its worst badge.
SEVERITY = {"bad": 3, "warn": 2, "ok": 1, "muted": 0}
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


def axis_range(metric, lines, tdp_w=None):
    """The y range of ``metric``'s chart: ``AXES`` (power up to ``tdp_w``), raised to the highest of ``lines``'
    values where one is above it; counts from 0 to their highest (at least 1)."""
    top = max((v for _, values in lines for v in values if v is not None), default=None)
    if metric in COUNTS:
        return [0, max(1, top or 0)]
    low, high = AXES.get(metric, (0, None))
    if high == "tdp":
        high = tdp_w or POWER_CEILING_W
    if high is None:
        return None
    return [low, high if top is None or top <= high else round(top * 1.05)]


def series_chart(chosen, metric, lines, tdp_w=None, events=()):
    """JSON for charts.js' time series: ``lines`` are ``(name, values)``, on the metric's fixed axis
    (``axis_range``); ``events`` (``markers``) are drawn as marked lines with their code."""
    return {
        "x": time_labels(chosen.buckets),
        "series": [{"name": name, "y": values} for name, values in lines],
        "x_title": "", "y_title": METRICS[metric][1], "y_range": axis_range(metric, lines, tdp_w),
        "legend": False, "counts": metric in COUNTS, "events": list(events),
    }


def markers(gpu_ids, chosen):
    """GPU id → the events to mark on its charts over ``chosen``, oldest first: hardware XID events (ECC ones
    called so) and row-remap events, each ``{"x": its bucket as the chart labels it, "label": "XID 79", "kind":
    "xid" | "ecc" | "remap", "meaning", "at": its time}``. Two queries."""
    first, last = bounds(chosen)
    if chosen.daily:
        first, last = day_start(first), day_start(last + timedelta(days=1))
    found = defaultdict(list)

    def bucket(ts):
        return timezone.localdate(ts) if chosen.daily else floor_hour(ts)

    for gpu_id, ts, code in (XidEvent.objects.filter(gpu_id__in=gpu_ids, ts__gte=first, ts__lt=last,
                                                     kind=XidEvent.Kind.HARDWARE)
                             .order_by("ts").values_list("gpu_id", "ts", "code")):
        found[gpu_id].append({"x": time_label(bucket(ts)), "label": f"XID {code}", "code": code,
                              "kind": "ecc" if code in xid.ECC_CODES else "xid", "meaning": xid.meaning(code),
                              "at": time_label(ts)})
    for gpu_id, ts, kind in (HealthEvent.objects.filter(gpu_id__in=gpu_ids, ts__gte=first, ts__lt=last)
                             .order_by("ts").values_list("gpu_id", "ts", "kind")):
        found[gpu_id].append({"x": time_label(bucket(ts)), "label": remap.BADGES[kind][0], "code": None,
                              "kind": "remap", "meaning": remap.meaning(kind), "at": time_label(ts)})
    for events in found.values():
        events.sort(key=lambda event: event["at"])
    return found


def with_ecc_counts(events, values, chosen):
    """``events`` (a GPU's ``markers``) and a marker for each bucket of ``chosen`` in which the GPU counted
    uncorrectable (double-bit) ECC errors that no ECC XID event already marks: the counters see errors whose XID a
    scrape missed. Single-bit errors are corrected; they stay counts on their own chart."""
    marked = {event["x"] for event in events if event["kind"] == "ecc"}
    counted = [{"x": label, "label": f"ECC ×{count:g}", "code": None, "kind": "ecc", "at": label,
                "meaning": f"{count:g} uncorrectable (double-bit) ECC error{'' if count == 1 else 's'} counted"}
               for label, count in zip(time_labels(chosen.buckets), values["ecc_dbe_errors"], strict=True)
               if count and label not in marked]
    return sorted(events + counted, key=lambda event: event["at"])


def worst(gpu_badges):
    """``(rank, bad badges)`` of a GPU's badges: what sorts the health table worst first."""
    ranks = [SEVERITY[badge.severity] for badge in gpu_badges]
    return max(ranks, default=0), ranks.count(SEVERITY["bad"])


# The health table's columns: key → (header, the figure over the range from a GPU's values).
TABLE_FIGURES = {
    "gpu_temp_max_c": ("GPU °C (max)", lambda v: highest(v["gpu_temp_max_c"])),
    "memory_temp_max_c": ("Memory °C (max)", lambda v: highest(v["memory_temp_max_c"])),
    "ecc_dbe_errors": ("ECC double-bit", lambda v: total(v["ecc_dbe_errors"])),
    "ecc_sbe_errors": ("ECC single-bit", lambda v: total(v["ecc_sbe_errors"])),
    "xid_errors": ("XID events", lambda v: total(v["xid_errors"])),
    "nvlink_errors": ("NVLink errors", lambda v: total(v["nvlink_errors"])),
    "pcie_replays": ("PCIe replays", lambda v: total(v["pcie_replays"])),
    "remapped_rows": ("Remapped rows", lambda v: highest(v["remapped_rows"])),
}
TABLE_HEADERS = [("name", "GPU"), ("worst", "Health"), *((key, header) for key, (header, _) in TABLE_FIGURES.items())]
TABLE_SORTS = tuple(key for key, _ in TABLE_HEADERS)


def table(gpus, figures, sort="-worst"):
    """The health table of a node's GPUs: one row per GPU (``gpus``: dicts with pk, name, url, badges) with its
    worst badge and the figures of ``TABLE_FIGURES`` over the range, sorted by ``sort`` (a key of ``TABLE_SORTS``,
    "-" for highest first; GPUs without the figure last either way). Returns ``(rows, sort)``: an unknown sort gives
    the default, worst first."""
    key = sort.lstrip("-")
    if key not in TABLE_SORTS:
        sort, key = "-worst", "worst"
    rows = [{**gpu, "worst": worst(gpu["badges"]),
             "figures": {name: figure(figures[gpu["pk"]]) for name, (_, figure) in TABLE_FIGURES.items()}}
            for gpu in gpus]
    descending = sort.startswith("-")

    def value(row):
        if key == "worst":
            return row["worst"]
        return row["name"] if key == "name" else row["figures"][key]

    present = sorted((row for row in rows if value(row) is not None), key=value, reverse=descending)
    return present + [row for row in rows if value(row) is None], sort


def fault(obj):
    """What took a node or GPU out of service (degraded or in repair), and the event its reason names:
    ``{"state", "since", "reason", "event"}``, the reason from its latest move to degraded or in repair that names
    an XID (else the latest such move), the event the hardware XID of that code on the node's GPU the reason names
    ("XID 79: GPU 3 fell off the bus"), or on any of its GPUs, or on the GPU itself, nearest in time within a day
    (None if none is recorded). None for an object in service. Two queries."""
    from inventory.models import GPU, LifecycleState

    out = (LifecycleState.DEGRADED, LifecycleState.IN_REPAIR)
    if obj.state not in out:
        return None
    moves = list(obj.transitions.filter(to_state__in=out).order_by("-created", "-pk")[:FAULT_MOVES])
    if not moves:
        return None
    move = next((m for m in moves if xid.named_code(m.reason) is not None), moves[0])
    code = xid.named_code(move.reason)
    found = {"state": obj.get_state_display(), "since": move.created, "reason": move.reason, "event": None,
             "to_state": move.get_to_state_display()}
    if code is None:
        return found
    if isinstance(obj, GPU):
        events = XidEvent.objects.filter(gpu=obj)
    else:
        events = XidEvent.objects.filter(gpu__node=obj)
        slot = GPU_NAMED.search(move.reason)
        if slot:
            events = events.filter(gpu__slot=int(slot.group(1)))
    window = (move.created - FAULT_WINDOW, move.created + FAULT_WINDOW)
    nearest = sorted(events.filter(code=code, ts__range=window).select_related("gpu")[:FAULT_MOVES],
                     key=lambda event: abs(event.ts - move.created))
    found["event"] = nearest[0] if nearest else None
    return found


FAULT_MOVES = 10  # the latest moves out of service read for the reason that names the fault
FAULT_WINDOW = timedelta(days=1)  # how far from the move its event may be
GPU_NAMED = re.compile(r"\bGPU (\d+)\b")  # "XID 79: GPU 3 fell off the bus": the node's GPU in slot 3


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
