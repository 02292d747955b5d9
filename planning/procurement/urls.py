"""Procurement pages: list and detail of purchase orders and deliveries; "add" leads to the API."""

from django.urls import path
from django.views.generic import RedirectView

from .models import Delivery, PurchaseOrder
from .views import DeliveryListView, DeliveryView, PurchaseOrderListView, PurchaseOrderView


def read_only_urls(model, list_view, detail_view, api_url):
    """List and detail; "add" leads to the API endpoint (browsable), where orders and deliveries are created."""
    name, prefix = model._meta.model_name, str(model._meta.verbose_name_plural).replace(" ", "-").lower()
    return [
        path(f"{prefix}/", list_view.as_view(), name=f"{name}_list"),
        path(f"{prefix}/add/", RedirectView.as_view(pattern_name=api_url), name=f"{name}_add"),
        path(f"{prefix}/<int:pk>/", detail_view.as_view(), name=f"{name}_detail"),
    ]


urlpatterns = [
    *read_only_urls(PurchaseOrder, PurchaseOrderListView, PurchaseOrderView, "planning-api:purchaseorder-list"),
    *read_only_urls(Delivery, DeliveryListView, DeliveryView, "planning-api:delivery-list"),
]
