"""What the NVIDIA DCGM exporter's series and labels mean, and how the portal reads them over HTTP.

Shared by the two DCGM collectors (``prometheus.py`` asks a Prometheus server, ``exporter.py`` scrapes an
exporter's ``/metrics`` page itself) and by the demo ``simulator.py``, so a label, a unit or a request
timeout is decided in one place:

- series names and the ``SampleRecord`` field each one fills, with its unit conversion (framebuffer
  memory comes in MiB, the portal stores GB = MiB / 1024; ``DCGM_FI_PROF_*`` activity stays the 0–1 ratio
  DCGM reports; power in W; utilization in %; XID errors are the last XID code, 0 for none; the energy
  counter in mJ, as DCGM counts it);
- the energy counter ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``: millijoules since the driver loaded, so it
  starts again from 0 when the driver is reloaded or the node reboots. Energy over a time is the counter's
  increase, a drop counting as a reset (the energy since the reset is the new value), as Prometheus'
  ``increase()`` does; ``mj_to_wh`` turns it into the Wh the portal stores;
- health series (issue 19): temperatures (°C), SM clock (MHz) and error counters as DCGM counts them; the
  rollups store a counter's increase per hour (``counter_increase``); ``sample_fields`` applies the fallback
  (aggregate ECC counter where the volatile one is missing) and sums (retired pages, remapped rows, NVLink kinds);
- DCGM's blank values (issue 34): a field DCGM has no value for (not supported on this GPU, not found, not
  permitted) holds a sentinel of the field's type, e.g. ``9223372036854775794`` (INT64 "not supported") for the
  memory temperature of a GPU without that sensor. ``reading`` turns any of them into None with the reason, for
  both collectors; the data-quality panel counts them (``blank_notes``), never a figure;
- the row-remap gauges ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` / ``_PENDING`` (0/1): read like the XID gauge, they
  become health events (``remap.py``);
- the labels that name a GPU (``UUID``, else ``Hostname`` + ``gpu`` index) → ``SeriesKey``;
- ``http_get``: one GET bounded by the source's timeout, every failure turned into a ``SourceError``.
"""

from urllib.parse import urlsplit

import requests

from portal import http

from .records import SeriesKey, SourceError, finite

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
PIPE_TENSOR_ACTIVE = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"
TOTAL_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
# Health (issue 19): temperatures in °C, the SM clock in MHz, error counters as DCGM counts them.
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
MEMORY_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
ECC_SBE_VOL = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"  # volatile: since the driver loaded
ECC_DBE_VOL = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
ECC_SBE_AGG = "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"  # aggregate: over the GPU's life (where the volatile one is not set)
ECC_DBE_AGG = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"
RETIRED_SBE = "DCGM_FI_DEV_RETIRED_SBE"  # pages retired (before A100)
RETIRED_DBE = "DCGM_FI_DEV_RETIRED_DBE"
CORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"  # rows remapped (A100 and later)
UNCORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
NVLINK_ERRORS = tuple(f"DCGM_FI_DEV_NVLINK_{kind}_ERROR_COUNT_TOTAL"
                      for kind in ("CRC_FLIT", "CRC_DATA", "REPLAY", "RECOVERY"))
PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
# Row remapping (A100 and later), 0/1 gauges: remapping failed (replace the GPU), a remap waits for a GPU reset.
ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
ROW_REMAP_PENDING = "DCGM_FI_DEV_ROW_REMAP_PENDING"

MJ_PER_WH = 3_600_000  # 1 Wh = 3,600 J


def mib_to_gb(value):
    """Framebuffer MiB (what DCGM reports) → GB as the portal stores memory (MiB / 1024)."""
    return None if value is None else value / 1024


def mj_to_wh(value):
    """Millijoules (DCGM's energy counter) → Wh as the portal stores energy."""
    return None if value is None else value / MJ_PER_WH


def counter_increase(previous, value):
    """What a counter counted between two readings: the difference, or after a reset (the new reading is
    lower: driver reload, reboot) the new reading, i.e. what it counted since the reset. Returns
    ``(increase, reset)``."""
    if value < previous:
        return value, True
    return value - previous, False


# Series → (SampleRecord field, converter from the exporter's unit to the portal's).
SAMPLE_FIELDS = {
    GPU_UTIL: ("util", float),
    FB_USED: ("mem_used_gb", mib_to_gb),
    FB_FREE: ("mem_free_gb", mib_to_gb),
    POWER_USAGE: ("power_w", float),
    GR_ENGINE_ACTIVE: ("gr_engine_active", float),
    PIPE_TENSOR_ACTIVE: ("tensor_active", float),
    XID_ERRORS: ("xid", int),
    TOTAL_ENERGY: ("energy_mj", float),
    GPU_TEMP: ("gpu_temp_c", float),
    MEMORY_TEMP: ("memory_temp_c", float),
    SM_CLOCK: ("sm_clock_mhz", float),
    ECC_SBE_VOL: ("ecc_sbe", float),
    ECC_DBE_VOL: ("ecc_dbe", float),
    PCIE_REPLAY: ("pcie_replay", float),
    ROW_REMAP_FAILURE: ("row_remap_failure", int),
    ROW_REMAP_PENDING: ("row_remap_pending", int),
}
# Series read only where their field's own series is not on the page (``sample_fields``).
FALLBACK_FIELDS = {ECC_SBE_AGG: ("ecc_sbe", float), ECC_DBE_AGG: ("ecc_dbe", float)}
# Series summed into one field: a GPU's retired pages, its remapped rows, its NVLink errors over all kinds.
SUMMED_FIELDS = {
    RETIRED_SBE: ("retired_pages", float), RETIRED_DBE: ("retired_pages", float),
    CORRECTABLE_REMAPPED_ROWS: ("remapped_rows", float), UNCORRECTABLE_REMAPPED_ROWS: ("remapped_rows", float),
    **{series: ("nvlink_errors", float) for series in NVLINK_ERRORS},
}
READ_SERIES = {**SAMPLE_FIELDS, **FALLBACK_FIELDS, **SUMMED_FIELDS}
# Counters whose increase in an hour the rollups store (the rest of the health fields are levels or gauges).
ERROR_COUNTERS = {"ecc_sbe": "ecc_sbe_errors", "ecc_dbe": "ecc_dbe_errors", "nvlink_errors": "nvlink_errors",
                  "pcie_replay": "pcie_replays"}

# Help texts and types as dcgm-exporter publishes them (the simulator serves the same page).
SERIES_HELP = {
    GPU_UTIL: ("gauge", "GPU utilization (in %)."),
    FB_USED: ("gauge", "Framebuffer memory used (in MiB)."),
    FB_FREE: ("gauge", "Framebuffer memory free (in MiB)."),
    POWER_USAGE: ("gauge", "Power draw (in W)."),
    GR_ENGINE_ACTIVE: ("gauge", "Ratio of time the graphics engine is active."),
    PIPE_TENSOR_ACTIVE: ("gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    XID_ERRORS: ("gauge", "Value of the last XID error encountered."),
    TOTAL_ENERGY: ("counter", "Total energy consumption since boot (in mJ)."),
    GPU_TEMP: ("gauge", "GPU temperature (in C)."),
    MEMORY_TEMP: ("gauge", "Memory temperature (in C)."),
    SM_CLOCK: ("gauge", "SM clock frequency (in MHz)."),
    ECC_SBE_VOL: ("counter", "Total number of single-bit volatile ECC errors."),
    ECC_DBE_VOL: ("counter", "Total number of double-bit volatile ECC errors."),
    CORRECTABLE_REMAPPED_ROWS: ("counter", "Number of remapped rows for correctable errors"),
    UNCORRECTABLE_REMAPPED_ROWS: ("counter", "Number of remapped rows for uncorrectable errors"),
    NVLINK_ERRORS[0]: ("counter", "Total number of NVLink flow-control CRC errors."),
    PCIE_REPLAY: ("counter", "Total number of PCIe retries."),
    ROW_REMAP_FAILURE: ("gauge", "Whether remapping of rows has failed"),
    ROW_REMAP_PENDING: ("gauge", "Whether remapping of rows is pending"),
}


def sample_fields(values):
    """One GPU's readings (series → value in the portal's unit, None where not a finite number) → its fields:
    a fallback series fills its field only where the field's own series is missing; summed series add up
    (None when none of them is there). A field no series reported is absent, never 0."""
    fields = {}
    for series, value in values.items():
        if series in SAMPLE_FIELDS:
            fields[SAMPLE_FIELDS[series][0]] = value
    for series, value in values.items():
        if series in FALLBACK_FIELDS:
            fields.setdefault(FALLBACK_FIELDS[series][0], value)
        elif series in SUMMED_FIELDS and value is not None:
            name = SUMMED_FIELDS[series][0]
            fields[name] = (fields.get(name) or 0) + value
        elif series in SUMMED_FIELDS:
            fields.setdefault(SUMMED_FIELDS[series][0], None)
    return fields


def series_key(labels):
    """A series' labels → the key the matcher looks up (``UUID``, else ``Hostname`` + ``gpu``); None for a
    series that names no GPU (neither label set)."""
    key = SeriesKey(
        uuid=labels.get("UUID", "") or labels.get("uuid", ""),
        hostname=labels.get("Hostname", "") or labels.get("hostname", ""),
        gpu_index=str(labels.get("gpu", "")),
        model_name=labels.get("modelName", ""),
    )
    return key if key.uuid or (key.hostname and key.gpu_index) else None


# --- MIG ------------------------------------------------------------------------------------------------
# A GPU in MIG mode is reported as several series that share its UUID / Hostname + gpu labels and differ by
# ``GPU_I_ID`` (and ``GPU_I_PROFILE``, e.g. ``3g.40gb``): one per GPU instance, besides any whole-GPU series.
# ``combine_instances`` makes one set of figures per physical GPU, so no instance overwrites another:
# - a whole-GPU series, where the exporter publishes one for a field, is the GPU's value;
# - else memory (used, free) is summed over the instances: each has its own slice of the framebuffer;
# - activity ratios (``PROF_GR_ENGINE_ACTIVE``, ``PROF_PIPE_TENSOR_ACTIVE``) are relative to an instance's
#   share of the GPU: weighted by its compute slices (the ``N`` of ``Ng.…``) over the GPU's slices (7; 4 on
#   an A30);
# - power and the energy counter are the whole board's, repeated on each instance: the highest reading, not
#   a sum (summing them would count the board's power once per instance);
# - XID: the highest code any instance shows;
# - utilization: ``DEV_GPU_UTIL`` is not measured in MIG mode, so a MIG GPU's utilization is its graphics
#   engine activity × 100 (the whole-GPU reading, else the weighted instances).
MIG_ID, MIG_PROFILE = "GPU_I_ID", "GPU_I_PROFILE"
SUMMED = {"mem_used_gb", "mem_free_gb", "mem_used_mean_gb"}
WEIGHTED = {"gr_engine_active", "tensor_active", "gr_engine_active_mean", "tensor_active_mean"}
UTILIZATION = {"util": "gr_engine_active", "util_mean": "gr_engine_active_mean", "util_max": "gr_engine_active_mean"}


def mig_instance(labels):
    """``(instance id, profile)`` of a MIG instance's series; None for a whole-GPU series."""
    instance = labels.get(MIG_ID, "")
    return (str(instance), labels.get(MIG_PROFILE, "")) if instance != "" else None


def slices(profile):
    """Compute slices of a MIG profile: ``3g.40gb`` → 3 (1 when the profile does not say)."""
    head = (profile or "").split("g.", 1)[0].split("+")[0]
    return int(head) if head.isdigit() else 1


def gpu_slices(model_name):
    return 4 if "A30" in (model_name or "").upper() else 7


def combine_instances(whole, instances, model_name=""):
    """Figures of one physical GPU from its whole-GPU series' fields (``whole``: field → value) and its MIG
    instances' (``instances``: (id, profile) → field → value); see the rules above."""
    combined = {name: value for name, value in whole.items() if value is not None}
    if not instances:
        return combined
    total = gpu_slices(model_name)
    fields = {name for values in instances.values() for name in values}
    for name in fields - set(combined):
        readings = [(slices(profile), values[name]) for (_, profile), values in instances.items()
                    if values.get(name) is not None]
        if not readings:
            continue
        if name in SUMMED:
            combined[name] = sum(value for _, value in readings)
        elif name in WEIGHTED:
            combined[name] = min(1.0, sum(share * value for share, value in readings) / total)
        elif name not in UTILIZATION:  # DEV_GPU_UTIL of an instance means nothing: see below
            combined[name] = max(value for _, value in readings)
    for name, activity in UTILIZATION.items():
        if combined.get(activity) is not None and (name in fields or name not in combined):
            combined[name] = 100 * combined[activity]
    return combined


def bad_data_warnings(not_finite, nameless):
    """The warnings for what a collector left out: values per series or field that were not finite
    numbers (``{name: count}``), and samples that named no GPU."""
    warnings = [f"{name}: {count} value(s) that are not finite numbers (NaN, Inf or text) left out"
                for name, count in sorted(not_finite.items())]
    if nameless:
        warnings.append(f"{nameless} sample(s) without a UUID or Hostname + gpu label left out")
    return warnings


XID_LIMIT = 2**31  # XID codes are small integers; anything past a 32-bit column is garbage


def convert(series, number):
    """A reading of ``series`` (a finite number in DCGM's unit, see ``reading``) in the portal's unit, or None for
    an XID code that is not a code."""
    if series == XID_ERRORS and not 0 <= number < XID_LIMIT:
        return None
    return READ_SERIES[series][1](number)


# --- DCGM's blank values (issue 34) ------------------------------------------------------------------------
# What DCGM puts in a field it has no value for, by the field's type: NVIDIA/DCGM dcgmlib/dcgm_structs.h
# (DCGM_INT32_BLANK … DCGM_FP64_NOT_PERMISSIONED, DCGM_*_IS_BLANK), read at commit
# 72fa3feaa67d716a75323a8f47c34ff3ee73f824.
# The base is "blank", +1 "not found", +2 "not supported", +3 "not permissioned"; IS_BLANK(v) is v >= base.
INT32_BLANK = 0x7FFFFFF0  # 2147483632
INT64_BLANK = 0x7FFFFFFFFFFFFFF0  # 9223372036854775792
FP64_BLANK = 140737488355328.0  # 2**47
BLANK_CODES = ("blank", "not found", "not supported", "not permissioned")
# An INT64 code read as a float: all four are 2**63 once parsed (and Prometheus keeps only the float).
UNTOLD = "blank, not supported or not permissioned"
NO_SENSOR = "reads 0: no sensor"
NOT_FINITE = "not finite"
# The series of type DCGM_FT_DOUBLE (dcgmlib/src/dcgm_fields.cpp, same commit); every other series read is INT64.
DOUBLE_SERIES = {POWER_USAGE, GR_ENGINE_ACTIVE, PIPE_TENSOR_ACTIVE}
# dcgm-exporter 3.x and later write 0 as the memory temperature of a GPU without the sensor (GDDR boards: the
# RTX 4000 Ada page in tests/fixtures/dcgm/real; NVIDIA/dcgm-exporter#460); a running GPU's memory is never 0 °C.
ZERO_IS_NO_SENSOR = {MEMORY_TEMP}
# How the data-quality panel names a series.
SERIES_WORDS = {
    GPU_UTIL: "GPU utilization", FB_USED: "framebuffer used", FB_FREE: "framebuffer free", POWER_USAGE: "power",
    GR_ENGINE_ACTIVE: "graphics engine activity", PIPE_TENSOR_ACTIVE: "tensor pipe activity", XID_ERRORS: "XID",
    TOTAL_ENERGY: "energy counter", GPU_TEMP: "GPU temperature", MEMORY_TEMP: "GPU-memory temperature",
    SM_CLOCK: "SM clock", ECC_SBE_VOL: "single-bit ECC errors", ECC_DBE_VOL: "double-bit ECC errors",
    ECC_SBE_AGG: "single-bit ECC errors (aggregate)", ECC_DBE_AGG: "double-bit ECC errors (aggregate)",
    RETIRED_SBE: "retired pages (single-bit)", RETIRED_DBE: "retired pages (double-bit)",
    CORRECTABLE_REMAPPED_ROWS: "remapped rows (correctable)", UNCORRECTABLE_REMAPPED_ROWS: "remapped rows "
    "(uncorrectable)", PCIE_REPLAY: "PCIe replays", ROW_REMAP_FAILURE: "row remap failure",
    ROW_REMAP_PENDING: "row remap pending", **{series: "NVLink errors" for series in NVLINK_ERRORS},
}


def blank(series, number, exact=None):
    """Why ``number`` (finite) of ``series`` is no reading, or None for a reading: one of ``BLANK_CODES``, ``UNTOLD``
    for an INT64 code known only as a float (``exact``: the integer as the page wrote it, where it is known), or
    ``NO_SENSOR``."""
    if series in DOUBLE_SERIES:
        return _code(number - FP64_BLANK) if number >= FP64_BLANK else None
    if number == float(INT64_BLANK):  # 2**63: the float of every INT64 code (past it, no int64 at all: garbage)
        return UNTOLD if exact is None else _code(exact - INT64_BLANK)
    # The 32-bit codes only exactly: a 64-bit counter passes through 2**31 (the energy counter in mJ, in an hour).
    if INT32_BLANK <= number < INT32_BLANK + len(BLANK_CODES) and number == int(number):
        return _code(number - INT32_BLANK)
    if number == 0 and series in ZERO_IS_NO_SENSOR:
        return NO_SENSOR
    return None


def blank_base(series):
    """The lowest blank value of ``series``' DCGM type."""
    return FP64_BLANK if series in DOUBLE_SERIES else INT64_BLANK


def _code(offset):
    return BLANK_CODES[int(offset)] if offset == int(offset) and 0 <= offset < len(BLANK_CODES) else BLANK_CODES[0]


def reading(series, value, exact=None):
    """``(number, None)`` for a reading of ``series`` (a finite float in DCGM's unit), ``(None, why)`` for none:
    ``NOT_FINITE`` (NaN, ±Inf, text) or what ``blank`` says. Both collectors read every DCGM value through it."""
    number = finite(value)
    if number is None or (series not in DOUBLE_SERIES and number > float(INT64_BLANK)):  # no int64 is that big
        return None, NOT_FINITE
    why = blank(series, number, exact)
    return (None, why) if why else (number, None)


def blank_notes(found):
    """The data-quality notes on blanks: ``found`` maps (series, why) → the GPUs (series keys) that showed it.
    Returns ``[(note, GPUs)]``, e.g. ``("GPU-memory temperature: not supported on 12 GPUs (DCGM sentinel)", 12)``."""
    notes = []
    for (series, why), gpus in sorted(found.items()):
        count = len(gpus)
        where = f"on {count} GPU{'' if count == 1 else 's'}"
        text = f"reads 0 {where} (no sensor)" if why == NO_SENSOR else f"{why} {where} (DCGM sentinel)"
        notes.append((f"{SERIES_WORDS.get(series, series)}: {text}", count))
    return notes


class SourceUnreachable(SourceError):
    """The source did not answer at all (refused, timed out): not worth asking it anything else in this pull."""


def http_get(source, url, params=None):
    """GET ``url`` for ``source``: bounded by its timeout (``portal.http.fetch``), with its bearer token if
    it has one. Returns the response of a 2xx answer; anything else raises ``SourceError`` saying, in the
    portal's words, what went wrong (``portal.http.describe``; never text from the answer)."""
    headers = {"Accept": "application/json, text/plain;q=0.9, */*;q=0.1"}
    if source.auth_token:
        headers["Authorization"] = f"Bearer {source.auth_token}"
    timeout = source.timeout_seconds
    where = endpoint(url)
    try:
        response = http.fetch("GET", url, params=params, headers=headers, timeout=timeout)
    except (requests.Timeout, requests.ConnectionError) as error:
        raise SourceUnreachable(f"{where}: {http.describe(error, timeout)}") from error
    except requests.RequestException as error:
        raise SourceError(f"{where}: {http.describe(error, timeout)}") from error
    if response.status_code >= 400:
        raise SourceError(f"{where}: {http.status_error(response.status_code)}")
    return response


def http_json(source, url, params=None):
    """``http_get`` whose answer must be a JSON object."""
    response = http_get(source, url, params)
    try:
        document = response.json()
    except ValueError as error:
        raise SourceError(f"{endpoint(url)}: the answer is not JSON") from error
    if not isinstance(document, dict):
        raise SourceError(f"{endpoint(url)}: the answer is JSON but not an object")
    return document


def endpoint(url):
    """The path a message names (``/api/v1/query_range``): not the host, nor credentials an old URL may hold."""
    return urlsplit(url).path or "/"
