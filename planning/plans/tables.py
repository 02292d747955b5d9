"""The capacity plan list's table (django-tables2)."""

import django_tables2 as tables

from .models import CapacityPlan


class CapacityPlanTable(tables.Table):
    name = tables.Column(linkify=True)
    owner = tables.Column(accessor="owner__username", verbose_name="Owner")
    submitted_by = tables.Column(accessor="submitted_by__username", verbose_name="Submitted by")
    decided_by = tables.Column(accessor="decided_by__username", verbose_name="Decided by")
    workload_count = tables.Column("Workloads")
    item_count = tables.Column("Items")

    class Meta:
        model = CapacityPlan
        fields = ("name", "status", "horizon_months", "owner", "workload_count", "item_count", "submitted_by",
                  "submitted_at", "decided_by", "decided_at", "created")
