"""``/api/inventory/``: included by ``portal.api.urls`` under the namespace ``inventory-api``.

Route basenames are the model names (``node``, ``gpumodel``, ...): serializers link to
``inventory-api:<model_name>-detail``.
"""

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

urlpatterns = router.urls
