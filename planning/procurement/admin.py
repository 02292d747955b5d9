"""Django admin for procurement: purchase orders with their lines (and what was delivered of each); deliveries
read-only (only ``orders.receive_delivery`` records one, as it creates the nodes and GPUs)."""

from django.contrib import admin
from django.db.models import Count
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .models import Delivery, DeliveryItem, OrderLine, PurchaseOrder


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
