"""The capacity plan list's table (django-tables2)."""

import django_tables2 as tables

from . import months
from .models import CapacityPlan


class CapacityPlanTable(tables.Table):
    name = tables.Column(linkify=True)
    owner = tables.Column(accessor="owner__username", verbose_name="Owner")
    submitted_by = tables.Column(accessor="submitted_by__username", verbose_name="Submitted by")
    decided_by = tables.Column(accessor="decided_by__username", verbose_name="Decided by")
    workload_count = tables.Column("Workloads")
    item_count = tables.Column("Items")
    horizon_months = tables.Column("Months", order_by=("first_month", "horizon_months"))

    def render_horizon_months(self, record):
        return f"{months.label(record.first_month)} to {months.label(record.last_month)}"

    class Meta:
        model = CapacityPlan
        fields = ("name", "status", "horizon_months", "owner", "workload_count", "item_count", "submitted_by",
                  "submitted_at", "decided_by", "decided_at", "created")
