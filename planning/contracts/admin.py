"""Django admin for contracts: SLA terms and documents inline, coverage with filter_horizontal, renewal
alerts read-only (the daily task raises them)."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from .models import Contract, ContractDocument, RenewalAlert, SLATerm


class SLATermInline(admin.TabularInline):
    model = SLATerm
    extra = 0
    max_num = 4


class ContractDocumentInline(admin.TabularInline):
    model = ContractDocument
    extra = 0
    fields = ["name", "file", "content_type", "size", "uploaded_by", "uploaded"]
    readonly_fields = ["content_type", "size", "uploaded_by", "uploaded"]

    def has_add_permission(self, request, obj=None):
        return False  # uploads go through the contract page, which checks size and type


@admin.register(Contract)
class ContractAdmin(SimpleHistoryAdmin):
    list_display = ["__str__", "kind", "title", "start", "end", "notice_deadline", "owner", "currency"]
    list_filter = ["kind", "auto_renew", "currency"]
    search_fields = ["vendor", "reference", "title"]
    date_hierarchy = "start"
    filter_horizontal = ["sites", "racks", "nodes", "gpus", "switches", "storage_systems"]
    autocomplete_fields = ["owner"]
    inlines = [SLATermInline, ContractDocumentInline]


@admin.register(RenewalAlert)
class RenewalAlertAdmin(admin.ModelAdmin):
    list_display = ["contract", "notice_deadline", "raised", "emailed_to", "dismissed"]
    list_filter = ["dismissed"]
    readonly_fields = ["contract", "notice_deadline", "raised", "emailed_to"]

    def has_add_permission(self, request):
        return False
