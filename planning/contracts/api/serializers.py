"""Contracts with their SLA terms (the list is written in the same request as the contract, in one
transaction)."""

from rest_framework import serializers

from portal.api.serializers import COMMON, TIMESTAMPS, EnumChoiceField, PortalModelSerializer

from ...common import NestedListMixin
from ..coverage import purchase_conflicts
from ..models import Contract, SLATerm


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
