"""Procurement pages: list and detail of purchase orders and deliveries; "add" leads to the API (browsable), where
orders and deliveries are created."""

from django.views.generic import RedirectView

from portal.generic import object_urls

from .models import Delivery, PurchaseOrder
from .views import DeliveryListView, DeliveryView, PurchaseOrderListView, PurchaseOrderView

urlpatterns = [
    *object_urls(PurchaseOrder, PurchaseOrderListView, PurchaseOrderView, read_only=True,
                 add_view=RedirectView.as_view(pattern_name="planning-api:purchaseorder-list")),
    *object_urls(Delivery, DeliveryListView, DeliveryView, read_only=True,
                 add_view=RedirectView.as_view(pattern_name="planning-api:delivery-list")),
]
