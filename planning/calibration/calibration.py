"""Calibration from the fleet's own history: how many GPU-hours a team's planned workloads really took against what
sizing estimated, and that ratio as the team's sizing factor.

A planned workload with a Slurm account ran (the plan says) from its start month for the calendar months its
wall-clock time spans (``analysis.run_months``, as the plan's analysis spreads it): its *window*. Once the window is
over, the account's jobs that ran in it give the *realized* GPU-hours (allocated GPU-hours clipped to the window and
per node, ``inventory.telemetry.allocation_rollup``); the *estimate* is the sizing model's GPU-hours without any sizing
factor (a factor the plan gave would otherwise hide the very error it corrects). A team's ratio is Σ realized /
Σ estimated over its finished workloads with jobs.

Only approved plans count: their workloads are the runs the organisation decided on. Drafts and submitted plans are
often alternatives of the same run (counting each would count its jobs twice) and a rejected plan's workloads likely
never ran. Every workload that does not count says why, on the page and in the API: its window is not over yet, no
jobs ran under the account in its window (never a ratio of 0), or it cannot be sized.

Set-based: the workloads, the catalog and the jobs of every window in five queries however many there are.
"""

from dataclasses import dataclass, field, replace
from datetime import datetime, time

from django.core.exceptions import ValidationError
from django.utils import timezone

from inventory.telemetry import allocation_rollup

from ..plans.analysis import run_months
from ..plans.forecast import add_months
from ..plans.models import CapacityPlan, PlanWorkload
from ..sizing import sizing

FINISHED, RUNNING, NO_JOBS, UNSIZED = "finished", "running", "no_jobs", "unsized"
STATUS_LABELS = {FINISHED: "finished", RUNNING: "not over", NO_JOBS: "no jobs found", UNSIZED: "cannot be sized"}


def month_label(day):
    return f"{day:%Y-%m}"


def times(ratio):
    """A ratio as shown: ``1.31×``; a dash when there is none."""
    return "—" if ratio is None else f"{ratio:.2f}×"


@dataclass
class Run:
    """A planned workload of a team and what its window shows."""

    workload: PlanWorkload
    status: str
    start: object = None  # the window's first day
    end: object = None  # the day after the window (the first day of the month after its last)
    estimate: float | None = None  # the model's GPU-hours, no sizing factor
    realized: float | None = None  # GPU-hours of the account's jobs in the window (so far, while it runs)
    jobs: int = 0
    notes: list = field(default_factory=list)

    @property
    def team(self):
        return self.workload.slurm_account

    @property
    def counted(self):
        return self.status == FINISHED

    @property
    def status_label(self):
        return STATUS_LABELS[self.status]

    @property
    def ratio(self):
        return self.realized / self.estimate if self.counted and self.estimate else None

    @property
    def window(self):
        """``2025-01 – 2025-03``: the window's calendar months."""
        if self.start is None:
            return ""
        last = add_months(self.end, -1)
        return month_label(self.start) if last == self.start else f"{month_label(self.start)} – {month_label(last)}"


@dataclass
class Team:
    team: str
    runs: list

    @property
    def counted(self):
        return [run for run in self.runs if run.counted]

    @property
    def estimate(self):
        return sum(run.estimate for run in self.counted) if self.counted else None

    @property
    def realized(self):
        return sum(run.realized for run in self.counted) if self.counted else None

    @property
    def ratio(self):
        return self.realized / self.estimate if self.counted else None

    @property
    def factor(self):
        return sizing.TeamFactor(self.team, self.ratio, len(self.counted)) if self.counted else None

    @property
    def why_no_ratio(self):
        if self.counted:
            return ""
        return "No finished workload with jobs yet: " + "; ".join(
            f"{run.workload.name}: {STATUS_LABELS[run.status]}" for run in self.runs) + "."


@dataclass
class Calibration:
    teams: list  # Team, by name

    @property
    def factors(self):
        """Team → ``sizing.TeamFactor`` for the teams with a ratio: what sizing offers."""
        return {team.team: team.factor for team in self.teams if team.factor}

    def team(self, name):
        return next((team for team in self.teams if team.team == name), None)

    @property
    def runs(self):
        return {run.workload.pk: run for team in self.teams for run in team.runs}


def approved_workloads():
    """The workloads that calibrate: those of approved plans that name their Slurm account."""
    return PlanWorkload.objects.filter(plan__status=CapacityPlan.Status.APPROVED).exclude(slurm_account="")


def aware(day):
    return timezone.make_aware(datetime.combine(day, time.min))


def calibrate(workloads=None, now=None):
    """The :class:`Calibration` of ``workloads`` (a ``PlanWorkload`` queryset; default :func:`approved_workloads`)
    on the jobs the fleet recorded up to ``now``."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    workloads = (approved_workloads() if workloads is None else workloads.exclude(slurm_account=""))
    runs, gpus = [], None
    for workload in workloads.select_related("plan", "gpu_model").order_by("slurm_account", "start", "plan__name",
                                                                           "name"):
        gpus = gpus if gpus is not None else sizing.catalog_gpus()
        runs.append(sized_run(workload, gpus))
    windows = {}
    for run in runs:
        if run.start is not None:
            windows[(run.workload.pk, "run")] = (run.team, aware(run.start), aware(run.end))
            windows[(run.workload.pk, "after")] = (run.team, aware(run.end), aware(add_months(run.end, 1)))
    found = allocation_rollup.allocated_for_groups(windows, now)
    for run in runs:
        if run.start is not None:
            judge(run, found[(run.workload.pk, "run")], found[(run.workload.pk, "after")], today)
    teams = {}
    for run in runs:
        teams.setdefault(run.team, []).append(run)
    for team_runs in teams.values():
        flag_overlaps(team_runs)
    return Calibration([Team(name, team_runs) for name, team_runs in sorted(teams.items())])


def sized_run(workload, gpus):
    """The workload's window (from its planned wall-clock time) and the model's estimate, or why it has none."""
    try:
        planned = workload.workload()
        sized = sizing.size(planned, gpus)
        estimate = sizing.size(replace(planned, calibration_factor=None), gpus)["gpu_hours"] \
            if planned.calibration_factor else sized["gpu_hours"]
    except (ValueError, TypeError, ValidationError) as error:
        why = " ".join(getattr(error, "messages", [str(error)]))
        return Run(workload, UNSIZED, notes=[f"Cannot be sized, so it has no estimate or run window: {why}"])
    if workload.start is None:
        return Run(workload, UNSIZED, notes=["It has no start month, so no run window."])
    start = workload.start.replace(day=1)
    return Run(workload, RUNNING, start, add_months(start, run_months(sized["wall_clock_days"])), estimate)


def judge(run, inside, after, today):
    """Whether ``run`` counts, from what its window's jobs (``inside``) and the month after it (``after``) show."""
    run.realized, run.jobs = inside["gpu_hours"], inside["jobs"]
    account = f"account {run.team}"
    if run.end > today:
        run.status = RUNNING
        run.notes.append(f"Its window ({run.window}) is not over: {run.realized:,.0f} GPU-hours so far under "
                         f"{account}, not counted until {run.end:%Y-%m-%d}.")
    elif not run.jobs:
        run.status = NO_JOBS
        run.realized = None
        run.notes.append(f"No jobs found under {account} in {run.window}: not counted (not a ratio of 0). Is the "
                         "account right, and does a Slurm source report it?")
    else:
        run.status = FINISHED
        if after["jobs"]:
            run.notes.append(f"{after['gpu_hours']:,.0f} GPU-hours of {after['jobs']} job(s) under {account} in the "
                             f"month after its window are not counted; if they belong to this run, it overran.")


def flag_overlaps(runs):
    """Say so where two counted windows of one team overlap: the jobs in the overlap count for both."""
    counted = [run for run in runs if run.counted]
    for run in counted:
        for other in counted:
            if other is not run and other.start < run.end and run.start < other.end:
                run.notes.append(f"Its window overlaps that of {other.workload.name} (plan {other.workload.plan}): "
                                 "the jobs in the overlap count for both.")
