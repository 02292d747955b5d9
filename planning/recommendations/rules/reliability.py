"""Reliability-bound: what infrastructure interruptions cost a partition (``inventory.goodput``'s figures)."""


from django.conf import settings

from ..evidence import figure, pct
from .common import money
from .data import SEV, THRESHOLDS, Finding, K


def lost_share_limit(t=THRESHOLDS):
    return settings.RELIABILITY_LOST_SHARE if t.reliability_lost_share is None else t.reliability_lost_share


def lost_share(figures):
    """Lost GPU-hours (work since the last checkpoint plus the restart wait) / allocated GPU-hours; None without
    an allocation."""
    allocated = figures["allocated_gpu_hours"]
    return figures["lost_gpu_hours"] / allocated if allocated else None


def reliability_bound(r, t=THRESHOLDS):
    """A finding when infrastructure interruptions cost the partition more than the limit's share of its
    allocated GPU-hours."""
    g, limit = r.figures, lost_share_limit(t)
    share = lost_share(g)
    if share is None or not g["interruptions"] or share <= limit:
        return None
    name = r.partition or "(none)"
    offenders = [n for n in r.nodes if n["interruptions"] >= t.repeat_offender_interruptions]
    worst = ", ".join(f"{n['name']} ({n['interruptions']}, {n['lost_gpu_hours']:,.0f} GPU-h)" for n in r.nodes[:5])
    reasons = ", ".join(f"{words} ×{count}" for words, count in r.reasons.items())
    models = ", ".join(f"{m['name']} ({m['interruptions']}, {m['lost_gpu_hours']:,.0f} GPU-h)" for m in r.models)
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
                 f"{name} ({reasons}): an estimated {g['lost_gpu_hours']:,.1f} GPU-hours lost (work since the last "
                 f"checkpoint, {checkpoint}, plus the wait to restart), {pct(share):.1f} % of its "
                 f"{g['allocated_gpu_hours']:,.0f} allocated GPU-hours, {money(g['lost_cost'])} at {r.cost_basis}. "
                 f"Worst nodes: {worst or 'none on record'}. GPU models: {models or 'unknown'}."),
        action="; ".join(actions).capitalize() + ".",
        figures=[
            figure("Infrastructure interruptions", g["interruptions"], ""),
            figure("Lost GPU-hours (estimate)", g["lost_gpu_hours"], "GPU-h"),
            figure("Allocated GPU-hours", g["allocated_gpu_hours"], "GPU-h"),
            figure("Lost share of the allocated GPU-hours", pct(share), "%", f"> {pct(limit):g} %"),
            figure("Cost of the lost GPU-hours", g["lost_cost"], settings.COST_CURRENCY, r.cost_basis),
            figure("Goodput ratio", g["goodput_ratio"], ""),
            {"label": "Worst nodes", "value": None, "unit": "", "rule": "", "rows": [
                {"hostname": n["name"], "interruptions": n["interruptions"], "lost_gpu_hours": n["lost_gpu_hours"],
                 "lost_cost": n["lost_cost"], "repeat_offender": n in offenders} for n in r.nodes]},
            {"label": "Reasons", "value": None, "unit": "", "rule": "", "rows": [
                {"reason": words, "interruptions": count} for words, count in r.reasons.items()]},
            {"label": "GPU models", "value": None, "unit": "", "rule": "", "rows": [
                {"gpu_model": m["name"], "interruptions": m["interruptions"], "lost_gpu_hours": m["lost_gpu_hours"],
                 "interruptions_per_1000_gpu_days": m["interruptions_per_1000_gpu_days"]} for m in r.models]},
        ],
        chart={"type": "hbar", "title": f"Lost GPU-hours per node, partition {name}", "data": {
            "labels": [n["name"] for n in r.nodes], "x_title": "GPU-hours lost (estimate)",
            "series": [{"name": "lost GPU-hours", "values": [n["lost_gpu_hours"] for n in r.nodes]}]}},
        partition=r.partition, node_count=len(offenders),
        measured={"lost_gpu_hours": g["lost_gpu_hours"], "allocated_gpu_hours": g["allocated_gpu_hours"],
                  "lost_cost": g["lost_cost"], "interruptions": g["interruptions"]},
    )
