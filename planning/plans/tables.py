"""The capacity plan list's table (django-tables2), with each plan's answer from its stored summary
(``planning.plans.summary``): read from the row, never computed here."""

import django_tables2 as tables
from django.conf import settings
from django.template.defaultfilters import floatformat
from django.utils import timezone

from portal.tables import ColumnChoice

from . import months
from .models import CapacityPlan
from .summary import is_stale


def answer_of(record):
    return record.summary or {}


class SummaryColumn(tables.Column):
    """A figure of the plan's stored summary; a dash until the plan is analysed."""

    def __init__(self, key, *args, **kwargs):
        self.key = key
        super().__init__(*args, accessor="summary", orderable=False, empty_values=(), **kwargs)

    def render(self, record):
        summary = answer_of(record)
        if not summary:
            return "—"
        return self.shown(summary)

    def value(self, record):
        return self.render(record)

    def shown(self, summary):
        return summary.get(self.key)


class OptionColumn(SummaryColumn):
    def shown(self, summary):
        if summary["recommended"]:
            return summary["label"] + (f" — {summary['warning']}" if summary["warning"] else "")
        return "none serves the demand" if summary["needed"] else "none needed"


class CostColumn(SummaryColumn):
    def shown(self, summary):
        if summary["cost"] is None:
            return "unknown" if summary["recommended"] else "—"
        return floatformat(summary["cost"], "0g")


class GPUsColumn(SummaryColumn):
    def shown(self, summary):
        return floatformat(summary["gpus_added"], "0g")


class MetColumn(SummaryColumn):
    def shown(self, summary):
        return summary["met_from"][:7] if summary["met_from"] else "not within the horizon"


class AnalysedColumn(SummaryColumn):
    """When the summary was computed, and whether the plan changed since."""

    def render(self, record):
        if not record.summary_at:
            return "not analysed yet"
        shown = f"as of {timezone.localtime(record.summary_at):%Y-%m-%d %H:%M}"
        return f"{shown}, changed since" if is_stale(record) else shown


class CapacityPlanTable(ColumnChoice, tables.Table):
    name = tables.Column(linkify=True)
    recommended = OptionColumn("recommended", verbose_name="Recommended option",
                               attrs={"td": {"class": "wrap"}})  # "Hybrid: own the base, rent the peak — Warning: …"
    gpus_added = GPUsColumn("gpus_added", verbose_name="GPUs added")
    cost = CostColumn("cost", verbose_name=f"Cost ({settings.COST_CURRENCY})")
    met_from = MetColumn("met_from", verbose_name="Demand met from")
    analysed = AnalysedColumn("summary_at", verbose_name="Analysis")
    owner = tables.Column(accessor="owner__username", verbose_name="Owner")
    submitted_by = tables.Column(accessor="submitted_by__username", verbose_name="Submitted by")
    decided_by = tables.Column(accessor="decided_by__username", verbose_name="Decided by")
    workload_count = tables.Column("Workloads")
    item_count = tables.Column("Items")
    horizon_months = tables.Column("Months", order_by=("first_month", "horizon_months"))

    required_columns = ("name",)
    # The plan's answer and whether it is still current (Analysis) fit 1280 px; who did what is a tick away.
    default_columns = ("name", "status", "horizon_months", "recommended", "gpus_added", "cost", "met_from",
                       "analysed")

    def render_horizon_months(self, record):
        return f"{months.label(record.first_month)} to {months.label(record.last_month)}"

    class Meta:
        model = CapacityPlan
        fields = ("name", "status", "horizon_months", "recommended", "gpus_added", "cost", "met_from", "analysed",
                  "owner", "workload_count", "item_count", "submitted_by", "submitted_at", "decided_by",
                  "decided_at", "created")
