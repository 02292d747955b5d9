"""One serializer per inventory model: every model field (foreign keys as primary keys), plus a few
read-only names and counts that the viewsets' querysets provide without extra queries. Telemetry's serializers
are in ``telemetry/api/serializers.py``."""

from django.urls import NoReverseMatch, reverse
from rest_framework import serializers

from portal.api.serializers import COMMON, TIMESTAMPS, EnumChoiceField, PortalModelSerializer

from ..models import (
    GPU,
    Fabric,
    FabricAttachment,
    GPUModel,
    LifecycleState,
    Node,
    NodeModel,
    Rack,
    Site,
    StateTransition,
    StorageSystem,
    Switch,
)


class GPUModelSerializer(PortalModelSerializer):
    gpu_count = serializers.IntegerField(read_only=True, help_text="GPUs of this model in the inventory.")

    class Meta:
        model = GPUModel
        fields = [
            *COMMON, "vendor", "name", "form_factor", "memory_gb", "memory_bandwidth_tbs", "bf16_tflops",
            "fp8_tflops", "tdp_w", "nvlink_gbs", "gpu_count", *TIMESTAMPS,
        ]


class NodeModelSerializer(PortalModelSerializer):
    node_count = serializers.IntegerField(read_only=True, help_text="Nodes of this model in the inventory.")

    class Meta:
        model = NodeModel
        fields = [
            *COMMON, "vendor", "name", "cpu_cores", "ram_gb", "gpu_slots", "max_power_w", "height_u", "list_price",
            "node_count",
            *TIMESTAMPS,
        ]


class SiteSerializer(PortalModelSerializer):
    rack_count = serializers.IntegerField(read_only=True)
    node_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Site
        fields = [
            *COMMON, "name", "location", "power_capacity_kw", "cooling_capacity_kw", "pue", "energy_price_per_kwh",
            "rack_cost_per_month", "description", "rack_count",
            "node_count", *TIMESTAMPS,
        ]


class RackSerializer(PortalModelSerializer):
    site_name = serializers.CharField(source="site.name", read_only=True)
    node_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Rack
        fields = [*COMMON, "site", "site_name", "name", "height_u", "power_budget_kw", "node_count", *TIMESTAMPS]


STATE_HELP = (
    "Lifecycle state. Set it when creating (default: delivered); afterwards change it with the "
    "transition action, not with PUT or PATCH."
)


class LifecycleSerializerMixin:
    """``state`` may be set when an object is created (any state; default delivered); afterwards it
    changes only through the lifecycle action, which checks the rules and records who and why."""

    def validate_state(self, value):
        if self.instance is not None and value != self.instance.state:
            opts = self.instance._meta
            try:
                path = reverse(f"{opts.app_label}-api:{opts.model_name}-transition", args=[self.instance.pk])
            except NoReverseMatch:
                path = "…/transition/"
            raise serializers.ValidationError(
                f"The state cannot be edited; change it with POST {path} and a body "
                '{"to": "<state>", "reason": "<why>"}.'
            )
        return value


class NodeSerializer(LifecycleSerializerMixin, PortalModelSerializer):
    """A server: where it is (site, rack, position), what it is (node model) and its lifecycle state."""

    state = EnumChoiceField(LifecycleState, required=False, help_text=STATE_HELP)
    site_name = serializers.CharField(source="site.name", read_only=True)
    rack_name = serializers.CharField(source="rack.name", read_only=True, allow_null=True)
    node_model_name = serializers.CharField(source="node_model.name", read_only=True)
    gpu_count = serializers.IntegerField(read_only=True, help_text="GPUs installed in the node.")
    state_since = serializers.DateTimeField(
        read_only=True, help_text="When it entered its current state (its latest lifecycle record; else its creation).")

    class Meta:
        model = Node
        fields = [
            *COMMON, "hostname", "state", "serial", "asset_tag", "site", "site_name", "rack", "rack_name",
            "position", "node_model", "node_model_name", "gpu_count", "partition", "owner_team", "warranty_end",
            "state_since", *TIMESTAMPS,
        ]


class GPUSerializer(LifecycleSerializerMixin, PortalModelSerializer):
    """A GPU, installed in a node's slot or spare on the shelf (no node, no slot)."""

    state = EnumChoiceField(LifecycleState, required=False, help_text=STATE_HELP)
    node_hostname = serializers.CharField(source="node.hostname", read_only=True, allow_null=True)
    site = serializers.IntegerField(
        source="node.site_id", read_only=True, allow_null=True, help_text="The node's site; empty for a spare."
    )
    gpu_model_name = serializers.CharField(source="gpu_model.name", read_only=True)
    state_since = serializers.DateTimeField(
        read_only=True, help_text="When it entered its current state (its latest lifecycle record; else its creation).")

    class Meta:
        model = GPU
        fields = [
            *COMMON, "node", "node_hostname", "site", "slot", "gpu_model", "gpu_model_name", "state", "serial",
            "uuid", "state_since", *TIMESTAMPS,
        ]


class TransitionSerializer(serializers.Serializer):
    """The body of a lifecycle transition."""

    to = EnumChoiceField(LifecycleState, help_text="The target lifecycle state.")
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="",
                                   help_text="Why; kept with the lifecycle record and the change history.")
    from_state = EnumChoiceField(LifecycleState, required=False, allow_blank=True, default="",
                                 help_text="Optional: the state the client saw; if it is no longer the stored "
                                           "one, the move is refused with 409 and nothing changes.")


class StateTransitionSerializer(serializers.ModelSerializer):
    """One lifecycle record of a node or GPU (read-only)."""

    from_state = EnumChoiceField(LifecycleState, allow_blank=True, read_only=True, help_text="Empty for the first.")
    to_state = EnumChoiceField(LifecycleState, read_only=True)

    class Meta:
        model = StateTransition
        fields = ["id", "from_state", "to_state", "user", "username", "reason", "created"]
        read_only_fields = fields


class FabricSerializer(PortalModelSerializer):
    site_name = serializers.CharField(source="site.name", read_only=True, allow_null=True)
    switch_count = serializers.IntegerField(read_only=True)
    node_count = serializers.IntegerField(read_only=True, help_text="Nodes attached to the fabric.")

    class Meta:
        model = Fabric
        fields = [
            *COMMON, "name", "kind", "link_speed_gbps", "site", "site_name", "description", "switch_count",
            "node_count", *TIMESTAMPS,
        ]


class SwitchSerializer(PortalModelSerializer):
    fabric_name = serializers.CharField(source="fabric.name", read_only=True)
    site_name = serializers.CharField(source="site.name", read_only=True)
    rack_name = serializers.CharField(source="rack.name", read_only=True, allow_null=True)

    class Meta:
        model = Switch
        fields = [
            *COMMON, "name", "fabric", "fabric_name", "site", "site_name", "rack", "rack_name", "model", "serial",
            "ports", "uplinks", "oversubscription_ratio", *TIMESTAMPS,
        ]


class FabricAttachmentSerializer(PortalModelSerializer):
    node_hostname = serializers.CharField(source="node.hostname", read_only=True)
    fabric_name = serializers.CharField(source="fabric.name", read_only=True)
    switch_name = serializers.CharField(source="switch.name", read_only=True, allow_null=True)
    bandwidth_gbps = serializers.IntegerField(read_only=True, help_text="ports × speed per port.")

    class Meta:
        model = FabricAttachment
        fields = [
            *COMMON, "node", "node_hostname", "fabric", "fabric_name", "switch", "switch_name", "ports",
            "speed_gbps", "bandwidth_gbps", *TIMESTAMPS,
        ]


class StorageSystemSerializer(PortalModelSerializer):
    site_name = serializers.CharField(source="site.name", read_only=True)
    used_percent = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = StorageSystem
        fields = [
            *COMMON, "name", "site", "site_name", "kind", "tier", "capacity_tb", "used_tb", "used_percent",
            "read_gbs", "write_gbs", *TIMESTAMPS,
        ]


class CapacityQuerySerializer(serializers.Serializer):
    """The scope and grouping of ``GET /api/inventory/capacity/``."""

    group_by = serializers.ChoiceField(choices=["site", "partition", "gpu_model"], required=False,
                                       help_text="Also count per site, partition or GPU model.")
    site = serializers.PrimaryKeyRelatedField(queryset=Site.objects.all(), required=False)
    partition = serializers.CharField(max_length=100, required=False)
    gpu_model = serializers.PrimaryKeyRelatedField(queryset=GPUModel.objects.all(), required=False)

    def scope(self):
        data = self.validated_data
        return {"site_id": data["site"].pk if data.get("site") else None, "partition": data.get("partition", ""),
                "gpu_model_id": data["gpu_model"].pk if data.get("gpu_model") else None}


class CapacityCountSerializer(serializers.Serializer):
    in_service = serializers.IntegerField(help_text="The GPU and its node in service.")
    out_of_service = serializers.IntegerField(help_text="The GPU or its node degraded or in repair.")
    burn_in = serializers.IntegerField(help_text="The GPU or its node delivered or in burn-in.")
    ordered = serializers.IntegerField(help_text="Recorded as ordered, not delivered yet.")
    spare = serializers.IntegerField(help_text="In service but in no node.")
    rented = serializers.IntegerField(help_text="Of `in_service`: on nodes an active rental contract covers (not "
                                                "added to `owned` or `total`).")
    rented_until = serializers.DateField(allow_null=True, help_text="The earliest end of those rentals; null when "
                                                                    "they are open-ended or nothing is rented.")
    retired = serializers.IntegerField(help_text="The GPU or its node retired: not counted in `owned` or `total`.")
    owned = serializers.IntegerField(help_text="in_service + out_of_service + burn_in + spare.")
    total = serializers.IntegerField(help_text="owned + ordered: every GPU that is or will be capacity.")
    says = serializers.CharField(help_text="What the count is made of, in words.")


class CapacityGroupSerializer(CapacityCountSerializer):
    key = serializers.CharField(allow_null=True, help_text="The site, partition or GPU model (null: none, e.g. a "
                                                           "spare GPU's site).")


class CapacitySerializer(serializers.Serializer):
    scope = serializers.DictField(help_text="The scope counted: site and GPU model ids, partition.")
    fleet = CapacityCountSerializer(help_text="The scope's GPUs.")
    group_by = serializers.CharField(allow_null=True)
    groups = CapacityGroupSerializer(many=True)
