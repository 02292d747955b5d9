"""Capacity plans with their workloads and bill of materials (both lists written in the same request as the plan,
in one transaction), the workflow's events, the bill of materials and, for the schema, the shape of
``GET /api/planning/plans/{id}/analysis/`` (``planning.plans.analysis.as_dict``)."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.serializers import COMMON, TIMESTAMPS, EnumChoiceField, PortalModelSerializer

from ...common import NestedListMixin
from ...goodput import goodput_used, time_to_result
from ...sizing import sizing
from .. import months, scenarios, scope, workflow
from ..models import JOB_NAME_MAX, SCENARIO_FIELDS, SCOPE_FIELDS, CapacityPlan, PlanEvent, PlanItem, PlanWorkload
from ..summary import is_stale
from .fields import MonthField


class TimeToResultSerializer(serializers.Serializer):
    """A workload's time to result (``planning.goodput.TimeToResult``)."""

    account = serializers.CharField(help_text="The workload's Slurm account; empty: any.")
    job_name = serializers.CharField(help_text="The workload's job name pattern; empty: any.")
    jobs = serializers.IntegerField(help_text="Distinct job ids: a requeued job counts once.")
    running = serializers.IntegerField(help_text="Of them, still running.")
    first_submit = serializers.DateTimeField(allow_null=True)
    last_end = serializers.DateTimeField(allow_null=True, help_text="Null while a job runs.")
    days = serializers.FloatField(allow_null=True, help_text="First submit to last end (to now while jobs run).")
    estimate_days = serializers.FloatField(allow_null=True, help_text="The sized wall-clock days.")
    ratio = serializers.FloatField(allow_null=True, help_text="days / estimate_days.")


class GoodputUsedSerializer(serializers.Serializer):
    """The goodput a workload is sized with (``planning.goodput.goodput_used``)."""

    value = serializers.FloatField()
    basis = serializers.CharField(help_text='In words: "measured on your fleet: …", "published default: …" or '
                                            '"given".')
    changed = serializers.BooleanField(help_text="No longer the allowance kept when it was added from the sizing "
                                                 "page (an input was edited since).")
    added = serializers.JSONField(allow_null=True, help_text=(
        "What it was added from the sizing page with: goodput, basis, measured, gpus, sized_on; null: not added "
        "from the sizing page, or with a goodput given."))


class PlanWorkloadSerializer(PortalModelSerializer):
    start = MonthField(help_text="YYYY-MM: the month it starts, one of the plan's months (first_month to last_month).")
    slurm_job_name = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False, max_length=JOB_NAME_MAX,
        help_text=PlanWorkload._meta.get_field("slurm_job_name").help_text + " Empty: none.")
    gpu_hours = serializers.SerializerMethodField(help_text="GPU-hours of the run (planning.sizing).")
    goodput = serializers.SerializerMethodField(help_text="The goodput it is sized with and its basis; null when it "
                                                          "cannot be sized.")
    time_to_result = serializers.SerializerMethodField(help_text=(
        "Its jobs (the Slurm account's, those matching the job name pattern; both when both are given) submitted "
        "since the workload's start month: first submit to last end (to now while jobs run) in days, against the "
        "sized wall-clock days (ratio); null without an account or pattern."))

    class Meta:
        model = PlanWorkload
        fields = ["id", "name", "start", "gpu_model", "slurm_account", "slurm_job_name", "inputs", "gpu_hours",
                  "goodput", "time_to_result"]

    def validate_slurm_job_name(self, value):
        # Stripped, but blank spaces stay for PlanWorkload.clean to refuse (with a too long pattern, or one that
        # matches every job), as on the page.
        return value.strip() or value

    def validate(self, attrs):
        if "plan" in self.context:  # a workload added on its own (POST plans/{id}/workloads/): checked with its plan
            attrs = {**attrs, "plan": self.context["plan"]}
        return super().validate(attrs)

    def sized(self, workload):
        """Its sizing (None: cannot be sized), once per workload for both fields."""
        if "gpus" not in self.context:
            self.context["gpus"], self.context["sized"] = sizing.catalog_gpus(), {}
        if workload.pk not in self.context["sized"] or workload.pk is None:
            try:
                self.context["sized"][workload.pk] = sizing.size(workload.workload(), self.context["gpus"])
            except (ValueError, DjangoValidationError):
                self.context["sized"][workload.pk] = None
        return self.context["sized"][workload.pk]

    def get_gpu_hours(self, workload) -> float | None:
        return sized["gpu_hours"] if (sized := self.sized(workload)) else None

    @extend_schema_field(GoodputUsedSerializer(allow_null=True))
    def get_goodput(self, workload):
        if (used := goodput_used(workload, self.sized(workload))) is None:
            return None
        return {key: used[key] for key in ("value", "basis", "changed", "added")}

    @extend_schema_field(TimeToResultSerializer(allow_null=True))
    def get_time_to_result(self, workload):
        # Read for every workload of the plans being serialized at once (one query for all their jobs).
        if workload.pk not in self.context.setdefault("time_to_result", {}):
            shown = self.root.instance if isinstance(self.root.instance, list | QuerySet) else [self.root.instance]
            plans = {x.pk for x in shown if isinstance(x, CapacityPlan)} | {workload.plan_id}
            fetched = list(PlanWorkload.objects.filter(plan__in=plans))
            found = time_to_result(fetched)
            self.context["time_to_result"] |= {w.pk: found.get(w.pk) for w in fetched}
        if (found := self.context["time_to_result"].get(workload.pk)) is None:
            return None
        sized = self.sized(workload)
        found.estimate_days = sized["wall_clock_days"] if sized else None
        return found.as_dict()


# Quantity × unit cost: up to 10 + 12 integer digits and 2 decimals; a grand total sums many lines. A narrower
# field cannot show a large line at all (quantize fails: a 500 on the plan and its BOM).
TOTAL_DIGITS, GRAND_TOTAL_DIGITS = 24, 28


class PlanItemSerializer(PortalModelSerializer):
    total = serializers.DecimalField(max_digits=TOTAL_DIGITS, decimal_places=2, read_only=True,
                                     help_text="Quantity × unit cost.")
    price_confirmed_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = PlanItem
        fields = ["id", "node_model", "gpu_model", "description", "note", "quantity", "unit_cost", "currency",
                  "total", "price_estimated", "price_confirmed_by", "price_confirmed_at"]
        read_only_fields = ["price_estimated", "price_confirmed_by", "price_confirmed_at"]

    def validate_currency(self, currency):
        return currency.upper()


class PlanSummarySerializer(serializers.Serializer):
    """The plan's last analysis in short (``planning.plans.summary.summarise``), as the plan list shows it."""

    recommended = serializers.ChoiceField(choices=scenarios.SCENARIO_KINDS, allow_null=True,
                                          help_text="Null: none needed, or none serves the demand (see needed).")
    label = serializers.CharField(allow_null=True)
    headline = serializers.CharField()
    warning = serializers.CharField(allow_blank=True, help_text="What the headline says beyond the choice.")
    needed = serializers.BooleanField(help_text="Demand exceeds the fleet at the target utilization.")
    gpus_added = serializers.IntegerField(help_text="The most GPUs the option adds in a month, owned and rented.")
    nodes = serializers.IntegerField(help_text="Owned nodes bought.")
    cost = serializers.FloatField(allow_null=True, help_text="Cost over the horizon, capex depreciated; null: "
                                                             "unknown or nothing recommended.")
    currency = serializers.CharField()
    met_from = MonthField(allow_null=True, help_text="YYYY-MM: the month demand is met from; null: not within the "
                                                     "plan's months.")
    unmet_gpu_hours = serializers.FloatField()
    unavoidable_gpu_hours = serializers.FloatField(
        required=False, help_text="Of the GPU-hours unserved, those no option could serve: short before the quickest "
                                  "option's lead time ends.")
    horizon_months = serializers.IntegerField()


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
    first_month = MonthField(required=False, help_text="YYYY-MM: the plan's first month. Default: next month. "
                                                       "Changed alone, the plan keeps its number of months.")
    last_month = MonthField(required=False, help_text=f"YYYY-MM: the plan's last month, at most "
                                                      f"{months.MAX_HORIZON} months from the first. Default: 12 "
                                                      "months from the first.")
    horizon_months = serializers.IntegerField(
        required=False, min_value=1, max_value=months.MAX_HORIZON,
        help_text="Months from first_month to last_month, both counted: derived from them. Write last_month; "
                  "horizon_months is still accepted alone, for clients written before last_month.")
    summary = serializers.SerializerMethodField(help_text="The last analysis in short; null: not analysed yet.")
    summary_stale = serializers.SerializerMethodField(help_text="The plan changed after summary_at.")

    class Meta:
        model = CapacityPlan
        fields = [
            *COMMON, "name", "description", "first_month", "last_month", "horizon_months", "owner", *SCOPE_FIELDS,
            *SCENARIO_FIELDS, "status", "workloads", "items", "submitted_by", "submitted_at", "decided_by",
            "decided_at", "summary", "summary_at", "summary_stale", *TIMESTAMPS,
        ]
        extra_kwargs = {name: {"help_text": text} for name, text in scope.HELP.items()}

    @extend_schema_field(PlanSummarySerializer(allow_null=True))
    def get_summary(self, plan):
        return plan.summary or None

    def get_summary_stale(self, plan) -> bool:
        return is_stale(plan)

    def validate(self, attrs):
        if self.instance is not None:
            try:
                workflow.check_editable(self.instance)
            except DjangoValidationError as error:
                raise serializers.ValidationError(error.messages) from error
        self._months(attrs)
        attrs = super().validate(attrs)
        first, horizon = attrs["first_month"], attrs["horizon_months"]
        if "workloads" in attrs:
            starts = [w["start"] for w in attrs["workloads"]]
        else:
            starts = self.instance.workloads.values_list("start", flat=True) if self.instance else []
        errors = [months.outside(first, months.last_month(first, horizon), start) for start in starts]
        if any(errors):
            # As DRF answers a nested list's errors: by the index of each bad item.
            raise serializers.ValidationError({"workloads": {i: {"start": [e]} for i, e in enumerate(errors) if e}})
        return attrs

    def _months(self, attrs):
        """``attrs`` with the plan's first month and horizon from first_month, last_month and horizon_months."""
        plan = self.instance or CapacityPlan()  # a new plan: the model's defaults
        first = attrs.setdefault("first_month", plan.first_month)
        last = attrs.pop("last_month", None)
        if last is None:
            attrs.setdefault("horizon_months", plan.horizon_months)
            return
        if message := months.check_range(first, last):
            raise serializers.ValidationError({"last_month": [message]})
        horizon = months.horizon(first, last)
        if attrs.get("horizon_months", horizon) != horizon:
            raise serializers.ValidationError({"horizon_months": [
                f"{months.label(first)} to {months.label(last)} is {horizon} months, not {attrs['horizon_months']}:"
                " give last_month alone."]})
        attrs["horizon_months"] = horizon


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
    item = serializers.CharField(help_text="The item's name: its node model, GPU model or description.")
    node_model = serializers.IntegerField(allow_null=True)
    gpu_model = serializers.IntegerField(allow_null=True)
    description = serializers.CharField()
    note = serializers.CharField(help_text="How the quantity and the price were derived.")
    quantity = serializers.IntegerField()
    unit_cost = serializers.DecimalField(max_digits=14, decimal_places=2)
    currency = serializers.CharField()
    total = serializers.DecimalField(max_digits=TOTAL_DIGITS, decimal_places=2)
    price_estimated = serializers.BooleanField(help_text="The unit cost is an estimate nobody confirmed yet.")
    price_confirmed_by = serializers.CharField(allow_null=True)
    price_confirmed_at = serializers.DateTimeField(allow_null=True)


class BillOfMaterialsSerializer(serializers.Serializer):
    lines = BOMLineSerializer(many=True)
    totals = serializers.DictField(child=serializers.DecimalField(max_digits=GRAND_TOTAL_DIGITS, decimal_places=2),
                                   help_text="Grand total per currency.")
    estimated = serializers.DictField(
        child=serializers.DecimalField(max_digits=GRAND_TOTAL_DIGITS, decimal_places=2),
        help_text="Per currency, how much of the grand total is estimated prices nobody confirmed yet.")


class PriceConfirmSerializer(serializers.Serializer):
    unit_cost = serializers.DecimalField(max_digits=14, decimal_places=2, min_value=0, required=False,
                                         help_text="The quoted unit cost, where it differs (a draft plan only).")


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


# --- The analysis ---------------------------------------------------------------------------------------


Number = serializers.FloatField


class HistoryMonthSerializer(serializers.Serializer):
    month = MonthField()
    gpu_hours = Number(help_text="Busy GPU-hours in the month, from the daily rollups.")


class AnalysisMonthSerializer(serializers.Serializer):
    month = MonthField(help_text="YYYY-MM: one of the plan's months.")
    forecast_gpu_hours = Number(help_text="Demand forecast from the telemetry history.")
    forecast_low = Number(allow_null=True, help_text="80 % prediction interval, low end (null: no interval).")
    forecast_high = Number(allow_null=True)
    workload_gpu_hours = Number(help_text="The plan's workloads in this month.")
    recommendation_gpu_hours = Number(help_text="Demand the history cannot see, from the recommendation the plan was "
                                                "made from (demand_lines together), e.g. its queued GPUs.")
    demand_gpu_hours = Number(help_text="Forecast + workloads + the recommendation's lines.")
    capacity_gpu_hours = Number(help_text="Owned, rented and incoming GPUs × 730 h.")
    gap_gpu_hours = Number(help_text="Capacity − demand; negative when short.")


class WorkloadDemandSerializer(serializers.Serializer):
    name = serializers.CharField()
    start = MonthField()
    gpu_hours = Number(allow_null=True, help_text="Null when the workload cannot be sized (see error).")
    months = serializers.IntegerField(help_text="Months its wall-clock time spans.")
    error = serializers.CharField()
    rental_cost = Number(allow_null=True, help_text="The run rented whole (every GPU-hour at the plan's rental rate, "
                                                    "else the sizing page's): the sizing page's 'Cost rented'. The "
                                                    "rent scenario prices only the shortfall beyond the fleet.")
    rental_cost_basis = serializers.CharField(help_text="Where the rate comes from.")


class AssumptionSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField()
    source = serializers.CharField(help_text="Where the value comes from: the plan, the fleet or the settings.")


class ScenarioSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=scenarios.SCENARIO_KINDS)
    label = serializers.CharField()
    feasible = serializers.BooleanField()
    nodes = serializers.IntegerField(help_text="Owned nodes bought.")
    lead_months = serializers.IntegerField()
    capex = Number()
    energy = Number()
    support = Number()
    space = Number()
    rental = Number(allow_null=True, help_text="Null: it rents and the rental rate is unknown.")
    total_cash = Number(allow_null=True, help_text="Spend within the horizon, capex when ordered; null: unknown.")
    total_cost = Number(allow_null=True, help_text="Cost within the horizon, capex depreciated; null: unknown.")
    cost_per_useful_gpu_hour = Number(allow_null=True)
    utilization = Number(allow_null=True, help_text="Share (0-1) of the added GPU-hours, owned and rented, that "
                                                    "serve demand; null: it adds nothing.")
    owned_from_month = MonthField(allow_null=True, help_text="YYYY-MM in which the owned nodes first serve; null: "
                                                             "none within the plan's months.")
    owned_gpu_hours = Number(help_text="GPU-hours the owned nodes could give from arrival to the horizon's end.")
    owned_useful_gpu_hours = Number(help_text="GPU-hours of demand the owned nodes serve (demand fills the "
                                              "baseline first, then owned nodes, then rented ones).")
    owned_utilization = Number(allow_null=True, help_text="owned_useful_gpu_hours / owned_gpu_hours (0-1); null: "
                                                          "no owned nodes within the horizon.")
    below_min_utilization = serializers.BooleanField(help_text="The owned nodes' utilization is below the plan's "
                                                               "min_utilization.")
    rented_gpu_hours = Number(help_text="GPU-hours rented over the horizon.")
    rented_useful_gpu_hours = Number(help_text="GPU-hours of demand the rented nodes serve.")
    rented_utilization = Number(allow_null=True, help_text="rented_useful_gpu_hours / rented_gpu_hours (0-1); "
                                                           "null: nothing rented.")
    met_from_month = MonthField(allow_null=True, help_text="YYYY-MM from which demand is met in every later month; "
                                                           "null: not within the plan's months.")
    unmet_gpu_hours = Number(help_text="Σ per month of demand above capacity × the target utilization.")
    serving_cost = Number(allow_null=True, help_text="What the options are compared on: total_cost + "
                                                     "unmet_gpu_hours × the price of an unserved GPU-hour; null: "
                                                     "unknown.")
    rented_gpus = serializers.ListField(child=Number(), help_text="GPUs rented per month.")
    useful_gpu_hours = Number()
    notes = serializers.ListField(child=serializers.CharField())
    capacity_gpu_hours = serializers.ListField(child=Number(), help_text="Per month, baseline included.")
    added_gpus = serializers.ListField(child=Number())
    cash = serializers.ListField(child=Number())
    cost = serializers.ListField(child=Number())


class RecommendationSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=scenarios.SCENARIO_KINDS, allow_null=True,
                                   help_text="Null: no new capacity needed, or no scenario serves the demand "
                                             "within the horizon (the headline says which).")
    headline = serializers.CharField()
    reasons = serializers.ListField(child=serializers.CharField())
    needed_gpus = Number(help_text="The horizon's peak shortfall in GPUs at the target utilization (0: none).")
    unavoidable_gpu_hours = Number(help_text="GPU-hours no option could serve: short before the quickest option's "
                                             "lead time ends.")
    unmet_gpu_hour_cost = Number(allow_null=True, help_text="The price of an unserved GPU-hour the options were "
                                                            "compared with (the plan's, else the rental rate); null: "
                                                            "none known.")


class NeedFigureSerializer(serializers.Serializer):
    label = serializers.CharField()
    value = serializers.CharField(help_text="With its unit.")


class NeedSerializer(serializers.Serializer):
    recommendation = serializers.IntegerField(help_text="The recommendation the plan was made from.")
    kind = serializers.CharField()
    topic = serializers.CharField()
    statement = serializers.CharField(help_text="Leads the analysis: the evidence in words and the action.")
    figures = NeedFigureSerializer(many=True, help_text="The recommendation's evidence.")
    node_count = serializers.IntegerField(allow_null=True, help_text="Nodes it adds or replaces (capacity, ageing).")
    bottleneck = serializers.CharField(allow_null=True, help_text="What bounds the partition when it is not GPUs.")


class DemandLineSerializer(serializers.Serializer):
    name = serializers.CharField()
    gpu_hours = serializers.ListField(child=Number(), help_text="Per month of the horizon.")


class PlanAnalysisSerializer(serializers.Serializer):
    plan = serializers.IntegerField()
    scope = serializers.CharField(help_text='"Scope: partition X, site Y, GPU model Z", or "Scope: the whole fleet".')
    need = NeedSerializer(allow_null=True, help_text="Null: the plan was not made from a recommendation.")
    demand_lines = DemandLineSerializer(many=True)
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
