"""The shape of ``GET /api/planning/plans/{id}/analysis/`` (``planning.analysis.as_dict``), for the schema."""

from rest_framework import serializers

from ..scenarios import SCENARIO_KINDS

Number = serializers.FloatField


class HistoryMonthSerializer(serializers.Serializer):
    month = serializers.DateField()
    gpu_hours = Number(help_text="Busy GPU-hours in the month, from the daily rollups.")


class AnalysisMonthSerializer(serializers.Serializer):
    month = serializers.DateField()
    forecast_gpu_hours = Number(help_text="Demand forecast from the telemetry history.")
    forecast_low = Number(allow_null=True, help_text="80 % prediction interval, low end (null: no interval).")
    forecast_high = Number(allow_null=True)
    workload_gpu_hours = Number(help_text="The plan's workloads in this month.")
    demand_gpu_hours = Number(help_text="Forecast + workloads.")
    capacity_gpu_hours = Number(help_text="Owned, rented and incoming GPUs × 730 h.")
    gap_gpu_hours = Number(help_text="Capacity − demand; negative when short.")


class WorkloadDemandSerializer(serializers.Serializer):
    name = serializers.CharField()
    start_month = serializers.IntegerField()
    gpu_hours = Number(allow_null=True, help_text="Null when the workload cannot be sized (see error).")
    months = serializers.IntegerField(help_text="Months its wall-clock time spans.")
    error = serializers.CharField()


class AssumptionSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField()
    source = serializers.CharField(help_text="Where the value comes from: the plan, the fleet or the settings.")


class ScenarioSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SCENARIO_KINDS)
    label = serializers.CharField()
    feasible = serializers.BooleanField()
    nodes = serializers.IntegerField(help_text="Owned nodes bought.")
    lead_months = serializers.IntegerField()
    capex = Number()
    energy = Number()
    support = Number()
    space = Number()
    rental = Number()
    total_cash = Number(help_text="Spend within the horizon, capex when ordered.")
    total_cost = Number(help_text="Cost within the horizon, capex depreciated.")
    cost_per_useful_gpu_hour = Number(allow_null=True)
    utilization = Number(allow_null=True, help_text="Share of the added GPU-hours that serve demand.")
    met_from_month = serializers.IntegerField(allow_null=True, help_text="1-based; null: not within the horizon.")
    unmet_gpu_hours = Number()
    useful_gpu_hours = Number()
    notes = serializers.ListField(child=serializers.CharField())
    capacity_gpu_hours = serializers.ListField(child=Number(), help_text="Per month, baseline included.")
    added_gpus = serializers.ListField(child=Number())
    cash = serializers.ListField(child=Number())
    cost = serializers.ListField(child=Number())


class RecommendationSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SCENARIO_KINDS, allow_null=True, help_text="Null: no new capacity needed.")
    headline = serializers.CharField()
    reasons = serializers.ListField(child=serializers.CharField())


class PlanAnalysisSerializer(serializers.Serializer):
    plan = serializers.IntegerField()
    currency = serializers.CharField()
    forecast_method = serializers.CharField()
    history = HistoryMonthSerializer(many=True)
    months = AnalysisMonthSerializer(many=True)
    capacity_sources = serializers.ListField(child=serializers.CharField())
    workloads = WorkloadDemandSerializer(many=True)
    assumptions = AssumptionSerializer(many=True)
    scenarios = ScenarioSerializer(many=True)
    recommendation = RecommendationSerializer()
    notes = serializers.ListField(child=serializers.CharField())
