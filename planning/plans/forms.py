"""Capacity plan forms: the plan (name, horizon, scenario assumptions), a planned workload (with its sizing inputs)
and a bill-of-materials line.

A plan's workload and line are validated in ``PlanWorkload.clean`` / ``PlanItem.clean``, so pages, API and admin
refuse the same things with the same messages."""

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS

from inventory.models import GPUModel

from ..sizing import sizing
from ..sizing.forms import add_input_fields, add_validation_errors, given_inputs
from .models import NOT_INPUTS, SCENARIO_FIELDS, CapacityPlan, PlanItem, PlanWorkload


class CapacityPlanForm(forms.ModelForm):
    class Meta:
        model = CapacityPlan
        fields = ["name", "description", "horizon_months", *SCENARIO_FIELDS]
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("node_price", "rental_gpu_hour_cost"):  # money fields say their currency
            self.fields[name].label = f"{self.fields[name].label} ({settings.COST_CURRENCY})"


class PlanWorkloadForm(forms.ModelForm):
    """A planned workload: name, start month, GPU model and the other inputs of ``sizing.Workload`` (the sizing
    page's fields). ``inputs`` keeps the required inputs and those set to something other than their default."""

    class Meta:
        model = PlanWorkload
        fields = ["name", "start_month", "gpu_model", "slurm_account"]
        labels = {"gpu_model": "GPU model"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["gpu_model"].queryset = GPUModel.objects.order_by("vendor", "name")
        if self.instance.plan_id:
            self.fields["start_month"].widget.attrs.update(min=1, max=self.instance.plan.horizon_months)
            self.fields["start_month"].help_text = f"1 = the plan's first month; its horizon is " \
                                                   f"{self.instance.plan.horizon_months} months."
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
