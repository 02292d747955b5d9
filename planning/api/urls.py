"""``/api/planning/``: included by ``portal.api.urls`` under the namespace ``planning-api``."""

from rest_framework.routers import DefaultRouter

router = DefaultRouter()

urlpatterns = router.urls
