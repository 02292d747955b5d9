"""``/api/planning/``: included by ``portal.api.urls`` under the namespace ``planning-api``."""

from django.urls import path

from portal.api.routers import PortalRouter

from ..calibration.api.views import CalibrationView
from ..contracts.api.views import ContractViewSet
from ..plans.api.views import CapacityPlanViewSet
from ..procurement.api.views import DeliveryViewSet, PurchaseOrderViewSet
from ..recommendations.api.views import RecommendationViewSet
from ..sizing.api.views import SizingView
from ..webhooks.api.views import WebhookDeliveryViewSet, WebhookViewSet

router = PortalRouter()
router.register("contracts", ContractViewSet)
router.register("plans", CapacityPlanViewSet)
router.register("purchase-orders", PurchaseOrderViewSet)
router.register("deliveries", DeliveryViewSet)
router.register("webhooks", WebhookViewSet)
router.register("webhook-deliveries", WebhookDeliveryViewSet)
router.register("recommendations", RecommendationViewSet)

urlpatterns = [
    path("sizing/", SizingView.as_view(), name="sizing"),
    path("calibration/", CalibrationView.as_view(), name="calibration"),
    *router.urls,
]
