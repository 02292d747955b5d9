"""The goodput dashboard's form: the utilization dashboard's range and filters, and what to group by."""

from django import forms

from inventory.telemetry.forms import UtilizationFilterForm
from inventory.telemetry.models import SlurmJob
from inventory.telemetry.queries import DEFAULT_RANGE
from portal.forms import Select

from .queries import MONTH

# The groupings of ``queries.goodput_by`` (the utilization report's), team first: the default.
GROUP_LABELS = {
    "team": "team (Slurm account)",
    "partition": "partition",
    "site": "site",
    "gpu_model": "GPU model",
    "node": "node",
    "month": "month",
}


class GoodputFilterForm(UtilizationFilterForm):
    """``?range=30d&site=2&partition=train&gpu_model=1&team=vision&group_by=team``. The utilization form's site,
    partition (narrowed by site) and GPU model; its team is the jobs' Slurm account here (not a node's owner), and its
    heatmap does not apply to jobs."""

    group_by = forms.ChoiceField(
        choices=[(key, f"by {label}") for key, label in GROUP_LABELS.items()],
        required=False,
        label="Group by",
        widget=Select,
    )

    by = forms.ChoiceField(choices=[("", "all of the range"), (MONTH, "month by month")], required=False,
                           label="Split", widget=Select)

    owner_teams = False  # its teams are the jobs' Slurm accounts, read below

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["heatmap"]
        accounts = SlurmJob.objects.exclude(account="").order_by("account").values_list("account", flat=True)
        self.fields["team"].label = "Team (Slurm account)"
        self.fields["team"].choices = [("", "All teams"), *((a, a) for a in accounts.distinct())]

    def clean(self):
        data = super().clean()
        if data.get("by") == MONTH and data.get("group_by") == MONTH:
            self.add_error("by", "Months are split by month already: group by team, partition, site, GPU model or "
                           "node to split them.")
        return data

    def split(self):
        """``month`` to split each group month by month (``queries.goodput_by_month_of``), else None."""
        return self.cleaned_data.get("by") or None

    def choices(self):
        """(range key, filters, group_by); an invalid field falls back to its default, as on utilization."""
        range_key, filters, _ = super().choices()
        return range_key or DEFAULT_RANGE, filters, self.cleaned_data.get("group_by") or "team"
