"""Collector for a Prometheus server that scrapes NVIDIA DCGM exporters: hourly GPU records, aggregated by
Prometheus itself (``/api/v1/query_range``), so the raw samples never leave the server.

Each rollup field is one PromQL expression evaluated at hour ENDS with ``step=3600``: the value at ``t``
is the hour [t - 1h, t] and becomes ``HourRecord(hour=t - 1h)``. Per GPU and hour:

- utilization mean and max, memory used (MiB → GB), power, and the ``DCGM_FI_PROF_*`` activity ratios:
  ``avg_over_time``/``max_over_time`` over the hour. A series Prometheus does not have gives no value
  (None: "not reported"), never 0.
- ``samples``: ``count_over_time`` of the utilization series.
- health: GPU and memory temperature ``max_over_time``, SM clock ``avg_over_time``; ECC (volatile, else
  aggregate), NVLink and PCIe replay error counters ``increase`` (rounded: ``increase`` extrapolates to the
  hour's edges); retired pages and remapped rows ``max_over_time`` (totals). Series summed into one field
  (NVLink's kinds, SBE + DBE retired pages) are one query each, summed here: a ``__name__`` regex selector is
  refused by Prometheus once the function drops the names and the series' labels clash.
- the XID gauge (``DCGM_FI_DEV_XID_ERRORS``, the last XID code, sticky): its last, highest and lowest value
  in the hour and how often it changed (``last_over_time``, ``max_over_time``, ``min_over_time``,
  ``changes``); the pull turns them into XID events (``xid.py``), never counts hours of a sticky value. The
  row-remap gauges (failure, pending: 0/1) likewise, by their last and highest value (``remap.py``).
- DCGM's blank values (``dcgm.blank``: a field the GPU does not support reads e.g. 2**63): every value is read
  through ``dcgm.reading``, so a blank is None, counted per series on the data-quality panel. A mean or an
  increase would hide one (a blank counter increases by 0; a mean of blanks and readings is neither), so those
  queries give the series' blank itself for an hour in which it read one (``_guarded``).
- MIG: series are grouped by ``GPU_I_ID`` / ``GPU_I_PROFILE`` as well, and each GPU's instances combined
  into one record (``dcgm.combine_instances``): averaging them would read a third of a GPU's memory.
- ``energy_wh``: where the GPU's exporter publishes DCGM's energy counter, its ``increase`` over the
  hour (mJ → Wh; ``increase`` counts a counter that restarted from 0 after a driver reload or a reboot
  from its new value, so nothing is lost and nothing counted twice). An hour in which the counter has
  samples but no usable increase (a single sample, NaN, or negative, which a real counter cannot be) has
  no energy (None, with a warning for NaN and negative values), never an estimate from another source.
  Without the counter: mean power × the part of the hour covered by samples (power samples × the
  target's scrape interval, which Prometheus' ``/api/v1/targets`` reports; where it does not, e.g.
  behind Thanos, the hour is taken as covered). The current hour is covered at most up to ``end``.

Series are grouped ``by`` the labels that name a GPU (plus ``job`` and ``instance``), so labels that
change over time (Kubernetes ``pod``/``container`` labels of dcgm-exporter) do not split a GPU's hour;
if two scrape jobs report the same GPU, the one with more samples wins.

The window runs from the hour of ``start`` to the current hour, which is included while still partial;
``synced_until`` is the last complete hour boundary, so the next pull recomputes the partial hour. Long
windows are split into 7-day requests (168 points per series, far under Prometheus' 11,000).
"""

import logging
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

from . import dcgm
from .records import Collected, HourRecord, SourceError, finite
from .rollups import floor_hour

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
# Prometheus' own error types (web/api/v1): safe to repeat, unlike an answer's free text.
PROMETHEUS_ERROR_TYPES = {"timeout", "canceled", "execution", "bad_data", "internal", "unavailable", "not_found",
                          "not_acceptable"}
LATEST_TIME = 253402300799  # 9999-12-31 23:59:59 UTC
CHUNK = timedelta(days=7)
GROUP = "UUID, Hostname, gpu, modelName, job, instance, GPU_I_ID, GPU_I_PROFILE"


def _mean(series):
    return _guarded((f"avg by ({GROUP}) (avg_over_time({series}[1h]))", series))


def _guarded(*expressions):
    """``(expression, series)`` pairs joined by ``or`` (the first one a GPU has wins), each left out where its series
    read a DCGM blank in the hour, and that blank instead when none of them has a value: the collector then reads a
    blank, not a mean or an increase of one."""
    blanks = [f"max by ({GROUP}) (max_over_time({series}[1h])) >= {dcgm.blank_base(series):.0f}"
              for _, series in expressions]
    kept = [f"({expression}) unless ({blank})" for (expression, _), blank in zip(expressions, blanks, strict=True)]
    return " or ".join(kept + [f"({blank})" for blank in blanks])


def _count(expression):
    return f"sum by ({GROUP}) (count_over_time({expression}))"


def queries():
    """HourRecord field (or a helper value) → PromQL evaluated at the end of each hour."""
    return {
        "util_mean": _mean(dcgm.GPU_UTIL),
        "util_max": f"max by ({GROUP}) (max_over_time({dcgm.GPU_UTIL}[1h]))",
        "samples": _count(f"{dcgm.GPU_UTIL}[1h]"),
        "mem_used_mean_gb": _mean(dcgm.FB_USED),
        "power_mean_w": _mean(dcgm.POWER_USAGE),
        "power_samples": _count(f"{dcgm.POWER_USAGE}[1h]"),
        "gr_engine_active_mean": _mean(dcgm.GR_ENGINE_ACTIVE),
        "tensor_active_mean": _mean(dcgm.PIPE_TENSOR_ACTIVE),
        "xid_last": f"max by ({GROUP}) (last_over_time({dcgm.XID_ERRORS}[1h]))",
        "xid_max": f"max by ({GROUP}) (max_over_time({dcgm.XID_ERRORS}[1h]))",
        "xid_min": f"min by ({GROUP}) (min_over_time({dcgm.XID_ERRORS}[1h]))",
        "xid_changes": f"max by ({GROUP}) (changes({dcgm.XID_ERRORS}[1h]))",
        "energy_wh": f"sum by ({GROUP}) (increase({dcgm.TOTAL_ENERGY}[1h]))",
        "energy_samples": _count(f"{dcgm.TOTAL_ENERGY}[1h]"),
        "gpu_temp_max_c": _max(dcgm.GPU_TEMP),
        "memory_temp_max_c": _max(dcgm.MEMORY_TEMP),
        "sm_clock_mean_mhz": _mean(dcgm.SM_CLOCK),
        # The volatile ECC counter, else the aggregate one: their increase in an hour is the same errors.
        "ecc_sbe_errors": _guarded(_sum_increase(dcgm.ECC_SBE_VOL), _sum_increase(dcgm.ECC_SBE_AGG)),
        "ecc_dbe_errors": _guarded(_sum_increase(dcgm.ECC_DBE_VOL), _sum_increase(dcgm.ECC_DBE_AGG)),
        "pcie_replays": _increase(dcgm.PCIE_REPLAY),
        # One query per series of a summed field (``SUMS``): a selector of several series (``__name__=~``) is
        # refused by Prometheus once ``increase`` or ``max_over_time`` drops their names and their labels clash.
        **{part: _increase(series) for part, series in zip(SUMS["nvlink_errors"], dcgm.NVLINK_ERRORS, strict=True)},
        # Totals over the GPU's life: their highest reading in the hour.
        "retired_sbe": _max(dcgm.RETIRED_SBE), "retired_dbe": _max(dcgm.RETIRED_DBE),
        "remapped_correctable": _max(dcgm.CORRECTABLE_REMAPPED_ROWS),
        "remapped_uncorrectable": _max(dcgm.UNCORRECTABLE_REMAPPED_ROWS),
        # Row-remap gauges (0/1): on at the hour's end, on at any time in it.
        **{f"{name}_{how}": f"max by ({GROUP}) ({how}_over_time({series}[1h]))"
           for series, name in ((dcgm.ROW_REMAP_FAILURE, "row_remap_failure"),
                                (dcgm.ROW_REMAP_PENDING, "row_remap_pending")) for how in ("last", "max")},
    }


def _max(series):
    return f"max by ({GROUP}) (max_over_time({series}[1h]))"


def _increase(series):
    return _guarded(_sum_increase(series))


def _sum_increase(series):
    return f"sum by ({GROUP}) (increase({series}[1h]))", series


# Record fields that are the sum of several queries' values (None when none of them has one).
SUMS = {
    "nvlink_errors": ("nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery"),
    "retired_pages": ("retired_sbe", "retired_dbe"),
    "remapped_rows": ("remapped_correctable", "remapped_uncorrectable"),
}
# increase() extrapolates to the hour's edges (1.03 errors): errors are whole numbers.
COUNTS = {"ecc_sbe_errors", "ecc_dbe_errors", "pcie_replays", *(part for parts in SUMS.values() for part in parts)}
CONVERT = {"mem_used_mean_gb": dcgm.mib_to_gb, "energy_wh": dcgm.mj_to_wh, "samples": int, "power_samples": int,
           "energy_samples": int, "xid_last": int, "xid_max": int, "xid_min": int, "xid_changes": int,
           **{name: round for name in COUNTS}}
# Values that go into energy_wh or a sum, not into the record as they are.
HELPERS = {"power_samples", "energy_samples", *COUNTS - set(HourRecord.__dataclass_fields__)}
REMAP_FIELDS = {f"{name}_{how}": series for series, name in ((dcgm.ROW_REMAP_FAILURE, "row_remap_failure"),
                                                             (dcgm.ROW_REMAP_PENDING, "row_remap_pending"))
                for how in ("last", "max")}
CONVERT.update({field: int for field in REMAP_FIELDS})
# The DCGM series whose values (or their mean, highest, increase) a field is: read through ``dcgm.reading``, so
# its blank values are no value. Counts of samples and of changes are the portal's own, never a blank.
SERIES = {
    "util_mean": dcgm.GPU_UTIL, "util_max": dcgm.GPU_UTIL, "mem_used_mean_gb": dcgm.FB_USED,
    "power_mean_w": dcgm.POWER_USAGE, "gr_engine_active_mean": dcgm.GR_ENGINE_ACTIVE,
    "tensor_active_mean": dcgm.PIPE_TENSOR_ACTIVE, "energy_wh": dcgm.TOTAL_ENERGY,
    **{field: dcgm.XID_ERRORS for field in ("xid_last", "xid_max", "xid_min")},
    "gpu_temp_max_c": dcgm.GPU_TEMP, "memory_temp_max_c": dcgm.MEMORY_TEMP, "sm_clock_mean_mhz": dcgm.SM_CLOCK,
    "ecc_sbe_errors": dcgm.ECC_SBE_VOL, "ecc_dbe_errors": dcgm.ECC_DBE_VOL, "pcie_replays": dcgm.PCIE_REPLAY,
    **dict(zip(SUMS["nvlink_errors"], dcgm.NVLINK_ERRORS, strict=True)),
    "retired_sbe": dcgm.RETIRED_SBE, "retired_dbe": dcgm.RETIRED_DBE,
    "remapped_correctable": dcgm.CORRECTABLE_REMAPPED_ROWS, "remapped_uncorrectable": dcgm.UNCORRECTABLE_REMAPPED_ROWS,
    **REMAP_FIELDS,
}


def collect(source, start, end):
    """The hours from the one holding ``start`` to the one holding ``end`` (partial), for every GPU."""
    base = source.url.rstrip("/")
    collected = Collected(synced_until=floor_hour(end))
    intervals = scrape_intervals(source, base)
    values = defaultdict(dict)  # (group labels, hour) → field → value
    bad, negative, negative_counts = Counter(), 0, Counter()
    blanks = defaultdict(set)  # (series, why) → GPUs
    first_end, last_end = floor_hour(start) + HOUR, floor_hour(end) + HOUR
    chunk_start = first_end
    while chunk_start <= last_end:
        chunk_end = min(chunk_start + CHUNK - HOUR, last_end)
        for field, query in queries().items():
            for labels, ts, raw in query_range(source, base, query, chunk_start, chunk_end, collected.warnings):
                number, why = dcgm.reading(SERIES[field], raw) if field in SERIES else (finite(raw), None)
                if why not in (None, dcgm.NOT_FINITE):
                    if (gpu := dcgm.series_key(dict(labels))) is not None:
                        blanks[(SERIES[field], why)].add(gpu.key)
                    continue
                if number is None:
                    bad[field] += 1
                    continue
                if field == "energy_wh" and number < 0:  # increase() of a counter is never negative
                    negative += 1
                    continue
                if field in COUNTS and number < 0:
                    negative_counts[field] += 1  # no count of errors is negative: not reported
                    continue
                hour = datetime.fromtimestamp(ts, UTC) - HOUR
                values[(labels, hour)][field] = CONVERT.get(field, float)(number)
        chunk_start = chunk_end + HOUR
    collected.hours, nameless = hour_records(values, intervals, end, collected.quality)
    collected.warnings += dcgm.bad_data_warnings(bad, nameless)
    if negative:
        collected.warnings.append(f"increase({dcgm.TOTAL_ENERGY}): {negative} negative value(s) left out "
                                  "(no energy for those hours)")
    collected.warnings += [f"{field}: {count} negative value(s) left out (a count is never negative)"
                           for field, count in sorted(negative_counts.items())]
    for note, count in dcgm.blank_notes(blanks):
        collected.quality.add("dcgm_blank", note, count=count)
    return collected


def hour_records(values, intervals, end, quality=None):
    """Values per (series labels, hour) → one ``HourRecord`` per GPU and hour, with its energy (its MIG
    instances combined, and counted in ``quality``); and how many series hours named no GPU."""
    gpus = {}  # (series key, job, instance, hour) → [series, whole-GPU fields, {MIG instance: fields}]
    nameless = 0
    for (labels, hour), fields in values.items():
        label = dict(labels)
        series = dcgm.series_key(label)
        if series is None:
            nameless += 1
            continue
        part = gpus.setdefault((series.key, label.get("job"), label.get("instance"), hour), [series, {}, {}])
        instance = dcgm.mig_instance(label)
        if instance is None:
            part[1].update(fields)
        else:
            part[2].setdefault(instance, {}).update(fields)
    best, mig = {}, {}  # (series key, hour) → HourRecord: one per GPU and hour; series key → MIG instances
    for (key, job, scraper, hour), (series, whole, instances) in gpus.items():
        fields = dcgm.combine_instances(whole, instances, series.model_name)
        for total, parts in SUMS.items():
            present = [fields[part] for part in parts if fields.get(part) is not None]
            fields[total] = sum(present) if present else None
        record = HourRecord(series=series, hour=hour, mig=tuple(sorted(instances)),
                            **{name: value for name, value in fields.items() if name not in HELPERS})
        if not fields.get("energy_samples") and record.power_mean_w is not None:  # no energy counter: estimate
            record.energy_wh = record.power_mean_w * covered_hours(
                fields.get("power_samples", 0), intervals.get((job, scraper)), hour, end)
        if instances:
            mig[key] = instances
        if (key, hour) not in best or record.samples > best[(key, hour)].samples:
            best[(key, hour)] = record
    if quality is not None:
        for key, instances in sorted(mig.items()):
            quality.add("mig_instances", f"{key}: " + ", ".join(f"{i} ({p})" for i, p in sorted(instances)),
                        count=len(instances))
    return list(best.values()), nameless


def covered_hours(samples, interval_seconds, hour, end):
    """The part of ``hour`` the samples cover: samples × scrape interval, at most the hour and at most
    up to ``end`` (the current hour); without a known interval, the whole (elapsed) hour."""
    elapsed = min(1.0, max(0.0, (end - hour).total_seconds() / 3600))
    if not interval_seconds:
        return elapsed
    return min(elapsed, samples * interval_seconds / 3600)


def query_range(source, base, query, first, last, warnings):
    """Yields ``(group labels, unix time, raw value)`` for every point of a range query."""
    url = f"{base}/api/v1/query_range"
    where = dcgm.endpoint(url)
    document = dcgm.http_json(source, url, {
        "query": query, "start": first.timestamp(), "end": last.timestamp(), "step": 3600,
        "timeout": f"{source.timeout_seconds}s",
    })
    data = answer_data(document, url)
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise SourceError(f"{where}: expected a matrix result, got another kind")
    reported = document.get("warnings")
    warnings.extend(f"Prometheus: {str(warning)[:300]}" for warning in (reported if isinstance(reported, list) else []))
    for series in data["result"]:
        if not isinstance(series, dict) or not isinstance(series.get("metric") or {}, dict):
            raise SourceError(f"{where}: a result that is not a series object")
        labels = tuple(sorted((str(name), str(value)) for name, value in (series.get("metric") or {}).items()))
        values = series.get("values") or []
        if not isinstance(values, list):
            raise SourceError(f"{where}: a series whose values are not a list")
        for point in values:
            try:
                ts, raw = point
                ts = float(ts)
            except (TypeError, ValueError):
                raise SourceError(f"{where}: a point that is not [time, value]") from None
            if not 0 < ts < LATEST_TIME:
                raise SourceError(f"{where}: a point at a time no clock can hold")
            yield labels, ts, raw


def answer_data(document, url):
    """The ``data`` of a Prometheus API answer; ``status: error`` becomes a ``SourceError`` naming the error
    type where it is one Prometheus defines (its free text goes to the worker's log only)."""
    where = dcgm.endpoint(url)
    if document.get("status") != "success":
        kind = document.get("errorType")
        log.info("Prometheus %s answered %r: %r", where, str(document.get("status"))[:50],
                 str(document.get("error"))[:300])
        raise SourceError(f"{where}: Prometheus answered an error"
                          + (f" ({kind})" if kind in PROMETHEUS_ERROR_TYPES else ""))
    data = document.get("data")
    if not isinstance(data, dict):
        raise SourceError(f"{where}: the answer has no data")
    return data


def scrape_intervals(source, base):
    """(job, instance) → scrape interval in seconds, from ``/api/v1/targets``; {} where it is not served."""
    url = f"{base}/api/v1/targets"
    try:
        data = answer_data(dcgm.http_json(source, url, {"state": "active"}), url)
    except dcgm.SourceUnreachable:
        raise  # a hanging or refusing server: the pull fails now, not after one more timeout on the queries
    except SourceError as error:
        log.info("no scrape intervals from %s (energy assumes covered hours): %s", source.name, error)
        return {}
    intervals = {}
    for target in data.get("activeTargets") or []:
        labels = target.get("labels") or {}
        seconds = duration_seconds(target.get("scrapeInterval", ""))
        if seconds:
            intervals[(labels.get("job"), labels.get("instance"))] = seconds
    return intervals


DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text):
    """A Prometheus duration ('15s', '1m30s', '500ms') in seconds, or None."""
    parts = DURATION.findall(text or "")
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    return sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts)
