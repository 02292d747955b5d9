"""Planning's side of goodput (issue 20, ``inventory.goodput``): the checkpoint interval of the teams' planned
workloads, for the estimate of what an interruption lost; the fleet's measured interruption rate per GPU model, for
sizing's goodput allowance."""

from django.conf import settings

from inventory.goodput import queries

from .plans.models import CapacityPlan, PlanWorkload
from .sizing import sizing

DEFAULT_CHECKPOINT_HOURS = sizing.INPUTS["checkpoint_interval_hours"].default


def checkpoint_minutes(accounts):
    """``{account: minutes}``: the checkpoint interval of the approved plans' workloads run under ``accounts``
    (registered with ``inventory.goodput.hooks``). A workload that does not give one has sizing's default; where
    an account has several workloads, the one starting last wins (the run most likely under way)."""
    found = {}
    workloads = (PlanWorkload.objects.filter(plan__status=CapacityPlan.Status.APPROVED, slurm_account__in=accounts)
                 .order_by("start", "pk").values_list("slurm_account", "inputs"))
    for account, inputs in workloads:
        hours = inputs.get("checkpoint_interval_hours") if isinstance(inputs, dict) else None
        found[account] = max(1, round(60 * (hours or DEFAULT_CHECKPOINT_HOURS)))
    return found


def measured_rates(now=None):
    """``{GPU model name: sizing.MeasuredRate}`` for the models whose jobs held at least
    ``SIZING_MEASURED_MIN_GPU_HOURS`` allocated GPU-hours over ``SIZING_MEASURED_RANGE``: their infrastructure
    interruptions per allocated GPU-hour, as ``inventory.goodput`` counts them (on the fault's node's model). A model
    with less history keeps the published rate."""
    return {g["name"]: sizing.MeasuredRate(g["name"], g["interruptions"], g["allocated_gpu_hours"])
            for g in queries.goodput_by("gpu_model", settings.SIZING_MEASURED_RANGE, now=now)
            if g["key"] is not None and g["allocated_gpu_hours"] >= settings.SIZING_MEASURED_MIN_GPU_HOURS}
