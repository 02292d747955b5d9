"""Capacity-bound: busy GPUs and long queue waits; out-of-service GPUs are returned, and idle nodes of the same GPU
model in other partitions moved, before anything is bought."""

import math

from django.conf import settings

from ..differential import capacity_differential, rebalance_differential, scheduling_differential
from ..evidence import figure
from .common import long_waits, util_chart, wait_figures
from .data import SEV, THRESHOLDS, Finding, K


def slots_of(q):
    return q.gpus // q.nodes if q.nodes else 0


def spare_nodes(q, t=THRESHOLDS):
    """Whole nodes a partition (``Peer``) can give: those beyond what its busiest hours (``util_peak``) and its own
    queue need at the target utilization, so that it stays at or below the target after the move."""
    keep = math.ceil((q.gpus_total * q.util_peak / 100 + q.gpus_waiting) / (t.target_util / 100))
    slots = slots_of(q)
    return min(q.nodes, max(0, q.gpus_total - keep) // slots) if slots else 0


def rebalance(p, need, t=THRESHOLDS):
    """The other partitions with GPUs of ``p``'s model, most idle first, each as ``(peer, nodes taken, verdict)``:
    whole nodes are taken from those below ``rebalance_util_max`` without long queue waits of their own, up to
    their spare (``spare_nodes``), until ``need`` GPUs are covered."""
    same = [q for q in p.peers if p.gpu_model_id is not None and q.gpu_model_id == p.gpu_model_id]
    found = []
    for q in sorted(same, key=lambda q: (q.util_mean, q.partition)):
        spare, taken = spare_nodes(q, t), 0
        if q.util_mean >= t.rebalance_util_max:
            verdict = f"in use: ≥ {t.rebalance_util_max:.0f} %"
        elif long_waits(q, t):
            verdict = "its own jobs wait long: nothing to give"
        elif not spare:
            verdict = (f"no whole node beyond its busiest hours ({q.util_peak:.0f} %) at the {t.target_util:.0f} % "
                       "target")
        elif need <= 0:
            verdict = f"{spare} nodes spare, not needed"
        else:
            taken = min(spare, math.ceil(need / slots_of(q)))
            need -= taken * slots_of(q)
            verdict = f"moved first: {taken} of its {q.nodes} nodes ({taken * slots_of(q)} GPUs)"
        found.append((q, taken, verdict))
    return found


def move_words(moves, model):
    return ", ".join(f"{n} node{'s' if n > 1 else ''} of partition {q.partition or '(none)'} ({n * slots_of(q)} GPUs, "
                     f"same GPU model {model}, idle at {q.util_mean:.0f} %)" for q, n, _ in moves)


def capacity_bound(p, t=THRESHOLDS):
    if p.util_mean is None or p.util_mean < t.util_high or not long_waits(p, t):
        return None
    # The queued work fills added capacity to the target too, as a plan's analysis sizes it: capacity for
    # (busy GPUs + GPUs waiting) at the target utilization, less the GPUs in service. GPUs of the partition out of
    # service (degraded, in repair) come back before anything bought arrives: they count first; then idle nodes of
    # the same GPU model in other partitions (a Slurm change, not a purchase); then the GPUs delivered or in
    # burn-in, which enter service before anything ordered now would.
    extra_gpus = max(0.0, (p.gpus * p.util_mean / 100 + p.gpus_waiting) / (t.target_util / 100) - p.gpus)
    returned = min(p.gpus_out_of_service, math.ceil(extra_gpus))
    checked = rebalance(p, extra_gpus - returned, t)
    moves = [(q, n, verdict) for q, n, verdict in checked if n]
    moved = sum(n * slots_of(q) for q, n, _ in moves)
    arriving = min(p.gpus_arriving, max(0, math.ceil(extra_gpus - returned - moved)))
    to_buy = max(0.0, extra_gpus - returned - moved - arriving)
    nodes = math.ceil(to_buy / max(p.gpu_slots, 1)) if to_buy else 0
    severity = SEV.HIGH if (p.wait_p95_hours or 0) >= 2 * t.wait_p95_hours or p.util_mean >= 90 else SEV.MEDIUM
    model = p.node_model_name or "nodes"
    price = f" at {p.node_price:,.0f} {settings.COST_CURRENCY} each" if p.node_price is not None else ""
    where = f"partition {p.partition or '(none)'}"
    steps = []
    if p.gpus_out_of_service:
        steps.append(f"return the {p.gpus_out_of_service} GPUs of {where} out of service (degraded or in repair) to "
                     "service")
    if moves:
        steps.append(f"move {move_words(moves, p.gpu_model_name)} to {where}")
    if arriving:
        steps.append(f"finish the burn-in of its {p.gpus_arriving} GPUs delivered or in burn-in")
    first = "; then ".join([f"{steps[0]} first", *steps[1:]]) if steps else ""
    if nodes:
        buy = (f"add {nodes} × {model}{price} to {where}, or rent burst capacity for about "
               f"{math.ceil(to_buy)} GPUs until they arrive.")
        action = f"{first}; then {buy}" if first else buy
    elif first:
        action = f"{first}: they cover the {math.ceil(extra_gpus)} GPUs needed, so buy nothing yet."
    else:  # the load just fits the target: the waits are the queue's, not a lack of GPUs
        action = "The GPUs in service cover the load at the target utilization: buy nothing; look at the queue."
    after = [f"the {returned} GPUs returned to service" if returned else "",
             f"the {moved} GPUs moved from idle partitions of the same GPU model" if moved else "",
             f"the {arriving} GPUs delivered or in burn-in" if arriving else ""]
    return Finding(
        kind=K.CAPACITY, key=f"{K.CAPACITY}:partition={p.partition}", severity=severity,
        title=f"Partition {p.partition or '(none)'} is capacity-bound",
        summary=(f"GPUs were {p.util_mean:.0f} % busy and jobs waited {p.wait_p50_hours:.1f} h (p50), "
                 f"{p.wait_p95_hours:.1f} h (p95) to start: demand exceeds the {p.gpus} GPUs in service. "
                 f"On average {p.gpus_waiting:.1f} GPUs' worth of jobs sat in the queue."),
        action=action[0].upper() + action[1:],
        figures=[
            figure("Mean GPU utilization", p.util_mean, "%", f"≥ {t.util_high:.0f} %"),
            *wait_figures(p, t),
            figure("GPUs in service", p.gpus),
            figure("GPUs out of service (degraded or in repair)", p.gpus_out_of_service, "GPUs", "returned first"),
            figure("GPUs moved from idle partitions of the same GPU model", moved, "GPUs",
                   f"below {t.rebalance_util_max:.0f} %, whole nodes beyond their busiest hours at "
                   f"{t.target_util:.0f} %; before buying"),
            figure("GPUs delivered or in burn-in", p.gpus_arriving, "GPUs", "enter service before a purchase"),
            figure("GPUs' worth of jobs waiting (mean)", p.gpus_waiting, "GPUs"),
            figure("Suggested nodes", nodes, model,
                   f"to bring utilization to {t.target_util:.0f} % and clear the queue"
                   + (f", after {' and '.join(a for a in after if a)}" if any(after) else "")),
        ],
        chart=util_chart(p, f"Utilization of partition {p.partition}"),
        partition=p.partition, site_id=p.site_id, node_model_id=p.node_model_id, node_count=nodes,
        node_price=p.node_price,
        measured={"gpus": p.gpus, "util_mean": round(p.util_mean, 2), "gpus_waiting": round(p.gpus_waiting, 2),
                  "target_util": t.target_util, "gpu_slots": p.gpu_slots, "extra_gpus": round(extra_gpus, 2),
                  "gpus_out_of_service": p.gpus_out_of_service, "returned_gpus": returned,
                  "gpu_model": p.gpu_model_name, "rebalance_gpus": moved,
                  "rebalance_from": {q.partition: n * slots_of(q) for q, n, _ in moves},
                  "rebalance_nodes": {q.partition: n for q, n, _ in moves}, "arriving_gpus": arriving},
        ruled_out=[capacity_differential(p, extra_gpus, returned), rebalance_differential(p, checked, moved, t),
                   scheduling_differential(p, t)],
    )
