"""Forms of the telemetry pages: a source's settings, and the dashboard's range and filters."""

from django import forms

from inventory.queries import chosen_site, filter_choices
from portal.forms import Select

from .models import TelemetrySource
from .queries import DEFAULT_RANGE, FILTER_LOOKUPS, HEATMAP_BY
from .ranges import UnknownParameter, range_key


class TelemetrySourceForm(forms.ModelForm):
    """The token is write-only: the field starts empty, and left empty on an edit it keeps the saved one."""

    auth_token = forms.CharField(
        required=False, max_length=500, widget=forms.PasswordInput(render_value=False),
        help_text="Optional: sent as 'Authorization: Bearer …' (Prometheus) or X-SLURM-USER-TOKEN (slurmrestd). "
        "Never shown again; leave empty to keep the saved one.",
    )
    clear_auth_token = forms.BooleanField(required=False, label="Remove the saved token")

    class Meta:
        model = TelemetrySource
        fields = ["name", "kind", "url", "site", "enabled", "interval_seconds", "timeout_seconds", "backfill_hours",
                  "auth_token", "user_name"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not (self.instance.pk and self.instance.auth_token):
            self.fields["clear_auth_token"].widget = forms.HiddenInput()  # nothing to remove

    def clean_auth_token(self):
        token = self.cleaned_data["auth_token"].strip()
        return token or (self.instance.auth_token if self.instance.pk else "")

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("clear_auth_token"):
            cleaned["auth_token"] = ""
        return cleaned


class RangeForm(forms.Form):
    """A report's range: a button (``?range=7d``), a calendar month (``?month=2026-11``) or dates
    (``?start=2026-11-01&end=2026-11-15``), read as one key of ``ranges.get_range`` (``range_key``)."""

    default_range = DEFAULT_RANGE

    # A range button (``ranges.RANGE_BUTTONS``) or any key of ``ranges.get_range``; a month or dates instead.
    range = forms.CharField(required=False, max_length=40)
    month = forms.CharField(required=False, max_length=7, label="Month",
                            widget=forms.TextInput(attrs={"type": "month", "placeholder": "YYYY-MM"}))
    start = forms.CharField(required=False, max_length=10, label="From",
                            widget=forms.TextInput(attrs={"type": "date", "placeholder": "YYYY-MM-DD"}))
    end = forms.CharField(required=False, max_length=10, label="To",
                          widget=forms.TextInput(attrs={"type": "date", "placeholder": "YYYY-MM-DD"}))

    def clean(self):
        """One range key from the range, the month or the dates (``ranges.range_key``); a bad one is an error on the
        field that named it."""
        data = super().clean()
        names = ("range", "month", "start", "end")
        if any(name in self.errors for name in names):
            return data
        try:
            data["range_key"] = range_key(data.get("range") or self.default_range,
                                          *(data.get(name) for name in names[1:]))
        except UnknownParameter as error:
            self.add_error("month" if data.get("month") else "start" if data.get("start") or data.get("end")
                           else "range", str(error))
        return data

    def range_key(self):
        """The key of the range asked for; the default where none (or a bad one) is given."""
        self.is_valid()
        return self.cleaned_data.get("range_key") or self.default_range


class UtilizationFilterForm(RangeForm):
    """The dashboard's range, filters and heatmap rows (``?range=7d&site=2&team=vision``). The page draws it on
    every request: its choices come from one query (``filter_choices``) and its selects are drawn in Python
    (``portal.forms.Select``). A site or GPU model is chosen by id (the filters look up by id)."""

    site = forms.TypedChoiceField(coerce=int, empty_value=None, required=False, widget=Select)
    partition = forms.ChoiceField(required=False, widget=Select)
    gpu_model = forms.TypedChoiceField(coerce=int, empty_value=None, required=False, label="GPU model",
                                       widget=Select)
    team = forms.ChoiceField(required=False, widget=Select)
    heatmap = forms.ChoiceField(choices=[(by, f"by {by.upper() if by == 'gpu' else by}") for by in HEATMAP_BY],
                                required=False, label="Heatmap rows", widget=Select)
    owner_teams = True  # the team filter offers the teams that own nodes

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A site narrows the partitions to its own (htmx redraws this select with the dashboard); a partition of
        # another site left in the URL is then invalid and ignored by ``choices``.
        offered = filter_choices(chosen_site(self.data), teams=self.owner_teams)
        self.fields["site"].choices = [("", "All sites"), *offered["site"]]
        self.fields["partition"].choices = [("", "All partitions"), *((p, p) for p in offered["partition"])]
        self.fields["gpu_model"].choices = [("", "All GPU models"), *offered["gpu_model"]]
        self.fields["team"].choices = [("", "All teams"), *((t, t) for t in offered["team"])]

    def choices(self):
        """(range key, filters, heatmap rows) from the fields that are valid; defaults for the others, so a
        stale bookmark (a partition since renamed) still shows a dashboard."""
        self.is_valid()
        data = self.cleaned_data
        filters = {name: data[name] for name in FILTER_LOOKUPS if data.get(name)}
        return data.get("range_key") or DEFAULT_RANGE, filters, data.get("heatmap") or "node"
