"""Django admin for contracts: SLA terms and documents inline, coverage with filter_horizontal, renewal
alerts read-only (the daily task raises them). Procurement: purchase orders with their lines (and what was
delivered of each); deliveries read-only (only ``procurement.receive_delivery`` records one, as it creates the
nodes and GPUs); webhooks with a write-only secret; webhook deliveries read-only with their attempts."""

from django import forms
from django.contrib import admin
from django.db.models import Count
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .models import (
    CapacityPlan,
    Contract,
    ContractDocument,
    Delivery,
    DeliveryItem,
    OrderLine,
    PlanEvent,
    PlanItem,
    PlanWorkload,
    PurchaseOrder,
    Recommendation,
    RenewalAlert,
    SLATerm,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)


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


class OrderLineInline(admin.TabularInline):
    model = OrderLine
    extra = 0
    fields = ["node_model", "gpu_model", "description", "quantity", "unit_price", "delivered"]
    readonly_fields = ["delivered"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("node_model", "gpu_model").annotate(
            delivered_count=Count("delivered_items"))

    @admin.display(description="delivered")
    def delivered(self, line):
        return getattr(line, "delivered_count", 0)


@admin.register(PurchaseOrder)
class PurchaseOrderAdmin(SimpleHistoryAdmin):
    list_display = ["__str__", "vendor", "contract", "site", "status", "ordered_on", "created_by"]
    list_filter = ["status", "site", "vendor"]
    search_fields = ["reference", "vendor", "external_id", "contract__reference"]
    list_select_related = ["contract", "site", "created_by"]
    date_hierarchy = "ordered_on"
    readonly_fields = ["status", "created_by"]  # the status follows the deliveries (or the cancel action)
    autocomplete_fields = ["contract"]
    inlines = [OrderLineInline]


class DeliveryItemInline(ReadOnlyMixin, admin.TabularInline):
    model = DeliveryItem
    fields = ["line", "serial", "node", "gpu"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("line__node_model", "line__gpu_model", "node",
                                                            "gpu__node")


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyMixin, SimpleHistoryAdmin):
    list_display = ["__str__", "order", "delivered_on", "external_id", "item_count", "created_by"]
    list_filter = ["delivered_on", "order__site"]
    search_fields = ["order__reference", "order__vendor", "external_id", "items__serial"]
    list_select_related = ["order", "created_by"]
    date_hierarchy = "delivered_on"
    inlines = [DeliveryItemInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(item_count=Count("items"))

    @admin.display(description="items", ordering="item_count")
    def item_count(self, delivery):
        return delivery.item_count


class WebhookForm(forms.ModelForm):
    """The secret is write-only: never shown; left empty on a change, the stored one is kept."""

    url = forms.URLField(max_length=500, assume_scheme="https")
    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), required=False, max_length=200,
                             help_text="Signs each payload (HMAC-SHA256). Leave empty to keep the current secret.")

    class Meta:
        model = Webhook
        fields = ["name", "url", "secret", "events", "enabled"]

    def clean_secret(self):
        secret = self.cleaned_data["secret"]
        if not secret and not self.instance.pk:
            raise forms.ValidationError("A new webhook needs a secret.")
        return secret or self.instance.secret


@admin.register(Webhook)
class WebhookAdmin(SimpleHistoryAdmin):
    form = WebhookForm
    list_display = ["name", "url", "events", "enabled"]
    list_filter = ["enabled"]
    search_fields = ["name", "url"]


class WebhookAttemptInline(ReadOnlyMixin, admin.TabularInline):
    model = WebhookAttempt
    fields = ["at", "status_code", "error", "duration_ms"]
    readonly_fields = fields


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "webhook", "event", "status", "attempts", "last_status_code", "created",
                    "next_attempt_at"]
    list_filter = ["status", "event", "webhook"]
    search_fields = ["webhook__name", "last_error"]
    list_select_related = ["webhook"]
    date_hierarchy = "created"
    inlines = [WebhookAttemptInline]


class PlanWorkloadInline(admin.TabularInline):
    model = PlanWorkload
    extra = 0


class PlanItemInline(admin.TabularInline):
    model = PlanItem
    extra = 0


class PlanEventInline(ReadOnlyMixin, admin.TabularInline):
    """The workflow record: only ``planning.plans`` writes it."""

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


@admin.register(Recommendation)
class RecommendationAdmin(admin.ModelAdmin):
    """Written by the analysis (``planning.recommendations``); accepted or dismissed on its page or the API."""

    list_display = ["title", "kind", "severity", "status", "partition", "site", "detected_at", "decided_by", "plan"]
    list_filter = ["status", "kind", "severity"]
    search_fields = ["title", "summary", "partition", "key"]
    list_select_related = ["site", "decided_by", "plan"]
    readonly_fields = ["key", "kind", "evidence", "created", "updated", "detected_at", "decided_by", "decided_at",
                       "plan"]
