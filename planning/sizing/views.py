"""The workload sizing page: a GET form (results are shareable URLs) over ``planning.sizing.sizing``, the figures of the
chosen GPU model, the run's cost and the comparison of every GPU model of the catalog. Every role may size; an
account without one gets the page that says how to get one (the sizing shows the fleet's measured interruption
rates and its teams).

Under a result, users who may change plans get "Add to plan" (``planning.plans.forms.AddToPlanForm``): a POST to
the same URL, so the sizing inputs stay in the query string; refused, the page shows the result and the message."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.views.generic import TemplateView

from inventory.models import GPUModel
from inventory.queries import most_common_gpu_model
from portal.roles import role_of

from ..calibration.calibration import calibrate
from ..calibration.validation import validate
from ..goodput import added_goodput, measured_rates
from ..plans.forms import AddToPlanForm
from ..plans.models import NOT_INPUTS
from . import sizing
from .fleet import fleet_fit
from .forms import SizingForm, given_inputs
from .rates import rate_basis


def display(value, unit=""):
    """A figure for people: large counts with separators, huge ones in scientific notation, small ones to 3
    significant digits, factors (unit ×) to 2 decimals as the calibration shows them; None (does not apply) as a
    dash."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value.replace("_", " ")
    if unit == "×":
        return f"{value:.2f}"
    if isinstance(value, int) or abs(value) >= 100 and abs(value) < 1e9:
        return f"{value:,.0f}"
    if abs(value) >= 1e9:
        return f"{value:.3g}"
    return f"{value:,.1f}" if abs(value) >= 1 else f"{value:.3g}"


# Sizing reads the fleet's goodput (its measured interruption rate per GPU model) and its teams' factors: the
# readers of telemetry, which every role is.
SIZES = "inventory.read_telemetry"


def may_add_to_plans(user):
    return user.has_perm("planning.change_capacityplan")


class SizingView(TemplateView):
    template_name = "planning/sizing.html"

    def dispatch(self, request, *args, **kwargs):
        if not request.user.has_perm(SIZES):
            if role_of(request.user) is None:  # as on the dashboard: how to get a role, and nothing of the fleet
                return render(request, "portal/no_role.html", status=403)
            raise PermissionDenied
        return super().dispatch(request, *args, **kwargs)

    def post(self, request, *args, **kwargs):
        """Add to plan: the workload sized by the query string into the plan the form names."""
        if not may_add_to_plans(request.user):
            raise PermissionDenied
        context = self.get_context_data(**kwargs)
        form = context.get("add_form")
        if form is not None and form.is_valid():
            try:
                workload = form.save()
            except ValidationError as error:  # the plan changed meanwhile
                form.add_error(None, error)
            else:
                messages.success(request, f"Added workload {workload} to {workload.plan}, from "
                                          f"{workload.start:%Y-%m}.")
                return HttpResponseRedirect(f"{workload.plan.get_absolute_url()}#workloads")
        return self.render_to_response(context)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        gpus, factors, rates = sizing.catalog_gpus(), calibrate().factors, measured_rates()
        # The fleet's most common model is the default, preselected on a blank form and taken when a URL leaves
        # the model out (a filled form that names one says its own).
        default_gpu, data = most_common_gpu_model(), self.request.GET
        if data and not data.get("gpu_model") and default_gpu:
            data = data.copy()
            data["gpu_model"] = default_gpu
        form = SizingForm(data or None, gpus=gpus, factors=factors, default_gpu=default_gpu)
        context.update(form=form, gpus_per_node=sizing.GPUS_PER_NODE)
        if form.is_valid():
            workload = form.workload()
            rows = sizing.compare_all(workload, gpus, factors, rates)
            result = sizing.size(workload, gpus, factors, rates)
            measured = rates.get(workload.gpu_model)
            if may_add_to_plans(self.request.user):
                # Only a rate sizing used is the basis kept: one too thin to trust left the published rate.
                context["add_form"] = self.add_form(form, result, measured if measured and measured.trusted else None)
            context.update(
                rate_basis=rate_basis(measured, sizing.INTERRUPTIONS_PER_GPU_HOUR, sizing.GOODPUT_SOURCE,
                                      goodput_given=bool(workload.goodput)),
                accuracy=validate(),
                figures=[(figure, display(figure.value, figure.unit)) for figure in result.figures.values()],
                costs=[(figure, display(figure.value)) for figure in
                       sizing.run_costs(result["gpu_hours"], workload.gpu_model).values()],
                fleet=fleet_fit(workload.gpu_model, result["gpus"]),
                comparison=[(row, [display(value) for value in row.values.values()]) for row in rows],
                comparison_headers=[sizing.FIGURES[key][:2] for key in sizing.COMPARISON_FIGURES],
                chart={"labels": [row.gpu.name for row in rows if row.sizing], "x_title": "GPU-hours",
                       "series": [{"name": "GPU-hours", "values": [row.sizing["gpu_hours"] for row in rows
                                                                    if row.sizing]}]},
            )
        return context

    def add_form(self, form, result, measured):
        """The "Add to plan" form for ``result``, the sizing shown (``measured``: the fleet's interruption rate of
        its GPU model, None when the published one was used)."""
        inputs = given_inputs(form.cleaned_data, [name for name in sizing.INPUTS if name not in NOT_INPUTS])
        # A plan states the team's factor as a number (its figures must not move when calibration does) and keeps
        # the team as the workload's Slurm account.
        team = form.cleaned_data.get("team") or ""
        if team and not inputs.get("calibration_factor") and (factor := form.factors.get(team)):
            inputs["calibration_factor"] = round(factor.factor, 4)
        # The default goodput allowance is kept with its basis. A measured one is also stated as a number, like the
        # factor: plans size without the fleet's rate, and their figures must be this page's, now and later.
        basis = {}
        if not inputs.get("goodput"):
            basis = added_goodput(result, measured)
            if measured:
                inputs["goodput"] = result["goodput"]
        gpu_model = GPUModel.objects.get(name=form.cleaned_data["gpu_model"])
        return AddToPlanForm(self.request.POST if self.request.method == "POST" else None,
                             user=self.request.user, gpu_model=gpu_model, inputs=inputs, goodput_basis=basis,
                             initial={"slurm_account": team})
