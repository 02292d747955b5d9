"""Procurement pages: purchase orders and deliveries, read-only (they come in over the API). Declarations over
``portal.generic``."""

from django.db.models import Count

from portal.generic import ObjectListView, ObjectView, RelatedTable

from . import orders
from .filters import DeliveryFilterSet, PurchaseOrderFilterSet
from .models import Delivery, PurchaseOrder
from .tables import DeliveryItemTable, DeliveryTable, OrderLineTable, PurchaseOrderTable


class PurchaseOrderListView(ObjectListView):
    queryset = PurchaseOrder.objects.select_related("contract", "site")
    filterset_class = PurchaseOrderFilterSet
    table_class = PurchaseOrderTable


class ReadOnlyObjectView(ObjectView):
    """Orders and deliveries come in over the API and are not edited in the pages."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "can_edit": False, "can_delete": False}


class PurchaseOrderView(ReadOnlyObjectView):
    queryset = PurchaseOrder.objects.select_related("contract", "site", "created_by")
    related_tables = [
        RelatedTable("Lines", OrderLineTable,
                     lambda o: orders.lines_with_counts().select_related("order").filter(order=o)),
        RelatedTable("Deliveries", DeliveryTable, lambda o: deliveries().filter(order=o),
                     "planning:delivery_list", "order"),
    ]


def deliveries():
    return Delivery.objects.select_related("order", "created_by").annotate(item_count=Count("items"))


class DeliveryListView(ObjectListView):
    queryset = deliveries()
    filterset_class = DeliveryFilterSet
    table_class = DeliveryTable


class DeliveryView(ReadOnlyObjectView):
    queryset = Delivery.objects.select_related("order", "created_by")
    related_tables = [
        RelatedTable("Items", DeliveryItemTable,
                     lambda d: d.items.select_related("line__node_model", "line__gpu_model", "node", "gpu__node")),
    ]
