"""Planning's side of goodput (issue 20, ``inventory.goodput``): the checkpoint interval of the teams' planned
workloads, for the estimate of what an interruption lost; the fleet's measured interruption rate per GPU model, for
sizing's goodput allowance; a planned workload's time to result.

*Time to result* of a workload with a Slurm account, a job name pattern or both: from the first submit of its jobs
(the account's, those whose name matches the pattern; with both, the account's that match) submitted since the
workload's start month to the end of the last of them (until now while one still runs), against the workload's
sized wall-clock time. A job requeued is one job (its runs share the job id). With an account alone, the account's
other work in that time counts too: an account that runs several workloads at once shows their combined span; a
name pattern tells them apart.
"""

import math
from dataclasses import dataclass
from datetime import datetime, time

from django.conf import settings
from django.db.models import Count, F, Lookup, Max, Min, Q, Value
from django.utils import timezone

from inventory.goodput import queries
from inventory.telemetry.models import SlurmJob
from inventory.telemetry.queries import RANGES

from .plans.models import JOB_NAME_MAX, CapacityPlan, PlanWorkload
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


# --- The goodput allowance a plan workload keeps from the sizing page -------------------------------------------


def added_goodput(result, measured=None, today=None):
    """What a workload added to a plan from a sizing ``result`` keeps of its default goodput (``goodput_basis``):
    the value, its basis in words (the fleet's ``measured`` rate, a ``sizing.MeasuredRate``, or the published
    default), the GPUs it was for and the day."""
    figure = result.figures["goodput"]
    if measured:
        basis = f"{measured.source}, {measured.gpu_model}, {RANGES[settings.SIZING_MEASURED_RANGE].label}"
    else:
        basis = f"published default: {figure.source}"
    return {"goodput": figure.value, "basis": basis, "measured": bool(measured), "gpus": result["gpus"],
            "sized_on": (today or timezone.localdate()).isoformat()}


def goodput_used(workload, sized):
    """The goodput a plan's ``workload`` is sized with (``sized``: its ``sizing.Sizing``; None: cannot be sized)
    and its basis in words; ``changed`` when it is no longer the one kept from the sizing page (an input was edited
    since), which the text then says."""
    if sized is None:
        return None
    figure, kept = sized.figures["goodput"], workload.goodput_basis or {}
    same = bool(kept) and math.isclose(figure.value, kept.get("goodput", 0), rel_tol=1e-9)
    if same:
        basis = kept["basis"]
    else:
        basis = "given" if figure.source == sizing.YOUR_INPUT else f"published default: {figure.source}"
    text = f"Goodput {figure.value:.3f}: {basis}"
    if same:
        text += f" (kept from the sizing page, {kept['sized_on']}, for {kept['gpus']:,} GPUs)"
    elif kept:
        text += (f"; changed since it was added from the sizing page with {kept['goodput']:.3f}, {kept['basis']} "
                 f"({kept['sized_on']})")
    return {"value": figure.value, "basis": basis, "changed": bool(kept) and not same, "added": kept or None,
            "text": text + "."}


# --- Job name patterns -------------------------------------------------------------------------------------------

WILDCARDS = {"*": "%", "?": "_"}
LIKE_ESCAPE = "\\"


def job_name_like(pattern):
    """A shell-style job name pattern (``*`` any text, ``?`` one character, everything else itself) as an SQL LIKE
    pattern escaped with a backslash: the pattern's own ``%``, ``_`` and backslashes match only themselves."""
    return "".join(WILDCARDS.get(c) or (LIKE_ESCAPE + c if c in "%_\\" else c) for c in pattern)


def job_name_glob(pattern):
    """The same pattern as an SQLite ``GLOB`` pattern, whose wildcards are the shell's: only ``[`` (a character
    class there) is written as a class holding it, to match itself."""
    return pattern.replace("[", "[[]")


def check_job_name(pattern, account=""):
    """(the pattern stripped, the message saying what is wrong with it or ""). Blank is refused (leave it out
    instead), so is one longer than the field, and one of wildcards alone without an account (every job)."""
    pattern = pattern.strip()
    if not pattern:
        return pattern, "A job name pattern cannot be blank: leave it empty, or give one such as llama-70b-*."
    if len(pattern) > JOB_NAME_MAX:
        return pattern, f"At most {JOB_NAME_MAX} characters (this has {len(pattern):,})."
    if not set(pattern) - set(WILDCARDS) and not account:
        return pattern, "This pattern matches every job: give a Slurm account too, or a narrower pattern."
    return pattern, ""


class MatchesJobName(Lookup):
    """``MatchesJobName(F(field), Value(shell-style pattern))``, as a condition (not registered on any field): the
    name matches the pattern case-sensitively, as Slurm names are compared. PostgreSQL: LIKE with a backslash as
    the escape character (``job_name_like``); SQLite (the demo), whose LIKE ignores ASCII case: GLOB
    (``job_name_glob``), so the demo counts the jobs production would."""

    lookup_name = "matches_job_name"

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} LIKE {rhs} ESCAPE '{LIKE_ESCAPE}'", [*lhs_params, *map(job_name_like, rhs_params)]

    def as_sqlite(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} GLOB {rhs}", [*lhs_params, *map(job_name_glob, rhs_params)]


def jobs_of(workload):
    """The ``Q`` of a workload's jobs: its account's, its name pattern's, both when it gives both."""
    mine = Q()
    if workload.slurm_account:
        mine &= Q(account=workload.slurm_account)
    if workload.slurm_job_name:
        mine &= Q(MatchesJobName(F("name"), Value(workload.slurm_job_name)))
    return mine


# --- Time to result ------------------------------------------------------------------------------------------


def jobs_since_start(workload, now):
    """The ``Q`` of the jobs its time to result counts: ``jobs_of`` submitted from its start month until ``now``."""
    since = timezone.make_aware(datetime.combine(workload.start.replace(day=1), time.min))
    return jobs_of(workload) & Q(submit_time__gte=since, submit_time__lte=now)


@dataclass
class TimeToResult:
    """What a workload's jobs (its account's, its job name pattern's) since its start show: ``jobs``, first submit,
    last end (None while one runs: ``running`` of them), and the sized ``estimate_days`` (None: cannot be sized)."""

    account: str
    job_name: str
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
    def whose(self):
        """Which jobs, in words: "under vision", "named llama-*", "under vision named llama-*"."""
        return " ".join([*([f"under {self.account}"] if self.account else []),
                         *([f"named {self.job_name}"] if self.job_name else [])])

    @property
    def text(self):
        if not self.jobs:
            return f"Time to result: no jobs {self.whose} since the workload's start."
        so_far = f" so far ({self.running} still running)" if self.running else ""
        against = (f" against the plan's {self.estimate_days:,.1f} days ({self.ratio:.2f}×)"
                   if self.ratio is not None else " (the plan has no estimate: it cannot be sized)")
        return (f"Time to result: {self.days:,.1f} days{so_far}, first submit to last end of {self.jobs} job"
                f"{'s' if self.jobs != 1 else ''} {self.whose}{against}.")

    def as_dict(self):
        return {"account": self.account, "job_name": self.job_name, "jobs": self.jobs, "running": self.running,
                "first_submit": self.first_submit, "last_end": None if self.running else self.last_end,
                "days": None if self.days is None else round(self.days, 3), "estimate_days": (
                    None if self.estimate_days is None else round(self.estimate_days, 3)),
                "ratio": None if self.ratio is None else round(self.ratio, 4)}


def time_to_result(workloads, estimates=None, now=None):
    """``{workload pk: TimeToResult}`` for the ``workloads`` with a Slurm account or a job name pattern
    (``estimates``: pk → sized wall-clock days); one query however many there are. Jobs count by job id: the runs
    of a requeued job are one job, from its first submit to its last end."""
    now = now or timezone.now()
    named = [w for w in workloads if w.slurm_account or w.slurm_job_name]
    if not named:
        return {}
    aggregates, any_of = {}, Q()
    for w in named:
        any_of |= jobs_of(w)
        mine = jobs_since_start(w, now)
        aggregates |= {f"jobs_{w.pk}": Count("job_id", filter=mine, distinct=True),
                       f"first_{w.pk}": Min("submit_time", filter=mine), f"last_{w.pk}": Max("end_time", filter=mine),
                       f"running_{w.pk}": Count("job_id", filter=mine & Q(end_time__isnull=True), distinct=True)}
    found = SlurmJob.objects.filter(any_of).aggregate(**aggregates)
    return {w.pk: TimeToResult(w.slurm_account, w.slurm_job_name, found[f"jobs_{w.pk}"], found[f"first_{w.pk}"],
                               found[f"last_{w.pk}"], found[f"running_{w.pk}"], now, (estimates or {}).get(w.pk))
            for w in named}
