"""The workload sizing page: a GET form (results are shareable URLs) over ``planning.sizing.sizing``, the figures of the
chosen GPU model, the run's cost and the comparison of every GPU model of the catalog. Any logged-in user may size."""

from django.views.generic import TemplateView

from inventory.queries import most_common_gpu_model

from ..calibration.calibration import calibrate
from . import sizing
from .forms import SizingForm


def display(value):
    """A figure for people: large counts with separators, huge ones in scientific notation, small ones to 3
    significant digits; None (does not apply) as a dash."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value.replace("_", " ")
    if isinstance(value, int) or abs(value) >= 100 and abs(value) < 1e9:
        return f"{value:,.0f}"
    if abs(value) >= 1e9:
        return f"{value:.3g}"
    return f"{value:,.1f}" if abs(value) >= 1 else f"{value:.3g}"


class SizingView(TemplateView):
    template_name = "planning/sizing.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        gpus, factors = sizing.catalog_gpus(), calibrate().factors
        # The fleet's most common model is preselected on a blank form only (a filled one says its own).
        form = SizingForm(self.request.GET or None, gpus=gpus, factors=factors,
                          default_gpu=None if self.request.GET else most_common_gpu_model())
        context.update(form=form, gpus_per_node=sizing.GPUS_PER_NODE)
        if form.is_valid():
            workload = form.workload()
            rows = sizing.compare_all(workload, gpus, factors)
            result = sizing.size(workload, gpus, factors)
            context.update(
                figures=[(figure, display(figure.value)) for figure in result.figures.values()],
                costs=[(figure, display(figure.value)) for figure in
                       sizing.run_costs(result["gpu_hours"], workload.gpu_model).values()],
                comparison=[(row, [display(value) for value in row.values.values()]) for row in rows],
                comparison_headers=[sizing.FIGURES[key][:2] for key in sizing.COMPARISON_FIGURES],
                chart={"labels": [row.gpu.name for row in rows if row.sizing], "x_title": "GPU-hours",
                       "series": [{"name": "GPU-hours", "values": [row.sizing["gpu_hours"] for row in rows
                                                                    if row.sizing]}]},
            )
        return context
