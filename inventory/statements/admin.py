"""Admin of rate cards (with their rates), statements (read only: issued by ``issuing``) and adjustments (recorded
through ``issuing.adjust``'s checks: a closed month, then read only once on a statement)."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .models import Adjustment, ClosedMonth, Rate, RateCard, Statement, StatementLine


class RateInline(admin.TabularInline):
    model = Rate
    extra = 1

    def has_change_permission(self, request, obj=None):  # a used card's rates are frozen
        return super().has_change_permission(request, obj) and not (obj and obj.in_use)

    has_add_permission = has_delete_permission = has_change_permission


@admin.register(RateCard)
class RateCardAdmin(SimpleHistoryAdmin):
    list_display = ("effective_from", "currency", "note")
    inlines = [RateInline]

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and not (obj and obj.in_use)


class StatementLineInline(ReadOnlyMixin, admin.TabularInline):
    model = StatementLine
    fields = ("kind", "partition", "gpu_model_name", "user", "gpu_hours", "price_per_gpu_hour", "amount")
    readonly_fields = fields


@admin.register(Statement)
class StatementAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("month", "team", "gpu_hours", "charges", "credit", "adjustments", "total", "currency")
    list_filter = ("month",)
    inlines = [StatementLineInline]


@admin.register(ClosedMonth)
class ClosedMonthAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("month", "rate_card", "issued_at", "issued_by", "fleet_gpu_hours")


@admin.register(Adjustment)
class AdjustmentAdmin(admin.ModelAdmin):
    list_display = ("team", "corrects", "amount", "gpu_hours", "reason", "created_by", "statement")
    exclude = ("statement", "created_by")

    def has_change_permission(self, request, obj=None):  # once on a statement, it is part of that statement
        return super().has_change_permission(request, obj) and not (obj and obj.statement_id)

    has_delete_permission = has_change_permission

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
