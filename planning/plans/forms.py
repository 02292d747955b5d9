"""Capacity plan forms: the plan (name, first and last month, scenario assumptions), a planned workload (with its
start month and sizing inputs) and a bill-of-materials line. Months are entered as YYYY-MM (``MonthField``).

A plan's workload and line are validated in ``PlanWorkload.clean`` / ``PlanItem.clean``, so pages, API and admin
refuse the same things with the same messages."""

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS

from inventory.models import GPUModel

from ..sizing import sizing
from ..sizing.forms import add_input_fields, add_validation_errors, given_inputs
from . import months, scope
from .models import NOT_INPUTS, SCENARIO_FIELDS, SCOPE_FIELDS, CapacityPlan, PlanItem, PlanWorkload


class MonthInput(forms.DateInput):
    """``<input type="month">``; a browser without month inputs shows a text box, where YYYY-MM works too."""

    input_type = "month"

    def __init__(self, attrs=None):
        super().__init__({"placeholder": "YYYY-MM", "pattern": months.PATTERN[1:-1], **(attrs or {})}, "%Y-%m")


class MonthField(forms.Field):
    """A calendar month, YYYY-MM; cleaned to the month's first day."""

    widget = MonthInput

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return months.parse(value)
        except ValueError as error:
            raise forms.ValidationError(str(error), code="invalid") from error


class CapacityPlanForm(forms.ModelForm):
    """The plan's months are entered as the first and the last (YYYY-MM); ``horizon_months`` is stored, derived from
    them. It stays in the form as a hidden field so that the edit lock sees a concurrent change of the months."""

    first_month = MonthField(label="First month", help_text="YYYY-MM: the plan's first calendar month.")
    last_month = MonthField(label="Last month", help_text=f"YYYY-MM: its last month, at most {months.MAX_HORIZON} "
                                                          "months after the first.")

    class Meta:
        model = CapacityPlan
        fields = ["name", "description", "first_month", "horizon_months", *SCOPE_FIELDS, *SCENARIO_FIELDS]
        labels = {"gpu_model": "GPU model"}
        help_texts = scope.HELP
        widgets = {"description": forms.Textarea(attrs={"rows": 4}), "horizon_months": forms.HiddenInput}

    field_order = ["name", "description", "first_month", "last_month"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["horizon_months"].required = False  # derived in clean()
        self.initial.setdefault("first_month", self.instance.first_month)  # a new plan: next month
        self.initial.setdefault("last_month", self.instance.last_month)
        for name in ("node_price", "rental_gpu_hour_cost"):  # money fields say their currency
            self.fields[name].label = f"{self.fields[name].label} ({settings.COST_CURRENCY})"
        self.fields["min_utilization"].required = False  # as in the API: left out or blank, the plan's stays

    def clean_min_utilization(self):
        value = self.cleaned_data["min_utilization"]
        return self.instance.min_utilization if value is None else value

    def clean(self):
        data = super().clean()
        first, last = data.get("first_month"), data.get("last_month")
        if first is None or last is None:
            return data
        if message := months.check_range(first, last):
            self.add_error("last_month", message)
            return data
        data["horizon_months"] = months.horizon(first, last)
        if self.instance.pk:  # the plan's workloads must stay inside its months
            outside = [f"{w.name} ({months.label(w.start)})" for w in self.instance.workloads.all()
                       if months.outside(first, last, w.start)]
            if outside:
                self.add_error(None, f"Workloads start outside {months.label(first)} to {months.label(last)}: "
                                     f"{', '.join(outside)}. Move them first, or choose months that include them.")
        return data


class PlanWorkloadForm(forms.ModelForm):
    """A planned workload: name, start month (YYYY-MM), GPU model and the other inputs of ``sizing.Workload`` (the
    sizing page's fields). ``inputs`` keeps the required inputs and those set to something other than their default."""

    class Meta:
        model = PlanWorkload
        fields = ["name", "start", "gpu_model", "slurm_account"]
        labels = {"gpu_model": "GPU model"}
        field_classes = {"start": MonthField}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["start"].label = "Start month"
        self.fields["gpu_model"].queryset = GPUModel.objects.order_by("vendor", "name")
        if self.instance.plan_id:
            plan = self.instance.plan
            first, last = months.label(plan.first_month), months.label(plan.last_month)
            self.fields["start"].widget.attrs.update(min=first, max=last)
            self.fields["start"].help_text = f"YYYY-MM: one of the plan's months, {first} to {last}."
            if self.initial.get("start") is None:  # a new workload: the plan's first month
                self.initial["start"] = plan.first_month
        self.input_names = add_input_fields(self, exclude=NOT_INPUTS)
        if isinstance(self.instance.inputs, dict):
            self.initial.update({k: v for k, v in self.instance.inputs.items() if k in self.input_names})

    def clean(self):
        data = super().clean()
        gpu_model = data.get("gpu_model")
        if gpu_model is None or any(name in self.errors for name in self.input_names):
            return data
        inputs = given_inputs(data, self.input_names)
        add_validation_errors(self, sizing.validate(sizing.Workload(gpu_model=gpu_model.name, **inputs),
                                                    sizing.catalog_gpus()))
        self.instance.inputs = inputs  # PlanWorkload.clean() checks them again, with the start month
        return data

    def _update_errors(self, errors):
        # The model's errors about ``inputs`` (not a field of this form) are shown above the fields, unless the
        # fields show them already (then the model checked inputs the form did not accept).
        if hasattr(errors, "error_dict") and "inputs" in errors.error_dict:
            messages = errors.error_dict.pop("inputs")
            if not any(name in self.errors for name in ("gpu_model", *self.input_names)):
                errors.error_dict.setdefault(NON_FIELD_ERRORS, []).extend(messages)
            if not errors.error_dict:
                return
        super()._update_errors(errors)


class PlanItemForm(forms.ModelForm):
    """A bill-of-materials line: a node model, a GPU model or a description (switches, storage), so many at a
    unit cost; ``PlanItem.clean`` requires exactly one of the three and an ISO currency."""

    class Meta:
        model = PlanItem
        fields = ["node_model", "gpu_model", "description", "quantity", "unit_cost", "currency"]
        labels = {"gpu_model": "GPU model"}
        help_texts = {"node_model": "One of node model, GPU model or description.",
                      "description": "For switches, storage, cables: e.g. 4 × NVIDIA QM9700 NDR switches."}

    def clean_currency(self):
        return (self.cleaned_data.get("currency") or "").upper()
