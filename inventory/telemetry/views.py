"""Telemetry pages: sources (declarations over the generic views, plus "Pull now"), the fleet utilization
dashboard, and the GPU charts of a node's page."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View

from inventory import capacity, querysets
from portal.generic import ModelPermissionMixin, ObjectListView, ObjectView, RelatedTable

from . import charts, gpu_health, queries, slurm_figures
from .filters import TelemetrySourceFilterSet
from .forms import UtilizationFilterForm
from .models import PullReport, TelemetrySource
from .records import Quality
from .tables import SlurmJobTable, TelemetrySourceTable, UnknownSeriesTable
from .tasks import PULL_NOT_QUEUED, queue_pull_now

VIEW_TELEMETRY = "inventory.read_telemetry"
SECRET_FIELDS = ("auth_token",)
STATUS_FIELDS = ("last_success_at", "last_error", "last_error_at", "stale_since", "consecutive_failures",
                 "next_attempt_at", "synced_until", "last_attempt_at")

# --- Sources ---------------------------------------------------------------------------------------


class TelemetrySourceListView(ObjectListView):
    queryset = querysets.telemetry_sources()
    filterset_class = TelemetrySourceFilterSet
    table_class = TelemetrySourceTable


UNKNOWN_GPUS = RelatedTable("Unknown GPUs", UnknownSeriesTable, lambda o: querysets.unknown_series().filter(source=o))


def recent_jobs(user):
    """The source's latest jobs that ``user`` may read (a researcher: their own teams', ``inventory.policy``)."""
    return RelatedTable("Recent Slurm jobs", SlurmJobTable,
                        lambda o: querysets.slurm_jobs().visible_to(user).filter(source=o))


class TelemetrySourceView(ObjectView):
    """A source's settings, the state of its pulls, "Pull now", the series that match no GPU and, for Slurm,
    the latest jobs. The token is never shown (and the change history does not keep it)."""

    queryset = querysets.telemetry_sources()
    template_name = "inventory/telemetry/source_detail.html"
    hidden_fields = ("id", "created", "updated", *SECRET_FIELDS, *STATUS_FIELDS)

    @property
    def related_tables(self):
        if self.object.kind == TelemetrySource.Kind.SLURM:
            return [UNKNOWN_GPUS, recent_jobs(self.request.user)]
        return [UNKNOWN_GPUS]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["pull_url"] = reverse("inventory:telemetrysource_pull", args=[self.object.pk])
        context["data_quality"] = data_quality(self.object)
        return context


PULLS_SHOWN = 10


def data_quality(source):
    """The source page's data-quality panel: the last pull's notes (kind, label, count, examples) and, for the
    recent pulls, their counts per kind (one query)."""
    reports = list(PullReport.objects.filter(source=source)[:PULLS_SHOWN])
    if not reports:
        return None
    kinds = [kind for kind in Quality.KINDS if any(kind in report.quality for report in reports)]
    last = reports[0]
    return {
        "last": last,
        "notes": [{"kind": kind, "label": Quality.KINDS[kind], "count": last.quality[kind],
                   "examples": last.examples.get(kind, [])} for kind in Quality.KINDS if kind in last.quality],
        "columns": [{"kind": kind, "label": Quality.KINDS[kind]} for kind in kinds],
        "pulls": [{"report": report, "cells": [report.quality.get(kind, 0) for kind in kinds]} for report in reports],
    }


class PullNowView(ModelPermissionMixin, View):
    """POST: queue a pull of one source now (Celery), whatever its schedule or backoff."""

    permission_action = "change"

    def get_queryset(self):
        return TelemetrySource.objects.all()

    def post(self, request, pk):
        source = get_object_or_404(TelemetrySource, pk=pk)
        if not source.enabled:
            messages.error(request, f"{source} is disabled; enable it to pull it.")
        elif queue_pull_now(source.pk):  # queued at once (nothing to commit first): the answer says if it worked
            messages.success(request, f"Pull of {source} queued; a worker runs it in the background. "
                                      "Its outcome shows below in a moment (the status refreshes itself).")
        else:
            messages.warning(request, PULL_NOT_QUEUED)
        return HttpResponseRedirect(source.get_absolute_url())


# --- Fleet utilization dashboard -------------------------------------------------------------------


class UtilizationView(ModelPermissionMixin, View):
    """Fleet utilization for a range and filters. The form redraws the charts through htmx (only the
    ``#dashboard`` fragment comes back); ``?format=csv&chart=<name>`` downloads one chart's figures.
    Needs the view permission of telemetry sources (every role has it)."""

    template_name = "inventory/telemetry/utilization.html"
    fragment_template_name = "inventory/telemetry/utilization_charts.html"

    def get_queryset(self):
        return TelemetrySource.objects.all()

    def get(self, request):
        form = UtilizationFilterForm(request.GET)
        range_key, filters, heatmap_by = form.choices()
        dashboard = charts.FleetDashboard(range_key, filters, heatmap_by)
        if request.GET.get("format") == "csv":
            chart = request.GET.get("chart", "")
            if chart not in charts.CHARTS:
                raise Http404(f"No chart '{chart}'; the charts are {', '.join(charts.CHARTS)}.")
            return dashboard.csv_response(chart)
        context = {"form": form, "ranges": queries.RANGE_BUTTONS, "range_key": range_key,
                   **self.dashboard_context(dashboard, form)}
        htmx = getattr(request, "htmx", None)
        if htmx and not htmx.history_restore_request and htmx.target == "dashboard":
            return render(request, self.fragment_template_name, {**context, "fragment": True})
        return render(request, self.template_name, context)

    def dashboard_context(self, dashboard, form):
        query = self.request.GET.copy()
        for name in ("format", "chart"):
            query.pop(name, None)
        prefix = f"?{query.urlencode()}&" if query else "?"
        csv_url = {name.replace("-", "_"): f"{prefix}format=csv&chart={name}" for name in charts.CHARTS}
        if not dashboard.sources:
            can_add = self.request.user.has_perm("inventory.add_telemetrysource")
            add_url = reverse("inventory:telemetrysource_add") if can_add else None
            return {"has_sources": False, "add_source_url": add_url}
        group_tables = [
            {"name": name, "title": title, "groups": dashboard.groups(group_by),
             "csv_url": csv_url[name.replace("-", "_")]}
            for name, (group_by, title) in charts.GROUP_CHARTS.items()
        ]
        return {
            "has_sources": True,
            "span": dashboard.span,
            "heatmap_by": dashboard.heatmap_by,
            "totals": dashboard.totals,
            # The scope's GPUs as every page counts them, beside the GPUs that reported (a different figure).
            "capacity": capacity.count(site_id=dashboard.filters.get("site"),
                                       partition=dashboard.filters.get("partition", ""),
                                       gpu_model_id=dashboard.filters.get("gpu_model")),
            "capacity_ignores_team": bool(dashboard.filters.get("team")),
            "group_tables": group_tables,
            "least_used": dashboard.least_used,
            "not_in_service": dashboard.not_in_service,
            "queue_waits": dashboard.queue_waits,
            "allocations_by_team": dashboard.allocations_by_team,
            "allocations_by_partition": dashboard.allocations_by_partition,
            "allocation_totals": dashboard.allocation_totals,
            "compares_observed": dashboard.compares_observed,
            "has_slurm_source": bool(dashboard.allocations_by_partition) or dashboard.has_slurm_source,
            "job_filter_note": job_filter_note(form, dashboard.filters),
            "stale_sources": dashboard.stale_sources,
            "currency": settings.COST_CURRENCY,
            "idle_cost_basis": queries.idle_cost_basis(dashboard.totals),
            "chart_data": {f"chart-{name}": data for name, data in dashboard.chart_data().items()},
            "csv_url": csv_url,
        }


def job_filter_note(form, filters):
    """Says which of the set filters the Slurm figures ignore (jobs know no site or GPU model); "" if none."""
    labels = [str(form[name].label) for name in slurm_figures.ignored_job_filters(filters)]
    if not labels:
        return ""
    return (f"Slurm jobs record no site or GPU model: the Slurm figures below (allocations, queue wait) ignore the "
            f"{' and '.join(labels)} filter{'s' if len(labels) > 1 else ''}.")


# --- A node's GPUs ---------------------------------------------------------------------------------


class NodeGPUChartsMixin:
    """For the node page: its GPUs' utilization over 7 days, one line per GPU, and the CSV of it
    (``?format=csv&chart=gpu-utilization``)."""

    gpu_chart_range = "7d"

    def get(self, request, *args, **kwargs):
        if request.GET.get("format") == "csv" and request.GET.get("chart") == "gpu-utilization":
            if not request.user.has_perm(VIEW_TELEMETRY):
                raise PermissionDenied
            node = self.get_object()
            span = queries.get_range(self.gpu_chart_range)
            return charts.gpu_lines_csv(node, gpu_health.gpu_series(node, span.key), span)
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.request.user.has_perm(VIEW_TELEMETRY):
            span = queries.get_range(self.gpu_chart_range)
            data = gpu_health.gpu_series(self.object, span.key)
            context["gpu_chart"] = {
                "range": span,
                "has_data": any(v is not None for line in data["lines"] for v in line["values"]),
                "data": charts.gpu_lines_chart(data, span),
                "csv_url": "?format=csv&chart=gpu-utilization",
            }
        return context


# --- GPU health (issue 19) -----------------------------------------------------------------------------


class GPUHealthMixin:
    """The health section of the node and GPU pages: range picker, badges per GPU and charts; two queries.
    A node shows one small chart per GPU of the chosen metric (``?metric=``); a GPU one small chart per metric."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if not self.request.user.has_perm(VIEW_TELEMETRY):
            return context
        params = self.request.GET
        chosen, error = gpu_health.span(params)
        metric = params.get("metric") or gpu_health.DEFAULT_METRIC
        if metric not in gpu_health.METRICS:
            error, metric = f"Unknown metric '{metric}'.", gpu_health.DEFAULT_METRIC
        gpus = self.health_gpus()
        gpu_ids = [gpu["pk"] for gpu in gpus]
        figures = gpu_health.figures(gpu_ids, chosen)
        remap_on = gpu_health.remap_states(gpu_ids)
        markers = gpu_health.markers(gpu_ids, chosen)
        for gpu in gpus:
            gpu["badges"] = gpu_health.badges(figures[gpu["pk"]], remap_on.get(gpu["pk"], ()))
            gpu["markers"] = gpu_health.with_ecc_counts(markers.get(gpu["pk"], []), figures[gpu["pk"]], chosen)
        rows, sort = gpu_health.table(gpus, figures, params.get("health_sort", "-worst"))
        context["health"] = {
            "span": chosen, "error": error, "metric": metric, "metrics": gpu_health.METRICS, "gpus": gpus,
            "ranges": gpu_health.RANGES, "charts": self.health_charts(gpus, figures, chosen, metric),
            "has_data": any(badge.key != "no-data" for gpu in gpus for badge in gpu["badges"]),
            "events": self.health_events(), "fault": gpu_health.fault(self.object),
            "table": rows, "sort": sort, "headers": gpu_health.TABLE_HEADERS,
        }
        return context

    def health_events(self):
        return []


class NodeHealthMixin(GPUHealthMixin):
    def health_gpus(self):
        return [{**gpu, "name": f"gpu{gpu['slot']}", "url": reverse("inventory:gpu_detail", args=[gpu["pk"]])}
                for gpu in self.object.gpus.order_by("slot").values("pk", "slot", tdp_w=F("gpu_model__tdp_w"))]

    def health_charts(self, gpus, figures, chosen, metric):
        return [{"id": f"health-{gpu['name']}", "title": gpu["name"], "url": gpu["url"], "badges": gpu["badges"],
                 "data": gpu_health.series_chart(chosen, metric, [(gpu["name"], figures[gpu["pk"]][metric])],
                                                 gpu["tdp_w"], gpu["markers"]),
                 "no_sensor": gpu_health.no_sensor(figures[gpu["pk"]], metric)}
                for gpu in gpus]


class GPUOwnHealthMixin(GPUHealthMixin):
    def health_gpus(self):
        return [{"pk": self.object.pk, "name": str(self.object), "url": "", "tdp_w": self.object.gpu_model.tdp_w}]

    def health_charts(self, gpus, figures, chosen, metric):
        values, gpu = figures[self.object.pk], gpus[0]
        return [{"id": f"health-{name}", "title": f"{title} ({unit})", "url": "",
                 "data": gpu_health.series_chart(chosen, name, [(title, values[name])], gpu["tdp_w"],
                                                 gpu["markers"]),
                 "no_sensor": gpu_health.no_sensor(values, name)}
                for name, (title, unit) in gpu_health.METRICS.items()]

    def health_events(self):
        return gpu_health.health_events(self.object.pk)
