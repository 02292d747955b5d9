"""The Calibration page: per team (Slurm account), the GPU-hours its finished planned workloads really took against
the sizing estimate, and the ratio sizing offers as the team's factor; a team's page lists the workloads behind it.
Needs the permission to view capacity plans (the workloads are theirs). The figures are ``calibration``; the page of
all teams also shows how the sizing model does against published training runs (``validation``)."""

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views.generic import TemplateView

from portal.generic import ModelPermissionMixin

from ..plans.models import CapacityPlan, PlanWorkload
from ..plans.views import workload_rows
from ..sizing.views import display
from .calibration import calibrate, times
from .time_to_result import workload_jobs
from .validation import load_runs, percent, validate


class CalibrationView(ModelPermissionMixin, TemplateView):
    """All teams; with ``team`` (the URL's), that team and its workloads."""

    template_name = "planning/calibration.html"

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        teams = calibrate().teams
        if name := self.kwargs.get("team"):
            teams = [team for team in teams if team.team == name]
            if not teams:
                raise Http404(f"No planned workload of an approved plan runs under the Slurm account {name}.")
        if not name:
            context.update(self.accuracy())
        context.update(
            team=name,
            teams=[(team, display(team.estimate), display(team.realized), times(team.ratio)) for team in teams],
            runs=[(run, display(run.estimate), display(run.realized), times(run.ratio))
                  for team in teams for run in team.runs] if name else [],
        )
        return context

    @staticmethod
    def accuracy():
        """The sizing model against published runs (``validation``): the figures' rows and the held-out runs."""
        result = validate()
        errors = dict(result.held_out.errors)
        return {
            "accuracy": result,
            "accuracy_rows": [(row.label, row.runs, percent(row.median_error), percent(row.within))
                              for row in result.rows if row.runs],
            "held_out": [(run, display(run.published_gpu_hours), f"{errors[run.model]:+.0%}")
                         for run in load_runs() if run.held_out],
        }


class WorkloadTimeToResultView(ModelPermissionMixin, TemplateView):
    """A planned workload's time to result: its jobs (``time_to_result.workload_jobs``: restarts, queue waits, how
    each run ended) and the plan's estimate against the realized, each figure the plan page's for the workload
    (``plans.views.workload_rows``: its sizing, ``planning.goodput.time_to_result``, ``calibration``)."""

    template_name = "planning/workload_time_to_result.html"
    model = PlanWorkload  # the URL's pk

    def get_queryset(self):
        return CapacityPlan.objects.all()  # who reads plans reads their workloads

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        workload = get_object_or_404(PlanWorkload.objects.select_related("plan", "gpu_model"), pk=self.kwargs["pk"])
        now = timezone.now()
        row = next(row for row in workload_rows(workload.plan) if row.workload.pk == workload.pk)
        named = bool(workload.slurm_account or workload.slurm_job_name)
        context.update(
            workload=workload, plan=workload.plan, row=row, named=named, now=now,
            estimate_days=row.sizing["wall_clock_days"] if row.sizing else None,
            estimate_gpu_hours=display(row.gpu_hours), ttr=row.time_to_result,
            jobs=workload_jobs(workload, self.request.user, now) if named else None,
            calibration_ratio=times(row.calibration.ratio) if row.calibration else None,
        )
        return context
