"""Storage-bound: GPUs held by jobs but starved of data (bursty utilization, or DCGM's engine activity)."""



from ..differential import network_ruled_out
from ..evidence import figure, pct, ruled_out
from .common import util_chart
from .data import SEV, THRESHOLDS, Finding, K


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
        ruled_out=[ruled_out("scheduling_bound", f"Ruled out: jobs held {pct(p.allocated_share):.0f} % of the "
                                                 "GPU-hours: the GPUs are allocated, they wait on their input.",
                             figure("GPU-hours allocated to jobs", pct(p.allocated_share), "%")),
                   network_ruled_out(p)],
    )
