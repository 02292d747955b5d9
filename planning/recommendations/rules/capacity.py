"""Capacity-bound: busy GPUs and long queue waits; out-of-service GPUs are returned before anything is bought."""

import math

from django.conf import settings

from ..differential import capacity_differential, scheduling_differential
from ..evidence import figure
from .common import long_waits, util_chart, wait_figures
from .data import SEV, THRESHOLDS, Finding, K


def capacity_bound(p, t=THRESHOLDS):
    if p.util_mean is None or p.util_mean < t.util_high or not long_waits(p, t):
        return None
    # The queued work fills added capacity to the target too, as a plan's analysis sizes it: capacity for
    # (busy GPUs + GPUs waiting) at the target utilization, less the GPUs in service. GPUs of the partition out of
    # service (degraded, in repair) come back before anything bought arrives: they count first.
    extra_gpus = max(0.0, (p.gpus * p.util_mean / 100 + p.gpus_waiting) / (t.target_util / 100) - p.gpus)
    returned = min(p.gpus_out_of_service, math.ceil(extra_gpus))
    to_buy = max(0.0, extra_gpus - returned)
    nodes = math.ceil(to_buy / max(p.gpu_slots, 1)) if to_buy else 0
    severity = SEV.HIGH if (p.wait_p95_hours or 0) >= 2 * t.wait_p95_hours or p.util_mean >= 90 else SEV.MEDIUM
    model = p.node_model_name or "nodes"
    price = f" at {p.node_price:,.0f} {settings.COST_CURRENCY} each" if p.node_price is not None else ""
    where = f"partition {p.partition or '(none)'}"
    first = (f"Return the {p.gpus_out_of_service} GPUs of {where} out of service (degraded or in repair) to service "
             "first" if p.gpus_out_of_service else "")
    if nodes:
        buy = (f"add {nodes} × {model}{price} to {where}, or rent burst capacity for about "
               f"{math.ceil(to_buy)} GPUs until they arrive.")
        action = f"{first}; then {buy}" if first else buy[0].upper() + buy[1:]
    else:
        action = f"{first}: they cover the {math.ceil(extra_gpus)} GPUs needed, so buy nothing yet."
    return Finding(
        kind=K.CAPACITY, key=f"{K.CAPACITY}:partition={p.partition}", severity=severity,
        title=f"Partition {p.partition or '(none)'} is capacity-bound",
        summary=(f"GPUs were {p.util_mean:.0f} % busy and jobs waited {p.wait_p50_hours:.1f} h (p50), "
                 f"{p.wait_p95_hours:.1f} h (p95) to start: demand exceeds the {p.gpus} GPUs in service. "
                 f"On average {p.gpus_waiting:.1f} GPUs' worth of jobs sat in the queue."),
        action=action,
        figures=[
            figure("Mean GPU utilization", p.util_mean, "%", f"≥ {t.util_high:.0f} %"),
            *wait_figures(p, t),
            figure("GPUs in service", p.gpus),
            figure("GPUs out of service (degraded or in repair)", p.gpus_out_of_service, "GPUs", "returned first"),
            figure("GPUs' worth of jobs waiting (mean)", p.gpus_waiting, "GPUs"),
            figure("Suggested nodes", nodes, model,
                   f"to bring utilization to {t.target_util:.0f} % and clear the queue"
                   + (f", after the {returned} GPUs returned to service" if returned else "")),
        ],
        chart=util_chart(p, f"Utilization of partition {p.partition}"),
        partition=p.partition, site_id=p.site_id, node_model_id=p.node_model_id, node_count=nodes,
        node_price=p.node_price,
        measured={"gpus": p.gpus, "util_mean": round(p.util_mean, 2), "gpus_waiting": round(p.gpus_waiting, 2),
                  "target_util": t.target_util, "gpu_slots": p.gpu_slots, "extra_gpus": round(extra_gpus, 2),
                  "gpus_out_of_service": p.gpus_out_of_service, "returned_gpus": returned},
        ruled_out=[capacity_differential(p, extra_gpus, returned), scheduling_differential(p, t)],
    )
