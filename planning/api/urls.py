"""``/api/planning/``: included by ``portal.api.urls`` under the namespace ``planning-api``."""

from django.urls import path

from portal.api.routers import PortalRouter

from . import recommendations, views, webhooks

router = PortalRouter()
router.register("contracts", views.ContractViewSet)
router.register("plans", views.CapacityPlanViewSet)
router.register("purchase-orders", views.PurchaseOrderViewSet)
router.register("deliveries", views.DeliveryViewSet)
router.register("webhooks", webhooks.WebhookViewSet)
router.register("webhook-deliveries", webhooks.WebhookDeliveryViewSet)
router.register("recommendations", recommendations.RecommendationViewSet)

urlpatterns = [
    path("sizing/", views.SizingView.as_view(), name="sizing"),
    *router.urls,
]
