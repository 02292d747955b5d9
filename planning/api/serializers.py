"""Contracts (with their SLA terms), purchase orders (with their lines) and deliveries (with their items).

Nested lists are written in the same request as their parent, in one transaction. Orders and deliveries are
created once and then read-only (an order can be cancelled); a delivery's request body
(``DeliveryCreateSerializer``) lists what arrived, its answer (``DeliverySerializer``) what the portal
created for it."""

from dataclasses import MISSING

from django.db import transaction
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.api.serializers import COMMON, TIMESTAMPS
from portal.api.serializers import EnumChoiceField, PortalModelSerializer

from .. import sizing
from ..coverage import purchase_conflicts
from ..models import Contract, Delivery, DeliveryItem, OrderLine, PurchaseOrder, SLATerm


class NestedListMixin:
    """A parent serializer with a writable nested list (``nested_field``, the reverse FK ``nested_parent``):
    the list is created with the parent and replaced on update when given."""

    nested_field = None
    nested_parent = None

    def validate(self, attrs):
        nested = attrs.pop(self.nested_field, None)
        attrs = super().validate(attrs)
        if nested is not None:
            attrs[self.nested_field] = nested
        return attrs

    def create(self, validated_data):
        nested = validated_data.pop(self.nested_field, [])
        with transaction.atomic():
            instance = super().create(validated_data)
            self._write_nested(instance, nested)
        return instance

    def update(self, instance, validated_data):
        nested = validated_data.pop(self.nested_field, None)
        with transaction.atomic():
            instance = super().update(instance, validated_data)
            if nested is not None:
                getattr(instance, self.nested_field).all().delete()
                self._write_nested(instance, nested)
        return instance

    def _write_nested(self, instance, rows):
        model = self.fields[self.nested_field].child.Meta.model
        model.objects.bulk_create(model(**{self.nested_parent: instance}, **row) for row in rows)


class SLATermSerializer(PortalModelSerializer):
    priority = EnumChoiceField(SLATerm.Priority)

    class Meta:
        model = SLATerm
        fields = ["priority", "response_hours", "resolution_hours"]


class ContractSerializer(NestedListMixin, PortalModelSerializer):
    """A purchase, rental, expansion or support contract; covered assets as lists of ids."""

    nested_field, nested_parent = "sla_terms", "contract"

    kind = EnumChoiceField(Contract.Kind)
    sla_terms = SLATermSerializer(many=True, required=False,
                                  help_text="Support contracts: response and resolution hours per priority.")
    notice_deadline = serializers.DateField(read_only=True, allow_null=True)

    class Meta:
        model = Contract
        fields = [
            *COMMON, "kind", "vendor", "reference", "title", "owner", "start", "end", "notice_days", "notice_deadline",
            "auto_renew", "one_off_cost", "monthly_cost", "gpu_hour_cost", "currency", "depreciation_months",
            "rented_gpus", "rented_gpu_model", "sites", "racks", "nodes", "gpus", "switches", "storage_systems",
            "sla_terms", "notes", *TIMESTAMPS,
        ]

    def validate(self, attrs):
        attrs = super().validate(attrs)
        instance = self.instance

        def ids(field):
            if field in attrs:
                return [obj.pk for obj in attrs[field]]
            return list(getattr(instance, field).values_list("pk", flat=True)) if instance else []

        kind = attrs.get("kind", instance.kind if instance else None)
        conflicts = purchase_conflicts(instance or Contract(), ids("nodes"), ids("gpus"), kind=kind)
        if conflicts:
            raise serializers.ValidationError(conflicts)
        return attrs

    def validate_sla_terms(self, terms):
        priorities = [term["priority"] for term in terms]
        repeated = sorted({p for p in priorities if priorities.count(p) > 1})
        if repeated:
            raise serializers.ValidationError(f"One term per priority; repeated: {', '.join(repeated)}.")
        return terms


class OrderLineSerializer(PortalModelSerializer):
    delivered = serializers.IntegerField(source="delivered_count", read_only=True, help_text="Units delivered.")
    remaining = serializers.SerializerMethodField(help_text="Units still to deliver.")

    class Meta:
        model = OrderLine
        fields = ["id", "node_model", "gpu_model", "description", "quantity", "unit_price", "delivered", "remaining"]

    def get_remaining(self, line) -> int:
        return max(line.quantity - getattr(line, "delivered_count", 0), 0)


class PurchaseOrderSerializer(NestedListMixin, PortalModelSerializer):
    """An order of catalog models for a site, under a purchase or expansion contract. Created with its lines in
    one request; read-only afterwards (``cancel`` while nothing is delivered)."""

    nested_field, nested_parent = "lines", "order"
    PURCHASE_KINDS = (Contract.Kind.PURCHASE, Contract.Kind.EXPANSION)

    status = EnumChoiceField(PurchaseOrder.Status, read_only=True)
    lines = OrderLineSerializer(many=True, help_text="At least one line.")
    site_name = serializers.CharField(source="site.name", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True)

    class Meta:
        model = PurchaseOrder
        fields = [
            *COMMON, "contract", "vendor", "reference", "external_id", "site", "site_name", "status", "currency",
            "ordered_on", "lines", "deliveries", "created_by", *TIMESTAMPS,
        ]
        read_only_fields = ["deliveries"]
        extra_kwargs = {"contract": {"required": True, "allow_null": False}}

    def validate_contract(self, contract):
        if contract.kind not in self.PURCHASE_KINDS:
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
    hostname = serializers.CharField(max_length=100, required=False, default="", help_text="Nodes: required.")
    uuid = serializers.CharField(max_length=100, required=False, default="", help_text="GPUs: required (GPU-…).")
    node = serializers.CharField(max_length=100, required=False, default="",
                                 help_text="GPUs: hostname of the node it is installed in (delivered earlier or in "
                                           "this delivery); with `slot`. Empty for a spare GPU.")
    slot = serializers.IntegerField(min_value=0, required=False, allow_null=True, default=None)


class DeliveryCreateSerializer(serializers.Serializer):
    """What arrived for an order. The portal creates a node per node-line item and a GPU per GPU-line item, in
    state delivered, all or nothing."""

    order = serializers.PrimaryKeyRelatedField(queryset=PurchaseOrder.objects.all())
    external_id = serializers.CharField(max_length=100, required=False, default="",
                                        help_text="Unique per client: repeating it returns the first delivery.")
    delivered_on = serializers.DateField(required=False)
    note = serializers.CharField(max_length=500, required=False, default="")
    items = DeliveryItemInSerializer(many=True)


# --- Workload sizing (planning.sizing) ---------------------------------------------------------


def sizing_input_field(spec):
    """The serializer field of a ``Workload`` input; its limits are checked by ``sizing.validate``."""
    meta = spec.metadata
    options = {"label": meta["label"], "help_text": meta["help"]}
    if spec.default is MISSING:
        options["required"] = True
    elif spec.default is None:
        options.update(required=False, allow_null=True, default=None)
    else:
        options["default"] = spec.default
    if meta["kind"] == "choice":
        return serializers.ChoiceField(choices=meta["choices"], **options)
    if meta["kind"] == "gpu":
        return serializers.CharField(**options)
    return (serializers.IntegerField if meta["kind"] == "int" else serializers.FloatField)(**options)


class SizingInputBase(serializers.Serializer):
    """Checks the inputs as ``sizing.validate`` does; needs the catalog as ``context["gpus"]``."""

    def validate(self, attrs):
        errors = sizing.validate(sizing.Workload(**attrs), self.context["gpus"])
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


SizingInputSerializer = type("SizingInputSerializer", (SizingInputBase,), {
    "__doc__": "A workload to size (``planning.sizing.Workload``).",
    **{name: sizing_input_field(spec) for name, spec in sizing.INPUTS.items()},
})


class SizingFigureSerializer(serializers.Serializer):
    label = serializers.CharField()
    value = serializers.JSONField(help_text="A number (the fit class: a name); null when it does not apply.")
    unit = serializers.CharField()
    explanation = serializers.CharField(help_text="How it was computed, in one line.")
    source = serializers.CharField(help_text="The reference the formula follows.")


SizingFiguresSerializer = type("SizingFiguresSerializer", (serializers.Serializer,), {
    "__doc__": "Every figure of a sizing.",
    **{key: SizingFigureSerializer(help_text=f"{label} ({unit})" if unit else label)
       for key, (label, unit, _) in sizing.FIGURES.items()},
})


class SizingComparisonSerializer(serializers.Serializer):
    gpu_model = serializers.CharField(source="gpu.name")
    memory_gb = serializers.FloatField(source="gpu.memory_gb")
    problem = serializers.CharField(help_text="Why this GPU model could not be sized (e.g. no FP8); else empty.")
    values = type("SizingComparisonValuesSerializer", (serializers.Serializer,), {
        key: serializers.JSONField(allow_null=True, help_text=sizing.FIGURES[key][0])
        for key in sizing.COMPARISON_FIGURES
    })(help_text="The main figures on this GPU model; null when it could not be sized.")


class SizingSerializer(serializers.Serializer):
    """A sizing on the chosen GPU model and the comparison of every GPU model of the catalog."""

    gpu_model = serializers.CharField(source="gpu.name")
    figures = serializers.SerializerMethodField()
    comparison = SizingComparisonSerializer(many=True, help_text="The same workload on every GPU model.")

    @extend_schema_field(SizingFiguresSerializer)
    def get_figures(self, obj):
        return {key: SizingFigureSerializer(figure).data for key, figure in obj["figures"].items()}
