"""Planning's side of goodput (issue 20, ``inventory.goodput``): the checkpoint interval of the teams' planned
workloads, for the estimate of what an interruption lost."""

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
