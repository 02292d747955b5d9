"""``/api/support/``: included by ``portal.api.urls`` under the namespace ``support-api``."""

from django.urls import path

from portal.api.routers import PortalRouter

from ..eventrules.api.views import NotificationRuleViewSet
from . import views

router = PortalRouter()
router.register("tickets", views.TicketViewSet)
router.register("comments", views.TicketCommentViewSet)
router.register("notification-rules", NotificationRuleViewSet)

urlpatterns = [
    path("metrics/", views.MetricsView.as_view(), name="metrics"),
    *router.urls,
]
