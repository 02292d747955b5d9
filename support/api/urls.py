"""``/api/support/``: included by ``portal.api.urls`` under the namespace ``support-api``."""

from django.urls import path

from portal.api.routers import PortalRouter

from . import views

router = PortalRouter()
router.register("tickets", views.TicketViewSet)
router.register("comments", views.TicketCommentViewSet)

urlpatterns = [
    path("metrics/", views.MetricsView.as_view(), name="metrics"),
    *router.urls,
]
