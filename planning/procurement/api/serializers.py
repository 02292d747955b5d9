"""Purchase orders (with their lines) and deliveries (with their items).

Orders and deliveries are created once and then read-only (an order can be cancelled); a delivery's request body
(``DeliveryCreateSerializer``) lists what arrived, its answer (``DeliverySerializer``) what the portal created for
it."""

from rest_framework import serializers

from portal.api.serializers import COMMON, TIMESTAMPS, EnumChoiceField, PortalModelSerializer

from ...common import NestedListMixin
from ...contracts.models import Contract
from ...plans.models import CapacityPlan
from ..models import Delivery, DeliveryItem, OrderLine, PurchaseOrder


class OrderLineSerializer(PortalModelSerializer):
    delivered = serializers.IntegerField(source="delivered_count", read_only=True, help_text="Units delivered.")
    remaining = serializers.SerializerMethodField(help_text="Units still to deliver.")

    class Meta:
        model = OrderLine
        fields = ["id", "node_model", "gpu_model", "description", "quantity", "unit_price", "delivered", "remaining"]

    def get_remaining(self, line) -> int:
        return max(line.quantity - getattr(line, "delivered_count", 0), 0)


class PurchaseOrderSerializer(NestedListMixin, PortalModelSerializer):
    """An order of catalog models for a site, carrying out an approved capacity plan or under a purchase or
    expansion contract (at least one of them). Created with its lines in one request; read-only afterwards
    (``cancel`` while nothing is delivered)."""

    nested = {"lines": "order"}
    PURCHASE_KINDS = (Contract.Kind.PURCHASE, Contract.Kind.EXPANSION)

    status = EnumChoiceField(PurchaseOrder.Status, read_only=True)
    lines = OrderLineSerializer(many=True, help_text="At least one line.")
    site_name = serializers.CharField(source="site.name", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True)

    class Meta:
        model = PurchaseOrder
        fields = [
            *COMMON, "plan", "contract", "vendor", "reference", "external_id", "site", "site_name", "status",
            "currency", "ordered_on", "lines", "deliveries", "created_by", *TIMESTAMPS,
        ]
        read_only_fields = ["deliveries"]

    def validate_plan(self, plan):
        if plan is not None and plan.status != CapacityPlan.Status.APPROVED:
            raise serializers.ValidationError(
                f"Plan {plan} is {plan.get_status_display().lower()}; orders carry out approved plans only."
            )
        return plan

    def validate_contract(self, contract):
        if contract is not None and contract.kind not in self.PURCHASE_KINDS:
            raise serializers.ValidationError(
                f"{contract} is a {contract.get_kind_display().lower()} contract; orders go under a purchase or "
                "expansion contract."
            )
        return contract

    def validate_lines(self, lines):
        if not lines:
            raise serializers.ValidationError("An order has at least one line.")
        return lines

    def validate(self, attrs):
        if not (attrs.get("plan") or attrs.get("contract")):
            raise serializers.ValidationError(
                "Give the approved plan (`plan`) or the purchase or expansion contract (`contract`) of the order."
            )
        attrs["created_by"] = self.context["request"].user
        return super().validate(attrs)


class DeliveryItemSerializer(serializers.ModelSerializer):
    """One delivered unit and the node or GPU the portal created for it."""

    hostname = serializers.CharField(source="node.hostname", read_only=True, allow_null=True)
    uuid = serializers.CharField(source="gpu.uuid", read_only=True, allow_null=True)
    installed_in = serializers.CharField(source="gpu.node.hostname", read_only=True, allow_null=True,
                                         help_text="GPUs: the node (hostname) it was delivered in.")
    slot = serializers.IntegerField(source="gpu.slot", read_only=True, allow_null=True)

    class Meta:
        model = DeliveryItem
        fields = ["id", "line", "serial", "node", "hostname", "gpu", "uuid", "installed_in", "slot"]
        read_only_fields = fields


class DeliverySerializer(PortalModelSerializer):
    """A recorded delivery with its items; ``node``/``gpu`` of an item are the ids of the created objects."""

    order_reference = serializers.CharField(source="order.reference", read_only=True)
    items = DeliveryItemSerializer(many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True)

    class Meta:
        model = Delivery
        fields = [
            *COMMON, "order", "order_reference", "external_id", "delivered_on", "note", "items", "created_by",
            *TIMESTAMPS,
        ]
        read_only_fields = fields


class DeliveryItemInSerializer(serializers.Serializer):
    line = serializers.PrimaryKeyRelatedField(queryset=OrderLine.objects.select_related("node_model", "gpu_model"),
                                              help_text="The order line the unit is for.")
    serial = serializers.CharField(max_length=100)
    # The defaults are "" and "" is accepted (as "not given"): the schema documents the default, so generated
    # clients send it.
    hostname = serializers.CharField(max_length=100, required=False, allow_blank=True, default="",
                                     help_text="Nodes: required.")
    uuid = serializers.CharField(max_length=100, required=False, allow_blank=True, default="",
                                 help_text="GPUs: required (GPU-…).")
    node = serializers.CharField(max_length=100, required=False, allow_blank=True, default="",
                                 help_text="GPUs: hostname of the node it is installed in (delivered earlier or in "
                                           "this delivery); with `slot`. Empty for a spare GPU.")
    slot = serializers.IntegerField(min_value=0, required=False, allow_null=True, default=None)


class DeliveryCreateSerializer(serializers.Serializer):
    """What arrived for an order. The portal creates a node per node-line item and a GPU per GPU-line item, in
    state delivered, all or nothing."""

    order = serializers.PrimaryKeyRelatedField(queryset=PurchaseOrder.objects.all())
    external_id = serializers.CharField(max_length=100, required=False, allow_blank=True, default="",
                                        help_text="Unique per client: repeating it returns the first delivery.")
    delivered_on = serializers.DateField(required=False)
    note = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    items = DeliveryItemInSerializer(many=True)
