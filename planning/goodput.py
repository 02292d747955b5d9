"""Planning's side of goodput (issue 20, ``inventory.goodput``): the checkpoint interval of the teams' planned
workloads, for the estimate of what an interruption lost; the fleet's measured interruption rate per GPU model, for
sizing's goodput allowance; a planned workload's time to result.

*Time to result* of a workload with a Slurm account: from the first submit of the account's jobs submitted since the
workload's start month to the end of the last of them (until now while one still runs), against the workload's
sized wall-clock time. The account's other work in that time counts too: an account that runs several workloads at
once shows their combined span.
"""

from dataclasses import dataclass
from datetime import datetime, time

from django.conf import settings
from django.db.models import Count, Max, Min, Q
from django.utils import timezone

from inventory.goodput import queries
from inventory.telemetry.models import SlurmJob

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


@dataclass
class TimeToResult:
    """What an account's jobs since a workload's start show: ``jobs``, first submit, last end (None while one runs:
    ``running`` of them), and the sized ``estimate_days`` (None: cannot be sized)."""

    account: str
    jobs: int
    first_submit: datetime | None
    last_end: datetime | None
    running: int
    now: datetime
    estimate_days: float | None = None

    @property
    def days(self):
        """First submit to the last end (to now while a job runs), in days; None without jobs."""
        if not self.jobs:
            return None
        end = self.now if self.running or self.last_end is None else self.last_end
        return (end - self.first_submit).total_seconds() / 86400

    @property
    def ratio(self):
        return self.days / self.estimate_days if self.days is not None and self.estimate_days else None

    @property
    def text(self):
        if not self.jobs:
            return f"Time to result: no jobs under {self.account} since the workload's start."
        so_far = f" so far ({self.running} still running)" if self.running else ""
        against = (f" against the plan's {self.estimate_days:,.1f} days ({self.ratio:.2f}×)"
                   if self.ratio is not None else " (the plan has no estimate: it cannot be sized)")
        return (f"Time to result: {self.days:,.1f} days{so_far}, first submit to last end of {self.jobs} job"
                f"{'s' if self.jobs != 1 else ''} under {self.account}{against}.")

    def as_dict(self):
        return {"account": self.account, "jobs": self.jobs, "running": self.running,
                "first_submit": self.first_submit, "last_end": None if self.running else self.last_end,
                "days": None if self.days is None else round(self.days, 3), "estimate_days": (
                    None if self.estimate_days is None else round(self.estimate_days, 3)),
                "ratio": None if self.ratio is None else round(self.ratio, 4)}


def time_to_result(workloads, estimates=None, now=None):
    """``{workload pk: TimeToResult}`` for the ``workloads`` with a Slurm account (``estimates``: pk → sized
    wall-clock days); one query however many there are."""
    now = now or timezone.now()
    named = [w for w in workloads if w.slurm_account]
    if not named:
        return {}
    aggregates = {}
    for w in named:
        since = timezone.make_aware(datetime.combine(w.start.replace(day=1), time.min))
        mine = Q(account=w.slurm_account, submit_time__gte=since, submit_time__lte=now)
        aggregates |= {f"jobs_{w.pk}": Count("pk", filter=mine), f"first_{w.pk}": Min("submit_time", filter=mine),
                       f"last_{w.pk}": Max("end_time", filter=mine),
                       f"running_{w.pk}": Count("pk", filter=mine & Q(end_time__isnull=True))}
    found = SlurmJob.objects.filter(account__in={w.slurm_account for w in named}).aggregate(**aggregates)
    return {w.pk: TimeToResult(w.slurm_account, found[f"jobs_{w.pk}"], found[f"first_{w.pk}"],
                               found[f"last_{w.pk}"], found[f"running_{w.pk}"], now, (estimates or {}).get(w.pk))
            for w in named}
