"""``/api/inventory/``: included by ``portal.api.urls`` under the namespace ``inventory-api``.

Route basenames are the model names (``node``, ``gpumodel``, ...): serializers link to
``inventory-api:<model_name>-detail``. ``utilization/`` (over the telemetry rollups) and ``allocations/`` (over
the Slurm jobs), ``goodput/`` (over the jobs and their interruptions) and ``capacity/`` (GPUs by capacity state,
``inventory.capacity``) are reports, not models.
"""

from django.urls import path

from portal.api.routers import PortalRouter

from ..allocations.api import views as allocation_views
from ..goodput.api import views as goodput_views
from ..partitionmoves.api import views as partitionmove_views
from ..statements.api import views as statements_views
from ..teams.api import views as teams_views
from ..telemetry.api import views as telemetry_views
from . import views

router = PortalRouter()
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
router.register("telemetry-sources", telemetry_views.TelemetrySourceViewSet)
router.register("unknown-series", telemetry_views.UnknownSeriesViewSet)
router.register("slurm-jobs", telemetry_views.SlurmJobViewSet)
router.register("gpu-hourly", telemetry_views.GPUHourlyViewSet)
router.register("interruptions", goodput_views.InterruptionViewSet)
router.register("statements", statements_views.StatementViewSet)
router.register("rate-cards", statements_views.RateCardViewSet)
router.register("teams", teams_views.TeamViewSet)
router.register("team-allocations", allocation_views.TeamAllocationViewSet)
router.register("allocation-requests", allocation_views.AllocationRequestViewSet)
router.register("slurm-syncs", allocation_views.SlurmSyncViewSet)
router.register("partition-moves", partitionmove_views.PartitionMoveViewSet)

urlpatterns = [
    *router.urls,
    path("utilization/", telemetry_views.UtilizationView.as_view(), name="utilization"),
    path("allocations/", telemetry_views.AllocationsView.as_view(), name="allocations"),
    path("goodput/", goodput_views.GoodputView.as_view(), name="goodput"),
    path("capacity/", views.CapacityView.as_view(), name="capacity"),
]
