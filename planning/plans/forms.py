"""Capacity plan forms: the plan (name, first and last month, scenario assumptions), a planned workload (with its
start month and sizing inputs) and a bill-of-materials line. Months are entered as YYYY-MM (``MonthField``).

A plan's workload and line are validated in ``PlanWorkload.clean`` / ``PlanItem.clean``, so pages, API and admin
refuse the same things with the same messages."""

from datetime import date

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction

from inventory.models import GPUModel

from ..sizing import sizing
from ..sizing.forms import add_input_fields, add_validation_errors, given_inputs
from . import months, scope, workflow
from .models import (
    JOB_NAME_MAX,
    NOT_INPUTS,
    SCENARIO_FIELDS,
    SCOPE_FIELDS,
    CapacityPlan,
    PlanItem,
    PlanWorkload,
    next_month,
)


class MonthInput(forms.DateInput):
    """``<input type="month">``; a browser without month inputs shows a text box, where YYYY-MM works too."""

    input_type = "month"

    def __init__(self, attrs=None):
        super().__init__({"placeholder": "YYYY-MM", "pattern": months.PATTERN[1:-1], **(attrs or {})}, "%Y-%m")


class MonthField(forms.Field):
    """A calendar month, YYYY-MM; cleaned to the month's first day."""

    widget = MonthInput

    def prepare_value(self, value):
        """A date shows as its month, YYYY-MM (what the widget renders and what is posted back)."""
        return months.label(value) if isinstance(value, date) else value

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
        for name in ("node_price", "rental_gpu_hour_cost", "unmet_gpu_hour_cost"):  # money fields say their currency
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
        fields = ["name", "start", "gpu_model", "slurm_account", "slurm_job_name"]
        labels = {"gpu_model": "GPU model"}
        field_classes = {"start": MonthField}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["start"].label = "Start month"
        self.fields["slurm_job_name"].strip = False  # blank spaces are refused (PlanWorkload.clean), not dropped
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
        fields = ["node_model", "gpu_model", "description", "quantity", "unit_cost", "currency", "note"]
        labels = {"gpu_model": "GPU model"}
        widgets = {"note": forms.Textarea(attrs={"rows": 2})}
        help_texts = {"node_model": "One of node model, GPU model or description.",
                      "description": "The item's name where no model names it: e.g. NVIDIA QM9700 NDR switch.",
                      "note": "How the quantity and the price were derived (a quote, a share of the node price)."}

    def clean_currency(self):
        return (self.cleaned_data.get("currency") or "").upper()


def workload_name(gpu_model, inputs):
    """A planned workload's default name from its sizing inputs, e.g. "70B × 2000B tokens on H100 SXM 80GB"."""
    return f"{inputs['params_billion']:g}B × {inputs['tokens_billion']:g}B tokens on {gpu_model}"


class AddToPlanForm(forms.Form):
    """The sizing page's "Add to plan": the workload just sized (its GPU model and every sizing input given, as the
    plan's workload form stores them) into a draft plan, or into a new plan named here, from a start month inside
    the plan's months. ``save()`` returns the new ``PlanWorkload``."""

    plan = forms.ModelChoiceField(queryset=CapacityPlan.objects.all(), required=False,
                                  empty_label="— a new plan, named below —", help_text="A draft plan.")
    new_plan = forms.CharField(label="New plan's name", max_length=200, required=False)
    name = forms.CharField(label="Workload name", max_length=200)
    start = MonthField(label="Start month", help_text="YYYY-MM, one of the plan's months (a new plan starts next "
                                                      "month, for 12 months).")
    slurm_account = forms.CharField(label="Slurm account / team", max_length=100, required=False,
                                    help_text=PlanWorkload._meta.get_field("slurm_account").help_text)
    slurm_job_name = forms.CharField(label=PlanWorkload._meta.get_field("slurm_job_name").verbose_name.capitalize(),
                                     max_length=JOB_NAME_MAX, required=False, strip=False,
                                     help_text=PlanWorkload._meta.get_field("slurm_job_name").help_text)

    def __init__(self, *args, user, gpu_model, inputs, goodput_basis=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user, self.gpu_model, self.inputs, self.goodput_basis = user, gpu_model, inputs, goodput_basis or {}
        self.fields["start"].initial = next_month()
        self.fields["name"].initial = workload_name(gpu_model, inputs)
        # Only drafts are offered; another plan posted is refused by clean_plan, saying why.
        drafts = CapacityPlan.objects.filter(status=CapacityPlan.Status.DRAFT).order_by("name")
        self.fields["plan"].widget.choices = [("", self.fields["plan"].empty_label),
                                              *((plan.pk, plan.name) for plan in drafts)]

    def clean_plan(self):
        plan = self.cleaned_data["plan"]
        if plan is not None:
            workflow.check_editable(plan)
        return plan

    def clean_new_plan(self):
        return self.cleaned_data["new_plan"].strip()

    def clean(self):
        data = super().clean()
        plan, new_name = data.get("plan"), data.get("new_plan")
        if plan is not None and new_name:
            raise ValidationError("Choose a draft plan or name a new one, not both.")
        if plan is None and "plan" not in self.errors:
            if not new_name:
                raise ValidationError("Choose a draft plan, or name a new plan.")
            if not self.user.has_perm("planning.add_capacityplan"):
                self.add_error("new_plan", "You may not create plans: choose a draft plan.")
            elif CapacityPlan.objects.filter(name=new_name).exists():
                self.add_error("new_plan", f"A plan named {new_name} exists already: choose it above (if it is a "
                                           "draft) or give another name.")
            plan = CapacityPlan(name=new_name)  # its defaults: first month and horizon
        if plan is not None and data.get("start"):
            self.workload = self._workload(plan, data)
        return data

    def _workload(self, plan, data):
        first, start, last = plan.first_month, data["start"], plan.last_month
        if not first <= start <= last:
            self.add_error("start", f"{start:%Y-%m} is outside the plan's months, {first:%Y-%m} to {last:%Y-%m}: "
                                    "choose one of them, or lengthen the plan's horizon.")
            return None
        workload = PlanWorkload(plan=plan if plan.pk else None, name=data["name"], start=start,
                                slurm_account=data.get("slurm_account", ""),
                                slurm_job_name=data.get("slurm_job_name", ""), gpu_model=self.gpu_model,
                                inputs=self.inputs, goodput_basis=self.goodput_basis)
        try:
            workload.clean()
        except ValidationError as error:
            if hasattr(error, "error_dict") and "slurm_job_name" in error.error_dict:
                self.add_error("slurm_job_name", error.error_dict.pop("slurm_job_name"))
            if error.messages:
                self.add_error(None, error.messages)
        return workload

    def save(self):
        """Create the plan (a new one, owned by the user) and the workload; ``ValidationError`` when the plan
        stopped being a draft or its name was taken meanwhile."""
        plan, workload = self.cleaned_data["plan"], self.workload
        with transaction.atomic():
            if plan is None:
                try:
                    with transaction.atomic():
                        plan = CapacityPlan.objects.create(name=self.cleaned_data["new_plan"], owner=self.user)
                except IntegrityError as error:
                    raise ValidationError(f"A plan named {self.cleaned_data['new_plan']} exists already.") from error
            else:
                plan = CapacityPlan.objects.select_for_update().get(pk=plan.pk)
                workflow.check_editable(plan)
            workload.plan = plan
            workload.save()
        return workload

