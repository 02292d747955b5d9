"""Tables for the contract pages (django-tables2): sortable columns, CSV export of the filtered rows."""

import django_tables2 as tables
from django.utils import timezone
from django.utils.html import format_html

from inventory.models import Node

from .models import CapacityPlan, Contract


class ContractTable(tables.Table):
    reference = tables.Column(linkify=True)
    kind = tables.Column()
    start = tables.DateColumn(format="Y-m-d")
    notice_deadline = tables.DateColumn(format="Y-m-d", verbose_name="Notice by", orderable=False)
    owner = tables.Column(accessor="owner__username", verbose_name="Owner")

    class Meta:
        model = Contract
        fields = ("reference", "vendor", "kind", "title", "start", "end", "notice_deadline", "auto_renew", "owner",
                  "one_off_cost", "monthly_cost", "gpu_hour_cost", "currency")

    def render_end(self, record, value):
        if value is None:
            return "—"
        if value < timezone.localdate():
            return format_html('<span class="expired" title="Ended">{}</span>', value.isoformat())
        return value.isoformat()


class UncoveredNodeTable(tables.Table):
    hostname = tables.Column(linkify=True)
    site = tables.Column(linkify=True)
    rack = tables.Column(accessor="rack__name", verbose_name="Rack")
    reason = tables.Column()
    warranty_end = tables.DateColumn(format="Y-m-d")

    class Meta:
        model = Node
        fields = ("hostname", "site", "rack", "reason", "warranty_end", "owner_team", "serial")
        empty_text = "Every in-service node has an active support contract and a warranty that has not ended."



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
