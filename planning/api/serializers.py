"""Contracts (with their SLA terms), purchase orders (with their lines) and deliveries (with their items).

Nested lists are written in the same request as their parent, in one transaction. Orders and deliveries are
created once and then read-only (an order can be cancelled); a delivery's request body
(``DeliveryCreateSerializer``) lists what arrived, its answer (``DeliverySerializer``) what the portal
created for it."""

from dataclasses import MISSING

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.api.serializers import COMMON, TIMESTAMPS
from portal.api.serializers import EnumChoiceField, PortalModelSerializer

from .. import plans, scenarios, sizing
from ..coverage import purchase_conflicts
from ..models import (
    SCENARIO_FIELDS,
    CapacityPlan,
    Contract,
    Delivery,
    DeliveryItem,
    OrderLine,
    PlanEvent,
    PlanItem,
    PlanWorkload,
    PurchaseOrder,
    SLATerm,
)


class NestedListMixin:
    """A parent serializer with writable nested lists (``nested``: list field → the child's FK to the parent):
    each list is created with the parent and replaced on update when given."""

    nested = {}

    def validate(self, attrs):
        lists = {name: attrs.pop(name) for name in self.nested if name in attrs}
        attrs = super().validate(attrs)
        return {**attrs, **lists}

    def create(self, validated_data):
        lists = {name: validated_data.pop(name, []) for name in self.nested}
        with transaction.atomic():
            instance = super().create(validated_data)
            self._write_nested(instance, lists)
        return instance

    def update(self, instance, validated_data):
        lists = {name: validated_data.pop(name) for name in self.nested if name in validated_data}
        with transaction.atomic():
            instance = super().update(instance, validated_data)
            for name in lists:
                getattr(instance, name).all().delete()
            self._write_nested(instance, lists)
        return instance

    def _write_nested(self, instance, lists):
        for name, rows in lists.items():
            model = self.fields[name].child.Meta.model
            model.objects.bulk_create(model(**{self.nested[name]: instance}, **row) for row in rows)


class SLATermSerializer(PortalModelSerializer):
    priority = EnumChoiceField(SLATerm.Priority)

    class Meta:
        model = SLATerm
        fields = ["priority", "response_hours", "resolution_hours"]


class ContractSerializer(NestedListMixin, PortalModelSerializer):
    """A purchase, rental, expansion or support contract; covered assets as lists of ids."""

    nested = {"sla_terms": "contract"}

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
    # The limits ``sizing.validate`` enforces, for the schema (``PortalAutoSchema``) to tell clients.
    limits = {"minimum": meta["min"], "exclusiveMinimum": not meta["inclusive"]}
    if meta["max"] is not None:
        limits["maximum"] = meta["max"]
    return (SizingIntegerField if meta["kind"] == "int" else SizingNumberField)(schema_limits=limits, **options)


class SchemaLimitsMixin:
    """Keeps ``schema_limits`` through DRF's copy of declared fields (it re-creates them from their arguments)."""

    def __init__(self, *, schema_limits=None, **kwargs):
        self.schema_limits = schema_limits or {}
        super().__init__(**kwargs)


class SizingIntegerField(SchemaLimitsMixin, serializers.IntegerField):
    pass


class SizingNumberField(SchemaLimitsMixin, serializers.FloatField):
    """A number; ``true`` is not 1 (DRF's ``FloatField`` would read it as 1.0)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


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


# --- Capacity plans (planning.plans) -----------------------------------------------------------------


class PlanWorkloadSerializer(PortalModelSerializer):
    gpu_hours = serializers.SerializerMethodField(help_text="GPU-hours of the run (planning.sizing).")

    class Meta:
        model = PlanWorkload
        fields = ["id", "name", "start_month", "gpu_model", "inputs", "gpu_hours"]

    def get_gpu_hours(self, workload) -> float | None:
        if "gpus" not in self.context:
            self.context["gpus"] = sizing.catalog_gpus()
        try:
            return sizing.size(workload.workload(), self.context["gpus"])["gpu_hours"]
        except (ValueError, DjangoValidationError):
            return None


# Quantity × unit cost: up to 10 + 12 integer digits and 2 decimals; a grand total sums many lines. A narrower
# field cannot show a large line at all (quantize fails: a 500 on the plan and its BOM).
TOTAL_DIGITS, GRAND_TOTAL_DIGITS = 24, 28


class PlanItemSerializer(PortalModelSerializer):
    total = serializers.DecimalField(max_digits=TOTAL_DIGITS, decimal_places=2, read_only=True,
                                     help_text="Quantity × unit cost.")

    class Meta:
        model = PlanItem
        fields = ["id", "node_model", "gpu_model", "description", "quantity", "unit_cost", "currency", "total"]

    def validate_currency(self, currency):
        return currency.upper()


class CapacityPlanSerializer(NestedListMixin, PortalModelSerializer):
    """A capacity plan with its workloads and bill of materials (both lists replaced on update when given).
    Created and changed only while draft; the status moves through the plan's actions (submit, approve,
    reject, reopen)."""

    nested = {"workloads": "plan", "items": "plan"}

    status = EnumChoiceField(CapacityPlan.Status, read_only=True)
    workloads = PlanWorkloadSerializer(many=True, required=False)
    items = PlanItemSerializer(many=True, required=False, help_text="The bill of materials.")
    submitted_by = serializers.CharField(source="submitted_by.username", read_only=True, allow_null=True)
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, allow_null=True)

    class Meta:
        model = CapacityPlan
        fields = [
            *COMMON, "name", "description", "horizon_months", "owner", *SCENARIO_FIELDS, "status", "workloads", "items",
            "submitted_by", "submitted_at", "decided_by", "decided_at", *TIMESTAMPS,
        ]

    def validate(self, attrs):
        if self.instance is not None:
            try:
                plans.check_editable(self.instance)
            except DjangoValidationError as error:
                raise serializers.ValidationError(error.messages) from error
        attrs = super().validate(attrs)
        horizon = attrs.get("horizon_months", self.instance.horizon_months if self.instance else 12)
        if "workloads" in attrs:
            starts = [(w["name"], w["start_month"]) for w in attrs["workloads"]]
        else:
            starts = self.instance.workloads.values_list("name", "start_month") if self.instance else []
        if beyond := [name for name, start in starts if start > horizon]:
            raise serializers.ValidationError(
                {"workloads": f"Start after the horizon of {horizon} months: {', '.join(beyond)}."})
        return attrs


class PlanCommentSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="",
                                    help_text="Why (required to reject).")


class PlanEventSerializer(serializers.ModelSerializer):
    from_status = EnumChoiceField(CapacityPlan.Status)
    to_status = EnumChoiceField(CapacityPlan.Status)

    class Meta:
        model = PlanEvent
        fields = ["id", "username", "at", "from_status", "to_status", "comment"]


class BOMLineSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    item = serializers.CharField(help_text="The node model, GPU model or description.")
    node_model = serializers.IntegerField(allow_null=True)
    gpu_model = serializers.IntegerField(allow_null=True)
    description = serializers.CharField()
    quantity = serializers.IntegerField()
    unit_cost = serializers.DecimalField(max_digits=14, decimal_places=2)
    currency = serializers.CharField()
    total = serializers.DecimalField(max_digits=TOTAL_DIGITS, decimal_places=2)


class BillOfMaterialsSerializer(serializers.Serializer):
    lines = BOMLineSerializer(many=True)
    totals = serializers.DictField(child=serializers.DecimalField(max_digits=GRAND_TOTAL_DIGITS, decimal_places=2),
                                   help_text="Grand total per currency.")


class BOMFillSerializer(serializers.Serializer):
    scenario = serializers.ChoiceField(
        choices=scenarios.SCENARIO_KINDS, required=False,
        error_messages={"invalid_choice": '"{input}" is not a scenario: choose expand, build or hybrid.'},
        help_text="The scenario to buy for: expand, build or hybrid (rent buys nothing and is refused). "
                  "Default: the recommended one.")


class BOMFillResultSerializer(BillOfMaterialsSerializer):
    scenario = serializers.ChoiceField(choices=scenarios.SCENARIO_KINDS)
    scenario_capex = serializers.FloatField(help_text="The scenario's capex, which the lines add up to (to the "
                                                      "cent of each unit cost).")
    replaced_lines = serializers.IntegerField(help_text="Lines removed (hand-entered ones too); kept in the "
                                                        "history.")
    notes = serializers.ListField(child=serializers.CharField())
