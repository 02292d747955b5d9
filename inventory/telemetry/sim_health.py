"""The simulator's GPU health (``simulator.py``, which reads it through ``health_sample`` and ``health_hour``): a
function of (GPU, time) like the rest of the model.

- temperatures and the SM clock follow the load; degraded GPUs run 14 °C hotter, have remapped rows and now and
  then count ECC single-bit, NVLink and PCIe replay errors; healthy ones count none;
- a GPU without a memory-temperature sensor (GDDR boards: L40S, L4, T4…) reports what DCGM reports for it: the
  INT64 "not supported" sentinel (``dcgm.INT64_BLANK`` + 2), never a temperature;
- row remapping (issue 34): the demo's GPUs whose incidents say a remap is pending (``inventory.demo.INCIDENTS``)
  report ``DCGM_FI_DEV_ROW_REMAP_PENDING`` 1; one GPU still in service reports a failed remap
  (``DCGM_FI_DEV_ROW_REMAP_FAILURE`` 1), so the demo shows the event, its badge and the fault ticket it opens.
"""

from . import dcgm, simulator  # simulator imports this module too: its names are read when a function runs

NOT_SUPPORTED = dcgm.INT64_BLANK + 2  # DCGM_INT64_NOT_SUPPORTED
# Catalog names of boards with GDDR memory: no memory-temperature sensor (dcgm-exporter reports a sentinel or 0).
NO_MEMORY_SENSOR = {"L40S", "L40", "L4", "RTX 6000 Ada", "RTX 4000 Ada", "A40", "A10", "T4"}
ROW_REMAP_PENDING = {("zrh-h100-012", 6), ("lys-h100-004", 1)}  # (hostname, GPU slot)
ROW_REMAP_FAILED = {("zrh-h100-014", 5)}

# series → (rollup field, hash channel, chance of an hour with errors, most errors in such an hour)
ERROR_COUNTERS = {
    dcgm.ECC_SBE_VOL: ("ecc_sbe_errors", 11, 0.3, 6), dcgm.NVLINK_ERRORS[0]: ("nvlink_errors", 12, 0.1, 3),
    dcgm.PCIE_REPLAY: ("pcie_replays", 13, 0.15, 4),
}


def temperatures(gpu, util, power):
    """(GPU °C, memory °C, SM clock MHz): warmer with power, a degraded GPU 14 °C hotter (a failing fan)."""
    gpu_c = 27 + 48 * power / gpu.tdp_w + simulator.seed(gpu.uuid) % 5 + (14 if gpu.state == "degraded" else 0)
    clock = 345 + (1980 - 345) * min(1.0, util / 20)  # boost clock as soon as it computes
    return gpu_c, gpu_c + 6, clock


def hour_errors(gpu, hour, series):
    """Errors a degraded GPU's ``series`` counts in the hour that starts at ``hour`` (unix seconds); 0 elsewhere."""
    if gpu.state != "degraded":
        return 0
    _, channel, chance, most = ERROR_COUNTERS[series]
    g, h = simulator.seed(gpu.uuid), int(hour // simulator.HOUR)
    return 1 + int(simulator.unit(g, h, channel + 10) * most) if simulator.unit(g, h, channel) < chance else 0


def error_counter(gpu, t, series):
    """The counter at ``t``: errors since the driver loaded, an hour's errors counted from its start."""
    if gpu.state != "degraded":
        return 0
    hour = int(t // simulator.HOUR * simulator.HOUR)
    first = int(simulator.driver_loaded(gpu.node, t))
    return sum(hour_errors(gpu, h, series) for h in range(first, hour + 1, simulator.HOUR))


def remapped_rows(gpu):
    return 2 + simulator.seed(gpu.uuid) % 3 if gpu.state == "degraded" else 0


def has_memory_sensor(gpu):
    return gpu.model_name not in NO_MEMORY_SENSOR


def row_remap(gpu):
    """The row-remap gauges of ``gpu``: (failure, pending), each 0 or 1."""
    where = (gpu.node.hostname, gpu.slot)
    return int(where in ROW_REMAP_FAILED), int(where in ROW_REMAP_PENDING)


def health_sample(gpu, t, util, power):
    gpu_c, memory_c, clock = temperatures(gpu, util, power)
    failed, pending = row_remap(gpu)
    return {dcgm.GPU_TEMP: round(gpu_c), dcgm.SM_CLOCK: round(clock),
            dcgm.MEMORY_TEMP: round(memory_c) if has_memory_sensor(gpu) else NOT_SUPPORTED,
            **{series: error_counter(gpu, t, series) for series in ERROR_COUNTERS},
            dcgm.ECC_DBE_VOL: 0, dcgm.CORRECTABLE_REMAPPED_ROWS: remapped_rows(gpu),
            dcgm.UNCORRECTABLE_REMAPPED_ROWS: 0, dcgm.ROW_REMAP_FAILURE: failed, dcgm.ROW_REMAP_PENDING: pending}


def health_hour(gpu, hour, util, power):
    """The health fields of a backfilled hour, from the same model as the live page's: ``util`` and ``power``
    at the hour's moments."""
    readings = [temperatures(gpu, u, p) for u, p in zip(util, power, strict=True)]
    errors = {field: hour_errors(gpu, hour, series) for series, (field, *_) in ERROR_COUNTERS.items()}
    failed, pending = row_remap(gpu)
    return {"gpu_temp_max_c": max(r[0] for r in readings),
            "memory_temp_max_c": max(r[1] for r in readings) if has_memory_sensor(gpu) else None,
            "sm_clock_mean_mhz": sum(r[2] for r in readings) / len(readings), "ecc_dbe_errors": 0,
            "remapped_rows": remapped_rows(gpu), **errors, "row_remap_failure_last": failed,
            "row_remap_failure_max": failed, "row_remap_pending_last": pending, "row_remap_pending_max": pending}
