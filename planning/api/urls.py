"""``/api/planning/``: included by ``portal.api.urls`` under the namespace ``planning-api``."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("contracts", views.ContractViewSet)
router.register("purchase-orders", views.PurchaseOrderViewSet)
router.register("deliveries", views.DeliveryViewSet)

urlpatterns = [
    path("sizing/", views.SizingView.as_view(), name="sizing"),
    *router.urls,
]
