"""Tables of the procurement pages (django-tables2)."""

import django_tables2 as tables

from ..common import money
from .models import Delivery, DeliveryItem, PurchaseOrder


class PurchaseOrderTable(tables.Table):
    reference = tables.Column(linkify=True)
    contract = tables.Column(linkify=True)
    site = tables.Column(linkify=True)

    class Meta:
        model = PurchaseOrder
        fields = ["reference", "vendor", "contract", "site", "status", "ordered_on", "currency"]
        # Orders are not entered on the pages: say where they come from.
        empty_text = ("No purchase orders yet: the procurement system posts them over the API, against an approved "
                      "capacity plan or a purchase contract (docs/procurement.md).")


class OrderLineTable(tables.Table):
    item = tables.Column(accessor="pk", verbose_name="Item", orderable=False)
    quantity = tables.Column("Ordered")
    delivered_count = tables.Column("Delivered")
    remaining = tables.Column(accessor="pk", verbose_name="To come", orderable=False)
    unit_price = tables.Column()

    def render_item(self, record):
        return record.node_model or record.gpu_model or record.description

    def render_remaining(self, record):
        return record.quantity - record.delivered_count

    def render_unit_price(self, record, value):
        return money(value, record.order.currency) if value else f"0 {record.order.currency}"


class DeliveryTable(tables.Table):
    id = tables.Column("Delivery", linkify=True)
    order = tables.Column(linkify=True)
    item_count = tables.Column("Items")

    class Meta:
        model = Delivery
        fields = ["id", "order", "external_id", "delivered_on", "item_count", "created_by"]
        empty_text = ("No deliveries yet: the procurement system posts them over the API as units arrive, and the "
                      "delivered nodes and GPUs appear in the inventory.")


class DeliveryItemTable(tables.Table):
    serial = tables.Column()
    line = tables.Column()
    node = tables.Column(linkify=True)
    gpu = tables.Column("GPU", linkify=True)

    class Meta:
        model = DeliveryItem
        fields = ["serial", "line", "node", "gpu"]
