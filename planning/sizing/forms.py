"""Form fields for the inputs of ``sizing.Workload``, built from its metadata (labels, help texts, defaults, kinds):
the sizing page's form (here) and a capacity plan's workload form share them. Limits are checked by
``sizing.validate``, so pages, API and models refuse the same inputs with the same messages."""

from dataclasses import MISSING

from django import forms

from . import sizing


def form_field(spec):
    """The form field of a ``Workload`` input; its limits are checked by ``sizing.validate``."""
    meta = spec.metadata
    options = {"label": meta["label"], "help_text": meta["help"], "required": spec.default is MISSING}
    if meta["kind"] == "choice":
        return forms.ChoiceField(choices=meta["choices"], **options)
    if meta["kind"] in ("gpu", "team"):
        return forms.ChoiceField(**options)  # choices: the catalog, the teams with a factor; set by the form
    field_class = forms.IntegerField if meta["kind"] == "int" else forms.FloatField
    return field_class(widget=forms.NumberInput(attrs={"step": "any"}), **options)


def add_input_fields(form, exclude=()):
    """Add a field for every ``Workload`` input but those in ``exclude``; optional inputs show their default as
    the placeholder. Returns the names added."""
    names = [name for name in sizing.INPUTS if name not in exclude]
    for name in names:
        spec = sizing.INPUTS[name]
        form.fields[name] = form_field(spec)
        if spec.default not in (MISSING, None):
            form.fields[name].widget.attrs["placeholder"] = spec.default
    return names


def given_inputs(cleaned_data, names):
    """The inputs among ``names`` that say something: required ones, and optional ones that are filled in and
    differ from the workload's default (so a plan follows the defaults it did not override)."""
    given = {}
    for name in names:
        spec, value = sizing.INPUTS[name], cleaned_data.get(name)
        if value in (None, ""):
            continue
        if spec.default is not MISSING and value == spec.default:
            continue
        given[name] = value
    return given


def add_validation_errors(form, errors):
    """``sizing.validate``'s ``{input: [message]}`` onto the form's fields (non-field errors for inputs it lacks)."""
    for name, messages in errors.items():
        form.add_error(name if name in form.fields else None, messages)


class SizingForm(forms.Form):
    """The inputs of ``sizing.Workload``; blank optional inputs take the workload's defaults. ``default_gpu``
    (e.g. the fleet's most common model) is preselected; None: the catalog's first."""

    def __init__(self, *args, gpus, default_gpu=None, factors=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.gpus, self.factors = gpus, factors or {}
        add_input_fields(self)
        self.fields["gpu_model"].choices = [(name, name) for name in gpus]
        self.fields["gpu_model"].initial = default_gpu
        self.fields["team"].choices = [("", "none (factor 1)"), *(
            (team, f"{team}: {factor.factor:.2f}× from {factor.workloads} finished") for team, factor
            in sorted(self.factors.items()))]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        data = {name: value for name, value in data.items() if value not in (None, "")}
        add_validation_errors(self, sizing.validate(sizing.Workload(**data), self.gpus, self.factors))
        return data

    def workload(self):
        return sizing.Workload(**self.cleaned_data)
