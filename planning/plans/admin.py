"""Django admin for capacity plans, with their workloads, bill of materials and workflow events inline."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .models import CapacityPlan, PlanEvent, PlanItem, PlanWorkload


class PlanWorkloadInline(admin.TabularInline):
    model = PlanWorkload
    extra = 0


class PlanItemInline(admin.TabularInline):
    model = PlanItem
    extra = 0


class PlanEventInline(ReadOnlyMixin, admin.TabularInline):
    """The workflow record: only ``workflow`` writes it."""

    model = PlanEvent
    extra = 0
    fields = ["at", "username", "from_status", "to_status", "comment"]
    readonly_fields = fields


@admin.register(CapacityPlan)
class CapacityPlanAdmin(SimpleHistoryAdmin):
    """Status and its who/when move only through the workflow (the plan page or the API)."""

    list_display = ["name", "status", "horizon_months", "owner", "submitted_by", "decided_by", "created"]
    list_filter = ["status"]
    search_fields = ["name", "description"]
    readonly_fields = ["status", "submitted_by", "submitted_at", "decided_by", "decided_at"]
    inlines = [PlanWorkloadInline, PlanItemInline, PlanEventInline]
