"""Filter sets of the purchase order and delivery lists."""

import django_filters

from .models import Delivery, PurchaseOrder


class PurchaseOrderFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="reference", lookup_expr="icontains", label="Reference")

    class Meta:
        model = PurchaseOrder
        fields = ["q", "status", "vendor", "contract", "site"]


class DeliveryFilterSet(django_filters.FilterSet):
    class Meta:
        model = Delivery
        fields = ["order", "external_id"]
