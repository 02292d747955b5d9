"""Scheduling-bound: long queue waits while GPU-hours go unallocated: the queue policy, not the hardware."""



from ..differential import capacity_ruled_out
from ..evidence import figure, pct
from .common import long_waits, wait_figures
from .data import SEV, THRESHOLDS, Finding, K


def scheduling_bound(p, t=THRESHOLDS):
    unallocated = None if p.allocated_share is None else max(0.0, 1 - p.allocated_share)
    if (unallocated is None or unallocated < t.unallocated_share or not long_waits(p, t)
            or (p.util_mean or 0) >= t.util_high):
        return None
    idle_gpus = unallocated * p.gpus
    return Finding(
        kind=K.SCHEDULING, key=f"{K.SCHEDULING}:partition={p.partition}",
        severity=SEV.HIGH if unallocated >= 2 * t.unallocated_share else SEV.MEDIUM,
        title=f"Partition {p.partition or '(none)'} is scheduling-bound",
        summary=(f"Jobs waited {p.wait_p50_hours:.1f} h (p50), {p.wait_p95_hours:.1f} h (p95) to start while "
                 f"{pct(unallocated):.0f} % of the GPU-hours observed (about {idle_gpus:.0f} of {p.gpus} GPUs) "
                 "ran no job: the queue holds work back, not a lack of GPUs."),
        action=("Fix the queue policy, not the hardware: look at partition and account limits (GRES, QOS "
                "MaxTRES), reservations and drained nodes, node sharing for jobs smaller than a node, and "
                "backfill settings so that waiting jobs fit the idle GPUs."),
        figures=[
            figure("GPU-hours not allocated to any job", pct(unallocated), "%", f"≥ {pct(t.unallocated_share):.0f} %"),
            *wait_figures(p, t),
            figure("Mean GPU utilization", p.util_mean, "%", f"< {t.util_high:.0f} %"),
            figure("GPU-hours observed", p.gpu_hours, "GPU-h"),
            figure("GPU-hours allocated (Slurm)", p.allocated_gpu_hours, "GPU-h"),
        ],
        chart={"type": "hbar", "title": "GPU-hours in the window", "data": {
            "labels": ["observed (telemetry)", "allocated to jobs (Slurm)", "not allocated"], "x_title": "GPU-hours",
            "series": [{"name": "GPU-hours", "values": [round(p.gpu_hours, 1), round(p.allocated_gpu_hours, 1),
                                                         round(max(0.0, p.gpu_hours - p.allocated_gpu_hours), 1)]}],
        }},
        partition=p.partition, site_id=p.site_id, ruled_out=[capacity_ruled_out(p, t)],
    )
