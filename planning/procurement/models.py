"""Purchase orders (of an approved capacity plan or under a purchase/expansion contract), their lines, and the
deliveries with the nodes and GPUs created for each delivered unit."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from simple_history.models import HistoricalRecords

from inventory.models import GPU, Node, Site
from portal.history import ChangeRecord
from portal.models import PortalModel

from ..common import MONEY, CatalogLine
from ..contracts.models import Contract


class PurchaseOrder(PortalModel):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PARTIAL = "partial", "Partly delivered"
        DELIVERED = "delivered", "Delivered"
        CANCELLED = "cancelled", "Cancelled"

    contract = models.ForeignKey(Contract, on_delete=models.PROTECT, related_name="purchase_orders", null=True,
                                 blank=True, help_text="The purchase or expansion contract the order belongs to.")
    plan = models.ForeignKey("CapacityPlan", on_delete=models.PROTECT, related_name="purchase_orders", null=True,
                             blank=True, help_text="The approved capacity plan the order carries out.")
    vendor = models.CharField(max_length=100)
    reference = models.CharField(max_length=100, help_text="The order number in the procurement system.")
    external_id = models.CharField(max_length=100, blank=True, help_text="Unique per client: makes retries safe.")
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="purchase_orders",
                             help_text="Where the delivered hardware goes.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN, db_index=True)
    currency = models.CharField(max_length=3, default="USD")
    ordered_on = models.DateField(default=timezone.localdate)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-ordered_on", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["vendor", "reference"], name="po_unique_reference",
                                    violation_error_message="This vendor already has an order with this reference."),
            models.UniqueConstraint(fields=["created_by", "external_id"], condition=~models.Q(external_id=""),
                                    name="po_unique_external_id",
                                    violation_error_message="You already sent an order with this external id."),
        ]

    def __str__(self):
        return f"PO {self.reference}"


class OrderLine(CatalogLine):
    """An order's line: so many of one catalog model at a unit price."""

    order = models.ForeignKey(PurchaseOrder, on_delete=models.CASCADE, related_name="lines")
    unit_price = models.DecimalField(**MONEY)

    class Meta:
        ordering = ["order", "pk"]


class Delivery(PortalModel):
    order = models.ForeignKey(PurchaseOrder, on_delete=models.PROTECT, related_name="deliveries")
    external_id = models.CharField(max_length=100, blank=True)
    delivered_on = models.DateField(default=timezone.localdate)
    note = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-delivered_on", "-pk"]
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(fields=["created_by", "external_id"], condition=~models.Q(external_id=""),
                                    name="delivery_unique_external_id",
                                    violation_error_message="You already sent a delivery with this external id."),
        ]

    def __str__(self):
        return f"Delivery {self.pk} of {self.order}"


class DeliveryItem(models.Model):
    """One delivered unit of an order line; the node or GPU the portal created for it."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="items")
    line = models.ForeignKey(OrderLine, on_delete=models.PROTECT, related_name="delivered_items")
    serial = models.CharField(max_length=100)
    node = models.OneToOneField(Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="delivery_item")
    gpu = models.OneToOneField(GPU, on_delete=models.SET_NULL, null=True, blank=True, related_name="delivery_item")

    class Meta:
        ordering = ["delivery", "pk"]

    def __str__(self):
        return self.serial
