"""Workload sizing (``planning.sizing.sizing``): its inputs, figures and the comparison across GPU models."""

from dataclasses import MISSING

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.api.serializers import CapacityCountSerializer

from .. import sizing


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
    if meta["kind"] == "team":
        return serializers.CharField(allow_blank=True, **options)
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
    """Checks the inputs as ``sizing.validate`` does; needs the catalog as ``context["gpus"]`` and the teams' factors
    as ``context["factors"]``."""

    def validate(self, attrs):
        errors = sizing.validate(sizing.Workload(**attrs), self.context["gpus"], self.context["factors"])
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


class SizingCostsSerializer(serializers.Serializer):
    owned_cost = SizingFigureSerializer(help_text="GPU-hours × the owned cost per GPU-hour of the fleet's nodes of "
                                                  "this GPU model (from the contracts); value null when not known.")
    rental_cost = SizingFigureSerializer(help_text="Renting the whole run: GPU-hours × the rental rate (the active "
                                                   "rental contracts', else the portal's default; a plan prices its "
                                                   "workloads the same way); value null when not known.")


class SizingFleetSerializer(serializers.Serializer):
    """The fleet's GPUs of the sized model (``planning.sizing.fleet``), counted as every page counts them."""

    gpu_model = serializers.CharField()
    gpus = serializers.IntegerField(help_text="The GPUs the run is sized for (`figures.gpus`).")
    fits = serializers.ChoiceField(choices=["in_service", "fleet", "no"], help_text=(
        "in_service: the run fits in the GPUs in service; fleet: only with those out of service, arriving or "
        "ordered; no: not in all of them."))
    says = serializers.CharField(help_text="The count and the verdict, in words (as the page shows it).")
    capacity = CapacityCountSerializer(help_text="The fleet's GPUs of the model by state (`inventory.capacity`).")


class SizingComparisonSerializer(serializers.Serializer):
    gpu_model = serializers.CharField(source="gpu.name")
    memory_gb = serializers.FloatField(source="gpu.memory_gb")
    problem = serializers.CharField(help_text="Why this GPU model could not be sized (e.g. no FP8); else empty.")
    values = type("SizingComparisonValuesSerializer", (serializers.Serializer,), {
        key: serializers.JSONField(allow_null=True, help_text=sizing.FIGURES[key][0])
        for key in sizing.COMPARISON_FIGURES
    })(help_text="The main figures on this GPU model; null when it could not be sized.")


class MeasuredRateSerializer(serializers.Serializer):
    gpu_model = serializers.CharField()
    interruptions = serializers.IntegerField(help_text="Infrastructure interruptions of the model's jobs.")
    gpu_days = serializers.FloatField(help_text="Allocated GPU-days they happened in.")
    per_gpu_day = serializers.FloatField()
    ci95_per_gpu_day = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2,
                                             help_text="Exact (Garwood) 95 % Poisson interval: [low, high].")
    trusted = serializers.BooleanField(help_text="Enough interruptions (`min_interruptions`) for sizing to use it.")


class InterruptionRateSerializer(serializers.Serializer):
    used = serializers.ChoiceField(choices=["measured", "published"], help_text=(
        "The rate behind the default goodput: the fleet's when it rests on at least `min_interruptions` "
        "interruptions, else the published one (Llama 3)."))
    per_gpu_day = serializers.FloatField(help_text="That rate, interruptions per GPU-day.")
    measured = MeasuredRateSerializer(allow_null=True, help_text=(
        "The fleet's rate for this GPU model and its interval; null without enough allocated GPU-hours."))
    min_interruptions = serializers.IntegerField(help_text="Interruptions a measured rate needs to be used.")
    goodput_given = serializers.BooleanField(help_text="The goodput was given: no rate was used.")
    note = serializers.CharField(help_text="Which rate, and why, in words (as the page shows it).")


class AccuracyRowSerializer(serializers.Serializer):
    runs = serializers.IntegerField()
    median_abs_error = serializers.FloatField(allow_null=True, help_text="Median |estimate / published − 1|.")
    share_within_25_percent = serializers.FloatField(allow_null=True)
    errors = serializers.DictField(child=serializers.FloatField(), help_text="Run → estimate / published − 1.")


class SizingAccuracySerializer(serializers.Serializer):
    """The calibrated GPU-hours against published training runs (``planning.calibration.validation``)."""

    summary = serializers.CharField()
    tolerance = serializers.FloatField()
    in_sample = AccuracyRowSerializer(help_text="The shipped constants on the runs they were fitted on.")
    refit_in_sample = AccuracyRowSerializer(help_text="A least-squares refit on the same runs, on them.")
    leave_one_out = AccuracyRowSerializer(help_text="Each run under the refit on all the others.")
    held_out = AccuracyRowSerializer(help_text="The shipped constants on runs never used to fit.")
    refit = serializers.DictField(child=serializers.DictField(child=serializers.FloatField()), help_text=(
        "GPU class → MFU at its anchor size and per tenfold of the least-squares refit."))


class SizingSerializer(serializers.Serializer):
    """A sizing on the chosen GPU model, its cost and the comparison of every GPU model of the catalog."""

    gpu_model = serializers.CharField(source="gpu.name")
    figures = serializers.SerializerMethodField()
    costs = SizingCostsSerializer(help_text="The run's cost on the chosen GPU model, with the rates' sources.")
    fleet = SizingFleetSerializer(help_text="The fleet's GPUs of the chosen model and whether the run fits in them.")
    comparison = SizingComparisonSerializer(many=True, help_text="The same workload on every GPU model.")
    interruption_rate = InterruptionRateSerializer(help_text="The interruption rate behind the default goodput.")
    accuracy = SizingAccuracySerializer(help_text="How close the calibrated defaults come to published runs.")

    @extend_schema_field(SizingFiguresSerializer)
    def get_figures(self, obj):
        return {key: SizingFigureSerializer(figure).data for key, figure in obj["figures"].items()}
