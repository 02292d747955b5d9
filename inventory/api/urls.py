"""``/api/inventory/``: included by ``portal.api.urls`` under the namespace ``inventory-api``.

Route basenames are the model names (``node``, ``gpumodel``, ...): serializers link to
``inventory-api:<model_name>-detail``. ``utilization/`` is a report over the telemetry rollups, not a model.
"""

from django.urls import path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("sites", views.SiteViewSet)
router.register("racks", views.RackViewSet)
router.register("gpu-models", views.GPUModelViewSet)
router.register("node-models", views.NodeModelViewSet)
router.register("nodes", views.NodeViewSet)
router.register("gpus", views.GPUViewSet)
router.register("fabrics", views.FabricViewSet)
router.register("switches", views.SwitchViewSet)
router.register("fabric-attachments", views.FabricAttachmentViewSet)
router.register("storage-systems", views.StorageSystemViewSet)
router.register("telemetry-sources", views.TelemetrySourceViewSet)
router.register("unknown-series", views.UnknownSeriesViewSet)

urlpatterns = [
    *router.urls,
    path("utilization/", views.UtilizationView.as_view(), name="utilization"),
]
