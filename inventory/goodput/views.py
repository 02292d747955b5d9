"""Goodput pages (issue 20): the dashboard, the interruptions list, and the goodput section of the node and GPU
model pages. Every figure comes from ``queries`` (the API's); these views only lay them out."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.mixins import PermissionRequiredMixin
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views import View

from inventory import lifecycle
from inventory.models import LifecycleState
from inventory.teams.models import team_url
from inventory.telemetry import queries as telemetry_queries
from inventory.telemetry.models import TelemetrySource
from inventory.telemetry.views import VIEW_TELEMETRY
from portal.exports import delimited
from portal.generic import ObjectListView

from . import attribution, hooks, queries
from .api.views import assumptions
from .filters import InterruptionPageFilterSet
from .forms import GROUP_LABELS, GoodputFilterForm
from .models import Interruption
from .tables import InterruptionTable

# The CSV's columns: (header, figure of ``queries.goodput_by``).
CSV_COLUMNS = [
    ("goodput_ratio", "goodput_ratio"),
    ("allocated_gpu_hours", "allocated_gpu_hours"),
    ("infrastructure_interruptions", "interruptions"),
    ("user_interruptions", "user_interruptions"),
    ("scheduler_interruptions", "scheduler_interruptions"),
    ("interruptions_per_1000_gpu_days", "interruptions_per_1000_gpu_days"),
    ("mtbi_hours", "mtbi_hours"),
    ("expected_restarts", "expected_restarts"),
    ("lost_gpu_hours", "lost_gpu_hours"),
    ("lost_run_gpu_hours", "lost_run_gpu_hours"),
    ("lost_wait_gpu_hours", "lost_wait_gpu_hours"),
    ("lost_cost", "lost_cost"),
    ("queue_wait_share", "queue_wait_share"),
    ("lost_gpu_fault_gpu_hours", "lost_gpu_fault_gpu_hours"),
    ("lost_node_fault_gpu_hours", "lost_node_fault_gpu_hours"),
    ("lost_preemption_gpu_hours", "lost_preemption_gpu_hours"),
    ("lost_user_gpu_hours", "lost_user_gpu_hours"),
    ("queue_wait_gpu_hours", "queue_wait_gpu_hours"),
]
# The loss chart's parts, each a figure of ``queries.goodput_by``: (name, figure, colour).
LOSSES = [
    ("GPU faults (XID, ECC)", "lost_gpu_fault_gpu_hours", "#d64545"),
    ("node failures, degraded", "lost_node_fault_gpu_hours", "#f29b4b"),
    ("preemption, requeue", "lost_preemption_gpu_hours", "#9f7aea"),
    ("user failures", "lost_user_gpu_hours", "#2f6fdb"),
    ("queue wait (GPUs × wait)", "queue_wait_gpu_hours", "#9aa5b1"),
]
JOB_HOURS = 24.0  # the job whose expected restarts the table gives


class TelemetryPermissionMixin(PermissionRequiredMixin):
    """Who reads utilization reads goodput (``inventory.read_telemetry``)."""

    permission_required = VIEW_TELEMETRY
    raise_exception = True


class GoodputView(TelemetryPermissionMixin, View):
    """Goodput per team, partition, site, GPU model, node or month for a range and filters, or each group month by
    month (``by=month``): the table, the chart of the losses by cause and the CSV of the table (``?format=csv``).
    The form redraws the ``#dashboard`` fragment through htmx."""

    template_name = "inventory/goodput/dashboard.html"
    fragment_template_name = "inventory/goodput/dashboard_body.html"

    def get(self, request):
        form = GoodputFilterForm(request.GET)
        range_key, filters, group_by = form.choices()
        by = form.split()
        now = timezone.now()
        gpus = settings.GOODPUT_MTBI_GPUS
        compute = queries.goodput_by_month_of if by else queries.goodput_by
        groups = compute(group_by, range_key, filters, now=now, gpus=gpus, job_hours=JOB_HOURS)
        if request.GET.get("format") == "csv":
            return csv_response(groups, group_by, range_key, by)
        query = request.GET.copy()
        query.pop("format", None)
        context = {
            "form": form,
            "ranges": telemetry_queries.RANGE_BUTTONS,
            "range_key": range_key,
            "span": telemetry_queries.get_range(range_key),
            "group_by": group_by,
            "by": by,
            "group_label": GROUP_LABELS[group_by] + (" and month" if by else ""),
            "groups": [with_links(g, group_by, range_key, filters) for g in groups],
            "gpus": gpus,
            "job_hours": JOB_HOURS,
            "currency": settings.COST_CURRENCY,
            "cost_basis": queries.cost_basis(groups),
            "assumptions": assumptions(),
            "has_slurm_source": telemetry_queries.has_slurm_source(),
            "stale_sources": [
                source for source in telemetry_queries.stale_sources() if source.kind == TelemetrySource.Kind.SLURM
            ],
            "chart_data": charts(groups, by),
            "range_fields": [form[name] for name in ("month", "start", "end", "by")],  # their errors, redrawn
            "csv_url": f"?{urlencode({**query.dict(), 'format': 'csv'})}",
            "interruptions_url": interruptions_url(range_key=range_key, **filters),
        }
        htmx = getattr(request, "htmx", None)
        if htmx and not htmx.history_restore_request and htmx.target == "dashboard":
            return render(request, self.fragment_template_name, {**context, "fragment": True})
        return render(request, self.template_name, context)


def interruptions_url(range_key=None, **filters):
    """The interruptions list filtered by the infrastructure's and ``filters`` (ids as they are)."""
    params = {"cause": attribution.INFRASTRUCTURE, **{k: getattr(v, "pk", v) for k, v in filters.items() if v}}
    if range_key:
        params["range"] = range_key
    return f"{reverse('inventory:interruption_list')}?{urlencode(params)}"


def percent(ratio):
    return None if ratio is None else ratio * 100


def page_url(name, **params):
    return f"{reverse(name)}?{urlencode(params)}"


def dashboard_url(**params):
    return f"{reverse('inventory:goodput')}?{urlencode(params)}"


def with_links(group, group_by, range_key, filters):
    """A group's figures, its ratios in %, the link to its interruptions under the dashboard's filters (the list
    filters by each grouping, under the same name) and, for a team, to its page."""
    link = None
    if group["key"] not in (None, "") and group["interruptions"]:
        link = interruptions_url(group.get("range", range_key), **{**filters, group_by: group["key"]})
    return {
        **group,
        "goodput_pct": percent(group["goodput_ratio"]),
        "queue_wait_pct": percent(group["queue_wait_share"]),
        "interruptions_url": link,
        "team_url": team_url(group["key"]) if group_by == "team" else None,
    }


def charts(groups, by=None):
    """The chart of the losses: GPU-hours lost per group (and month) stacked by cause (``LOSSES``), the table's
    figures. A ratio near 100 % hid them; a cause without a loss anywhere is left out."""
    labels = [f"{g['name']} · {g['month']}" if by else str(g["name"]) for g in groups]
    series = [{"name": name, "values": [g[figure] for g in groups], "colour": colour}
              for name, figure, colour in LOSSES if any(g[figure] for g in groups)]
    return {
        "chart-losses": {
            "labels": labels,
            "x_title": "GPU-hours lost (estimate)",
            "barmode": "stack",
            "series": series,
        },
    }


def csv_response(groups, group_by, range_key, by=None):
    """The table as CSV, written by ``portal.exports.delimited`` (formula-like names neutralised)."""
    first = ["month"] if by else []
    rows = [
        [*first, group_by, *(header for header, _ in CSV_COLUMNS)],
        *([*([g["month"]] if by else []), g["name"], *(g[field] for _, field in CSV_COLUMNS)] for g in groups),
    ]
    response = HttpResponse(delimited(rows, ","), content_type="text/csv; charset=utf-8")
    split = "-by-month" if by else ""
    response["Content-Disposition"] = f'attachment; filename="goodput-by-{group_by}{split}-{range_key}.csv"'
    return response


class InterruptionListView(TelemetryPermissionMixin, ObjectListView):
    """Jobs that ended in anything but COMPLETED, newest first, with the fault, node, GPU and ticket of each."""

    queryset = Interruption.objects.select_related("job", "node", "gpu", "xid_event", "transition")
    filterset_class = InterruptionPageFilterSet
    table_class = InterruptionTable
    addable = False  # recorded from the Slurm jobs and faults

    def get_permission_required(self):
        return [VIEW_TELEMETRY]

    def get_queryset(self):
        # A researcher's own teams' rows (``inventory.policy``), in the page and its exports alike.
        return super().get_queryset().visible_to(self.request.user)

    def get_table(self, **kwargs):
        table = super().get_table(**kwargs)
        # The ticket finder reads the tickets of the shown rows at once (one query a page).
        table.tickets = hooks.tickets([row.record for row in table.paginated_rows])
        return table


class GoodputSectionMixin:
    """The goodput section of a node's or a GPU model's page: its row of ``queries.goodput_by`` over 30 days (the
    dashboard's figures, for the site or model only: a fixed number of queries) and links to the filtered
    dashboard and interruptions."""

    goodput_range = "30d"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.request.user.has_perm(VIEW_TELEMETRY):
            group_by, filters = self.goodput_grouping()
            groups = queries.goodput_by(group_by, self.goodput_range, filters, job_hours=JOB_HOURS)
            row = next((g for g in groups if g["key"] == self.object.pk), None)
            context["goodput"] = {
                "range": telemetry_queries.get_range(self.goodput_range),
                "row": row,
                "goodput_pct": percent(row["goodput_ratio"]) if row else None,
                "gpus": settings.GOODPUT_MTBI_GPUS,
                "currency": settings.COST_CURRENCY,
                "dashboard_url": dashboard_url(range=self.goodput_range, **self.dashboard_params()),
                "interruptions_url": interruptions_url(self.goodput_range, **filters | self.list_filters()),
                **self.goodput_extra(),
            }
        return context

    def goodput_extra(self):
        return {}


class NodeGoodputMixin(GoodputSectionMixin):
    def goodput_grouping(self):
        """The node's own row: its figures are those of its row on the site's dashboard, read for it alone."""
        return "node", {"node": self.object.pk}

    def dashboard_params(self):
        return {"group_by": "node", "site": self.object.site_id or ""}

    def list_filters(self):
        return {"site": None, "node": self.object.pk}

    def goodput_extra(self):
        """Time in repair over the range, from the node's lifecycle records (one query)."""
        now = timezone.now()
        start = telemetry_queries.get_range(self.goodput_range).start(now)
        hours = lifecycle.hours_in_state_of([self.object], LifecycleState.IN_REPAIR, start, now)
        return {"repair_hours": hours[self.object.pk]}


class GPUModelGoodputMixin(GoodputSectionMixin):
    def goodput_grouping(self):
        return "gpu_model", {"gpu_model": self.object.pk}

    def dashboard_params(self):
        return {"group_by": "node", "gpu_model": self.object.pk}

    def list_filters(self):
        return {}

    def goodput_extra(self):
        """The model's repeat offenders: its nodes with ``GOODPUT_REPEAT_OFFENDER_MIN`` or more infrastructure
        interruptions in the range, worst first, each with links to its page and its interruptions."""
        minimum = settings.GOODPUT_REPEAT_OFFENDER_MIN
        offenders = queries.repeat_offenders(self.object.pk, self.goodput_range, minimum)
        for row in offenders:
            row["interruptions_url"] = interruptions_url(self.goodput_range, node=row["key"])
        return {"offenders": offenders, "offender_min": minimum}
