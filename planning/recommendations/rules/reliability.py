"""Reliability-bound: what infrastructure interruptions cost a partition (``inventory.goodput``'s figures)."""


from django.conf import settings

from ..evidence import figure, pct, ruled_out
from .common import money
from .data import SEV, THRESHOLDS, Finding, K


def lost_share_limit(t=THRESHOLDS):
    return settings.RELIABILITY_LOST_SHARE if t.reliability_lost_share is None else t.reliability_lost_share


def lost_share(figures):
    """Lost work (GPU-hours since the last checkpoint, inside the range) / allocated GPU-hours; None without an
    allocation. The goodput ratio of the same figures is 1 − this (``attribution.goodput_ratio``; both from the
    unrounded sums, the ratio clamped to [0, 1] and rounded to 4 digits). The restart wait is not in it: it lies
    outside the allocation (``restart_differential``)."""
    allocated = figures["allocated_gpu_hours"]
    return figures["lost_run_gpu_hours"] / allocated if allocated else None


def restart_differential(g, share):
    """The restart wait, shown apart: GPUs idle while the team waited for its next job, capacity not work redone."""
    wait = figure("Restart wait (GPUs × the wait until the team's next job)", g["lost_wait_gpu_hours"], "GPU-h",
                  f"at most {settings.GOODPUT_RESTART_WAIT_CAP_HOURS:g} h per interruption; not in the lost share")
    with_wait = figure("Lost work and restart wait together, share of the allocated GPU-hours",
                       pct((g["lost_run_gpu_hours"] + g["lost_wait_gpu_hours"]) / g["allocated_gpu_hours"]), "%",
                       f"against {pct(share):.1f} % of lost work alone")
    return ruled_out("restart_wait", "Not counted as lost work: after an interruption the team's GPUs sat idle until "
                                     "its next job started, outside the allocation. Capacity idle, not work redone: "
                                     "spare nodes shorten it, more checkpoints do not.", wait, with_wait)


def reliability_bound(r, t=THRESHOLDS):
    """A finding when infrastructure interruptions cost the partition more than the limit's share of its
    allocated GPU-hours."""
    g, limit = r.figures, lost_share_limit(t)
    share = lost_share(g)
    if share is None or not g["interruptions"] or share <= limit:
        return None
    name = r.partition or "(none)"
    offenders = [n for n in r.nodes if n["interruptions"] >= t.repeat_offender_interruptions]
    worst = ", ".join(f"{n['name']} ({n['interruptions']}, {n['lost_run_gpu_hours']:,.0f} GPU-h of work)"
                      for n in r.nodes[:5])
    reasons = ", ".join(f"{words} ×{count}" for words, count in r.reasons.items())
    models = ", ".join(f"{m['name']} ({m['interruptions']}, {m['lost_run_gpu_hours']:,.0f} GPU-h of work)"
                       for m in r.models)
    intervals = sorted(set(r.checkpoint_minutes))
    checkpoint = f"every {'/'.join(str(m) for m in intervals)} min" if intervals else "unknown"
    actions = ["burn in nodes (and nodes back from repair) before they take jobs"]
    if offenders:
        actions.append(f"replace or repair the repeat offenders {', '.join(n['name'] for n in offenders)}")
    actions.append("keep spare nodes in the partition so that a failed node's job restarts at once")
    actions.append(f"shorten the checkpoint interval of its long runs (now assumed {checkpoint})")
    return Finding(
        kind=K.RELIABILITY, key=f"{K.RELIABILITY}:partition={r.partition}",
        severity=SEV.HIGH if share >= 2 * limit else SEV.MEDIUM,
        title=f"Infrastructure failures cost partition {name} {pct(share):.1f} % of its GPU-hours",
        summary=(f"In the last {t.window_days} days {g['interruptions']} job"
                 f"{'s were' if g['interruptions'] != 1 else ' was'} interrupted by the infrastructure in partition "
                 f"{name} ({reasons}): an estimated {g['lost_run_gpu_hours']:,.1f} GPU-hours of work lost (since "
                 f"the last checkpoint, {checkpoint}), {pct(share):.1f} % of its {g['allocated_gpu_hours']:,.0f} "
                 f"allocated GPU-hours (goodput ratio {pct(g['goodput_ratio']):.1f} %). The teams then waited "
                 f"{g['lost_wait_gpu_hours']:,.1f} GPU-hours to restart, shown apart; the two cost "
                 f"{money(g['lost_cost'])} at {r.cost_basis}. "
                 f"Worst nodes: {worst or 'none on record'}. GPU models: {models or 'unknown'}."),
        action="; ".join(actions).capitalize() + ".",
        figures=[
            figure("Infrastructure interruptions", g["interruptions"], ""),
            figure("Lost work (since the last checkpoint, estimate)", g["lost_run_gpu_hours"], "GPU-h"),
            figure("Allocated GPU-hours", g["allocated_gpu_hours"], "GPU-h"),
            figure("Lost share of the allocated GPU-hours", pct(share), "%", f"> {pct(limit):g} %"),
            figure("Goodput ratio", pct(g["goodput_ratio"]), "%", "100 % − the lost share (the goodput page's)"),
            figure("Restart wait (not in the lost share)", g["lost_wait_gpu_hours"], "GPU-h"),
            figure("Cost of the lost work and the restart wait", g["lost_cost"], settings.COST_CURRENCY,
                   r.cost_basis),
            {"label": "Worst nodes", "value": None, "unit": "", "rule": "", "rows": [
                {"hostname": n["name"], "interruptions": n["interruptions"],
                 "lost_work_gpu_hours": n["lost_run_gpu_hours"], "restart_wait_gpu_hours": n["lost_wait_gpu_hours"],
                 "lost_cost": n["lost_cost"], "repeat_offender": n in offenders} for n in r.nodes]},
            {"label": "Reasons", "value": None, "unit": "", "rule": "", "rows": [
                {"reason": words, "interruptions": count} for words, count in r.reasons.items()]},
            {"label": "GPU models", "value": None, "unit": "", "rule": "", "rows": [
                {"gpu_model": m["name"], "interruptions": m["interruptions"],
                 "lost_work_gpu_hours": m["lost_run_gpu_hours"],
                 "interruptions_per_1000_gpu_days": m["interruptions_per_1000_gpu_days"]} for m in r.models]},
        ],
        chart={"type": "hbar", "title": f"Lost work per node, partition {name}", "data": {
            "labels": [n["name"] for n in r.nodes], "x_title": "GPU-hours (estimate)",
            "series": [{"name": "lost work", "values": [n["lost_run_gpu_hours"] for n in r.nodes]},
                       {"name": "restart wait", "values": [n["lost_wait_gpu_hours"] for n in r.nodes]}]}},
        partition=r.partition, node_count=len(offenders),
        measured={"lost_gpu_hours": g["lost_gpu_hours"], "lost_run_gpu_hours": g["lost_run_gpu_hours"],
                  "lost_wait_gpu_hours": g["lost_wait_gpu_hours"], "lost_share": round(share, 4),
                  "goodput_ratio": g["goodput_ratio"], "allocated_gpu_hours": g["allocated_gpu_hours"],
                  "lost_cost": g["lost_cost"], "interruptions": g["interruptions"]},
        ruled_out=[restart_differential(g, share)],
    )
