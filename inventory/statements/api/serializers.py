"""Statements (read, lines and adjustments nested) and rate cards (rates nested, written with the card)."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers

from inventory.models import GPUModel, Team
from portal.api.serializers import COMMON, TIMESTAMPS, PortalModelSerializer
from portal.forms import parse_month

from ..models import NO_TEAM, Adjustment, Rate, RateCard, Statement, StatementLine


class StatementLineSerializer(serializers.ModelSerializer):
    gpu_model = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True,
                                                   help_text="The GPU model's id; null: none known.")

    class Meta:
        model = StatementLine
        fields = ["kind", "partition", "gpu_model", "gpu_model_name", "user", "gpu_hours", "price_per_gpu_hour",
                  "amount"]
        read_only_fields = fields


class AdjustmentSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Adjustment
        fields = ["id", "team", "corrects", "amount", "gpu_hours", "reason", "created_by", "created", "statement"]
        read_only_fields = fields


class StatementSerializer(PortalModelSerializer):
    team_name = serializers.SerializerMethodField(help_text=f'The team\'s name; "{NO_TEAM}" for the jobs of none.')
    rate_card = serializers.PrimaryKeyRelatedField(source="closed_month.rate_card", read_only=True)
    lines = StatementLineSerializer(many=True, read_only=True)
    adjustment_rows = AdjustmentSerializer(many=True, read_only=True, help_text="The corrections it carries.")
    csv = serializers.SerializerMethodField(help_text="The statement as CSV (the page's download).")
    pdf = serializers.SerializerMethodField(help_text="The statement as PDF.")

    class Meta:
        model = Statement
        fields = [*COMMON, "month", "team", "team_name", "closed_month", "rate_card", "currency", "gpu_hours",
                  "charges", "credit_gpu_hours", "credit", "adjustments", "total", "mailed_at", "lines",
                  "adjustment_rows", "csv", "pdf", *TIMESTAMPS]
        read_only_fields = fields
        brief_fields = ["month", "team_name", "total"]

    def get_team_name(self, statement) -> str:
        return statement.team_name

    def get_csv(self, statement) -> str:
        return self._absolute(statement.download_url("csv"))

    def get_pdf(self, statement) -> str:
        return self._absolute(statement.download_url("pdf"))

    def _absolute(self, path):
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class RateSerializer(serializers.ModelSerializer):
    gpu_model = serializers.PrimaryKeyRelatedField(queryset=GPUModel.objects.all(), allow_null=True, required=False,
                                                   help_text="The GPU model's id; null: any model.")

    class Meta:
        model = Rate
        fields = ["gpu_model", "partition", "price_per_gpu_hour"]


class RateCardSerializer(PortalModelSerializer):
    rates = RateSerializer(many=True, required=False, help_text="Replaces the card's rates when given.")
    in_use = serializers.BooleanField(source="used", read_only=True,
                                      help_text="Priced issued statements: it can no longer change.")

    class Meta:
        model = RateCard
        fields = [*COMMON, "effective_from", "currency", "note", "rates", "in_use", *TIMESTAMPS]
        brief_fields = ["effective_from", "currency"]

    def validate(self, attrs):
        rates = attrs.pop("rates", None)  # not a field of the card: the model's checks run without them
        attrs = super().validate(attrs)
        if rates is not None:
            if self.instance is not None:  # the card's rates change: refused on a used card as the card is
                try:
                    self.instance.check_editable()
                except DjangoValidationError as error:
                    raise serializers.ValidationError({"rates": error.messages}) from None
            attrs["rates"] = rates
        return attrs

    def validate_rates(self, rates):
        keys = [(rate.get("gpu_model"), rate.get("partition", "")) for rate in rates]
        if len(keys) != len(set(keys)):
            raise serializers.ValidationError("Two rates for the same GPU model and partition.")
        return rates

    def create(self, validated_data):
        rates = validated_data.pop("rates", [])
        with transaction.atomic():
            card = super().create(validated_data)
            self._write_rates(card, rates)
        return card

    def update(self, instance, validated_data):
        rates = validated_data.pop("rates", None)
        with transaction.atomic():
            card = super().update(instance, validated_data)
            if rates is not None:
                self._write_rates(card, rates, replace=True)
        return card

    @staticmethod
    def _write_rates(card, rates, replace=False):
        try:
            if replace:
                for rate in card.rates.all():
                    rate.delete()
            for rate in rates:
                Rate.objects.create(card=card, **rate)
        except DjangoValidationError as error:
            raise serializers.ValidationError({"rates": error.messages}) from None


class IssueSerializer(serializers.Serializer):
    month = serializers.CharField(help_text="The month to issue, YYYY-MM: one that has ended.")

    def validate_month(self, value):
        try:
            return parse_month(value)
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None


class AdjustRequestSerializer(serializers.Serializer):
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all(), help_text="The team's name.")
    month = serializers.CharField(help_text="The closed month it corrects, YYYY-MM.")
    amount = serializers.DecimalField(max_digits=14, decimal_places=2,
                                      help_text="Added to the team's next statement; negative: a refund.")
    gpu_hours = serializers.DecimalField(max_digits=14, decimal_places=4, required=False, allow_null=True,
                                         help_text="The GPU-hours it stands for, if any.")
    reason = serializers.CharField(max_length=2000)

    def validate_month(self, value):
        try:
            return parse_month(value)
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None


class IssuedSerializer(serializers.Serializer):
    month = serializers.DateField()
    issued = serializers.BooleanField(help_text="False: the month was already issued; nothing changed.")
    fleet_gpu_hours = serializers.FloatField(help_text="The fleet's allocated GPU-hours in the month.")
    statements = StatementSerializer(many=True)
