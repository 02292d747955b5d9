"""Memory-bound: full frame buffers with evidence of memory pressure."""



from ..evidence import figure, pct
from .common import util_chart
from .data import SEV, THRESHOLDS, Finding, K


def memory_bound(p, t=THRESHOLDS):
    if p.memory_share is None or p.memory_share < t.memory_share:
        return None
    failed_share = p.failed_jobs / p.ended_jobs if p.ended_jobs else 0.0
    if not (p.oom_jobs or (p.ended_jobs >= t.min_ended_jobs and failed_share >= t.failed_share)):
        return None
    return Finding(
        kind=K.MEMORY, key=f"{K.MEMORY}:partition={p.partition}",
        severity=SEV.HIGH if p.oom_jobs else SEV.MEDIUM,
        title=f"Partition {p.partition or '(none)'} is memory-bound",
        summary=(f"Jobs used {pct(p.memory_share):.0f} % of their GPUs' frame buffer while they ran, and "
                 f"{p.failed_jobs} of {p.ended_jobs} jobs that ended failed ({p.oom_jobs} out of memory): "
                 "models no longer fit."),
        action=("Move these workloads to larger-memory GPUs (e.g. 141 GB H200 or 192 GB B200 in place of 80 GB "
                "parts), or budget for activation checkpointing and more sharding, which costs throughput."),
        figures=[
            figure("Frame buffer used while jobs ran", pct(p.memory_share), "%", f"≥ {pct(t.memory_share):.0f} %"),
            figure("Out-of-memory jobs", p.oom_jobs, "", "≥ 1, or failed share"),
            figure("Failed jobs", pct(failed_share), "%",
                   f"≥ {pct(t.failed_share):.0f} % of ≥ {t.min_ended_jobs} ended jobs"),
            figure("Jobs ended", p.ended_jobs),
        ],
        chart=util_chart(p, f"Frame buffer use of partition {p.partition}", ("memory", "util")),
        partition=p.partition, site_id=p.site_id,
    )
