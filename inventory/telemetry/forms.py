"""Forms of the telemetry pages: a source's settings, and the dashboard's range and filters."""

from django import forms

from inventory.models import GPUModel, Node, Site
from inventory.queries import chosen_site, fleet_gpu_models, partitions
from portal.forms import Select

from .models import TelemetrySource
from .queries import DEFAULT_RANGE, FILTER_LOOKUPS, HEATMAP_BY, RANGES


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
                  "auth_token"]

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


def distinct_node_values(field):
    return [(v, v) for v in Node.objects.exclude(**{field: ""}).order_by(field).values_list(field, flat=True)
            .distinct()]


class UtilizationFilterForm(forms.Form):
    """The dashboard's range, filters and heatmap rows (``?range=7d&site=2&team=vision``). Its selects are drawn
    in Python (``portal.forms.Select``): the page renders them on every request."""

    range = forms.ChoiceField(choices=[(key, r.label) for key, r in RANGES.items()], required=False)
    site = forms.ModelChoiceField(queryset=Site.objects.order_by("name"), required=False, empty_label="All sites",
                                  widget=Select)
    partition = forms.ChoiceField(required=False, widget=Select)
    gpu_model = forms.ModelChoiceField(queryset=GPUModel.objects.order_by("name"), required=False,
                                       empty_label="All GPU models", label="GPU model", widget=Select)
    team = forms.ChoiceField(required=False, widget=Select)
    heatmap = forms.ChoiceField(choices=[(by, f"by {by.upper() if by == 'gpu' else by}") for by in HEATMAP_BY],
                                required=False, label="Heatmap rows", widget=Select)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A site narrows the partitions to its own (htmx redraws this select with the dashboard); a partition of
        # another site left in the URL is then invalid and ignored by ``choices``.
        site_partitions = partitions(chosen_site(self.data))
        self.fields["partition"].choices = [("", "All partitions"), *((p, p) for p in site_partitions)]
        self.fields["gpu_model"].queryset = fleet_gpu_models()
        self.fields["team"].choices = [("", "All teams"), *distinct_node_values("owner_team")]

    def choices(self):
        """(range key, filters, heatmap rows) from the fields that are valid; defaults for the others, so a
        stale bookmark (a partition since renamed) still shows a dashboard."""
        self.is_valid()
        data = self.cleaned_data
        filters = {name: data[name] for name in FILTER_LOOKUPS if data.get(name)}
        return data.get("range") or DEFAULT_RANGE, filters, data.get("heatmap") or "node"
