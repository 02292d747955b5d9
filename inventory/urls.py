from django.urls import path

from portal.generic import object_urls

from . import forms, views
from .allocations import urls as allocations_urls
from .goodput import views as goodput_views
from .models import GPU, Fabric, FabricAttachment, GPUModel, Node, NodeModel, Rack, Site, StorageSystem, Switch
from .partitionmoves import urls as partitionmoves_urls
from .statements import urls as statements_urls
from .teams import urls as teams_urls
from .telemetry import forms as telemetry_forms
from .telemetry import views as telemetry_views
from .telemetry.models import TelemetrySource

app_name = "inventory"


def lifecycle_urls(model):
    return [
        ("<int:pk>/transition/", views.TransitionView.as_view(model=model), "transition"),
        ("bulk-transition/", views.BulkTransitionView.as_view(model=model), "bulk_transition"),
    ]


urlpatterns = [
    *object_urls(GPUModel, views.GPUModelListView, views.GPUModelView, forms.GPUModelForm),
    *object_urls(NodeModel, views.NodeModelListView, views.NodeModelView, forms.NodeModelForm),
    *object_urls(Site, views.SiteListView, views.SiteView, forms.SiteForm,
                 extra=[("import/", views.SiteImportView.as_view(), "import")]),
    *object_urls(Rack, views.RackListView, views.RackView, forms.RackForm,
                 extra=[("import/", views.RackImportView.as_view(), "import")]),
    *object_urls(Node, views.NodeListView, views.NodeView, forms.NodeForm,
                 extra=[("import/", views.NodeImportView.as_view(), "import"), *lifecycle_urls(Node)]),
    *object_urls(GPU, views.GPUListView, views.GPUView, forms.GPUForm,
                 extra=[("import/", views.GPUImportView.as_view(), "import"), *lifecycle_urls(GPU)]),
    *object_urls(Fabric, views.FabricListView, views.FabricView, forms.FabricForm),
    *object_urls(Switch, views.SwitchListView, views.SwitchView, forms.SwitchForm),
    *object_urls(FabricAttachment, views.FabricAttachmentListView, views.FabricAttachmentView,
                 forms.FabricAttachmentForm),
    *object_urls(StorageSystem, views.StorageSystemListView, views.StorageSystemView, forms.StorageSystemForm),
    # Telemetry: sources, the fleet utilization dashboard.
    *object_urls(TelemetrySource, telemetry_views.TelemetrySourceListView, telemetry_views.TelemetrySourceView,
                 telemetry_forms.TelemetrySourceForm,
                 extra=[("<int:pk>/pull/", telemetry_views.PullNowView.as_view(), "pull")]),
    path("utilization/", telemetry_views.UtilizationView.as_view(), name="utilization"),
    # Goodput (issue 20): the dashboard and the interruptions list.
    path("goodput/", goodput_views.GoodputView.as_view(), name="goodput"),
    path("interruptions/", goodput_views.InterruptionListView.as_view(), name="interruption_list"),
    # Teams (issue 36): by name, not "<model>_list" and an id.
    *teams_urls.urlpatterns,
    *allocations_urls.urlpatterns,
    *partitionmoves_urls.urlpatterns,
    *statements_urls.urlpatterns,
]
