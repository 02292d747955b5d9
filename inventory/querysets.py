"""The querysets behind every inventory list, shared by the pages and the API: related rows are joined
and counts are correlated subqueries, so a list costs the same few queries however many rows it has."""

from django.db.models import F

from portal.db import related_count, without_timestamps

from .lifecycle import state_since
from .models import GPU, Fabric, FabricAttachment, GPUModel, Node, NodeModel, Rack, Site, StorageSystem, Switch
from .telemetry.models import SlurmJob, TelemetrySource, UnknownSeries


def gpu_models():
    return GPUModel.objects.annotate(gpu_count=related_count(GPU, "gpu_model"))


def node_models():
    return NodeModel.objects.annotate(node_count=related_count(Node, "node_model"))


def sites():
    return Site.objects.annotate(rack_count=related_count(Rack, "site"), node_count=related_count(Node, "site"))


def racks():
    return Rack.objects.select_related("site").annotate(node_count=related_count(Node, "rack"))


def nodes():
    # rack__site: a rack is named "site / rack" on the node's page and in its history.
    return Node.objects.select_related("site", "rack__site", "node_model").annotate(
        gpu_count=related_count(GPU, "node"), state_since=state_since(Node))


def node_rows():
    """The nodes as their tables show them (``tables.NodeTable``): the names of their site, rack and model joined in,
    not the three objects (a 500-row page builds 500 model instances instead of about 2,000)."""
    return without_timestamps(nodes().select_related(None).annotate(
        site_name=F("site__name"), rack_name=F("rack__name"), node_model_name=F("node_model__name")))


def gpus():
    return GPU.objects.select_related("node", "gpu_model").annotate(state_since=state_since(GPU))


def gpu_rows():
    """The GPUs as their tables show them (``tables.GPUTable``): their node's hostname and model's name joined in."""
    return without_timestamps(gpus().select_related(None).annotate(
        node_hostname=F("node__hostname"), gpu_model_name=F("gpu_model__name")))


def fabrics():
    return Fabric.objects.select_related("site").annotate(
        switch_count=related_count(Switch, "fabric"), node_count=related_count(FabricAttachment, "fabric")
    )


def switches():
    return Switch.objects.select_related("fabric", "site", "rack")


def fabric_attachments():
    return FabricAttachment.objects.select_related("node", "fabric", "switch")


def storage_systems():
    return StorageSystem.objects.select_related("site")


def telemetry_sources():
    return TelemetrySource.objects.select_related("site").annotate(unknown_count=related_count(UnknownSeries, "source"))


def unknown_series():
    return UnknownSeries.objects.select_related("source")


def slurm_jobs():
    return SlurmJob.objects.all()
