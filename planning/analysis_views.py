"""A capacity plan's analysis page: demand against capacity month by month, the scenarios side by side, the
recommendation and its charts. The plan page loads it with htmx (the forecast takes a moment); on its own URL it
is a whole page. The figures are ``planning.analysis``; this module only lays them out."""

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.urls import path
from django.views.generic import TemplateView

from portal.generic import ModelPermissionMixin

from .analysis import analyse
from .models import CapacityPlan


def _month(day):
    return day.isoformat()


def capacity_chart(an):
    """Demand (history, forecast with its 80 % band) against capacity now and with each scenario, GPU-hours."""
    history = an.forecast.history
    months = [m for m, _ in history] + an.months
    before = [None] * len(history)
    band = an.forecast.lower is not None
    workloads = [row[2] for row in an.rows]
    series = [
        {"name": "Demand (telemetry)", "y": [v for _, v in history] + [None] * len(an.months)},
        {"name": "Demand forecast", "y": before + an.demand, "style": {"line": {"width": 3, "color": "#2f6fdb"}}},
    ]
    if band:
        series += [
            {"name": "Forecast 80 % low", "y": before + [lo + w for lo, w in zip(an.forecast.lower, workloads,
                                                                                    strict=True)],
             "style": {"line": {"width": 0}, "marker": {"size": 0}, "showlegend": False, "hoverinfo": "skip"}},
            {"name": "Forecast 80 % range", "y": before + [up + w for up, w in zip(an.forecast.upper, workloads,
                                                                                      strict=True)],
             "style": {"fill": "tonexty", "fillcolor": "rgba(47,111,219,0.15)", "line": {"width": 0},
                       "marker": {"size": 0}}},
        ]
    series.append({"name": "Capacity now", "y": before + an.capacity.hours,
                   "style": {"line": {"width": 3, "color": "#616e7c", "shape": "hv"}}})
    for s in an.scenarios:
        if s.added_hours:
            series.append({"name": f"Capacity: {s.label.lower()}", "y": before + s.capacity,
                           "style": {"line": {"width": 2, "dash": "dot", "shape": "hv"}}})
    return {"x": [_month(m) for m in months], "series": series, "x_title": "month",
            "y_title": "GPU-hours per month"}


def cost_chart(an):
    """Cumulative spend per scenario (capex when ordered), in the portal's currency."""
    series = []
    for s in an.scenarios:
        total, cumulative = 0.0, []
        for amount in s.cash:
            total += amount
            cumulative.append(round(total, 2))
        series.append({"name": s.label, "y": cumulative, "style": {"line": {"shape": "hv"}}})
    return {"x": [_month(m) for m in an.months], "series": series, "x_title": "month",
            "y_title": f"cumulative spend ({settings.COST_CURRENCY})"}


class CapacityPlanAnalysisView(ModelPermissionMixin, TemplateView):
    model = CapacityPlan

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def get_template_names(self):
        if self.request.htmx:
            return ["planning/plan_analysis.html"]
        return ["planning/plan_analysis_page.html"]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        plan = get_object_or_404(CapacityPlan.objects.select_related("site", "node_model"), pk=self.kwargs["pk"])
        an = analyse(plan)
        recommended = an.recommendation.kind
        context.update(
            object=plan, analysis=an, currency=settings.COST_CURRENCY, recommended=recommended,
            scenarios=[(s, s.kind == recommended) for s in an.scenarios],
            capacity_chart=capacity_chart(an), cost_chart=cost_chart(an),
            can_edit=plan.is_draft and self.request.user.has_perm("planning.change_capacityplan"),
        )
        return context


analysis_urls = [
    path("capacity-plans/<int:pk>/analysis/", CapacityPlanAnalysisView.as_view(), name="capacityplan_analysis"),
]
