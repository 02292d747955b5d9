"""Memory-bound: full frame buffers with evidence of memory pressure (jobs that ran out of memory).

A full frame buffer alone is no pressure: inference servers (vLLM, TGI) and JAX reserve ~90 % of the GPU's memory
at start whatever their model needs. The only pressure the data records is Slurm's OUT_OF_MEMORY end; a generic
FAILED end (a code error, an NCCL timeout, a CUDA out-of-memory error too: Slurm does not say which) is not."""

from ..evidence import figure, pct, ruled_out
from .common import util_chart
from .data import SEV, THRESHOLDS, Finding, K


def oom_share(p):
    return p.oom_jobs / p.ended_jobs if p.ended_jobs else 0.0


def preallocation_differential(p, t):
    """Why the full frame buffer is not a server's preallocation: jobs ran out of memory."""
    users = f" of {p.oom_users} user{'s' if p.oom_users != 1 else ''}" if p.oom_users else ""
    return ruled_out(
        "preallocation",
        f"Ruled out: {p.oom_jobs} jobs{users} ended out of memory (OUT_OF_MEMORY) in the window. A server that "
        "reserves the frame buffer at start (vLLM, TGI) fills it without any job running out of memory.",
        figure("Out-of-memory jobs", p.oom_jobs, "", f"≥ {t.memory_oom_jobs}"),
        figure("Users whose jobs ran out of memory", p.oom_users),
        figure("Out-of-memory share of the jobs ended", pct(oom_share(p)), "%",
               f"≥ {pct(t.memory_oom_share):.0f} % for high severity"),
    )


def failed_differential(p):
    """Failed jobs are shown for what they are: not counted as memory evidence."""
    return ruled_out(
        "failed_jobs",
        f"Not counted: {p.failed_jobs - p.oom_jobs} jobs ended FAILED; a failure says nothing of memory (code errors "
        "and network timeouts end the same way), so only the out-of-memory ends weigh.",
        figure("Jobs ended FAILED (not out of memory)", max(0, p.failed_jobs - p.oom_jobs)),
        figure("Jobs ended", p.ended_jobs),
    )


def memory_bound(p, t=THRESHOLDS):
    if p.memory_share is None or p.memory_share < t.memory_share or p.oom_jobs < t.memory_oom_jobs:
        return None  # full without running out of memory: preallocated, not pressed
    share = oom_share(p)
    return Finding(
        kind=K.MEMORY, key=f"{K.MEMORY}:partition={p.partition}",
        severity=SEV.HIGH if share >= t.memory_oom_share else SEV.MEDIUM,
        title=f"Partition {p.partition or '(none)'} is memory-bound",
        summary=(f"Jobs used {pct(p.memory_share):.0f} % of their GPUs' frame buffer while they ran, and "
                 f"{p.oom_jobs} of the {p.ended_jobs} jobs that ended ran out of memory ({pct(share):.0f} %): "
                 "models no longer fit."),
        action=("Move these workloads to larger-memory GPUs (e.g. 141 GB H200 or 192 GB B200 in place of 80 GB "
                "parts), or budget for activation checkpointing and more sharding, which costs throughput. "
                "First read a few of the out-of-memory jobs' logs: Slurm also ends a job OUT_OF_MEMORY when it "
                "passes its host-memory limit (--mem), which a larger request fixes, not a larger GPU."),
        figures=[
            figure("Frame buffer used while jobs ran", pct(p.memory_share), "%", f"≥ {pct(t.memory_share):.0f} %"),
            figure("Out-of-memory jobs", p.oom_jobs, "", f"≥ {t.memory_oom_jobs}"),
            figure("Out-of-memory share of the jobs ended", pct(share), "%",
                   f"≥ {pct(t.memory_oom_share):.0f} % for high severity"),
            figure("Jobs ended", p.ended_jobs),
        ],
        chart=util_chart(p, f"Frame buffer use of partition {p.partition}", ("memory", "util")),
        partition=p.partition, site_id=p.site_id,
        ruled_out=[preallocation_differential(p, t), failed_differential(p)],
    )
