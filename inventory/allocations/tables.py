"""Tables of allocations (with their use, from ``usage.figures``) and of requests."""

import django_tables2 as tables

from portal.tables import PortalTable

from ..teams.models import team_url
from .models import AllocationRequest, TeamAllocation


class TeamAllocationTable(PortalTable):
    """Allocations with their use: the view attaches ``figures`` (``usage.Figures``) to each row."""

    allocation = tables.Column(accessor="pk", verbose_name="#", linkify=True)
    team = tables.Column(linkify=lambda record: team_url(record.team.name))  # teams' pages go by name
    partition = tables.Column(default="every partition")
    gpu_model = tables.Column(verbose_name="GPU model", default="any")
    start = tables.DateColumn("Y-m-d")
    end = tables.DateColumn("Y-m-d")
    gpu_hours = tables.Column("Budget (GPU-h)", attrs={"td": {"class": "num"}})
    used = tables.Column("Used (GPU-h)", accessor="figures__used", attrs={"td": {"class": "num"}})
    percent = tables.Column("Used %", accessor="figures__percent", attrs={"td": {"class": "num"}})
    left = tables.Column("Left (GPU-h)", accessor="figures__left", attrs={"td": {"class": "num"}})
    running = tables.Column("Running GPUs", accessor="figures__running", attrs={"td": {"class": "num"}})
    max_gpus = tables.Column("GPU limit", attrs={"td": {"class": "num"}})
    exhausted_on = tables.DateColumn("Y-m-d", verbose_name="Runs out", accessor="figures__exhausted_on")
    state = tables.Column("Period", accessor="figures__state")

    class Meta:
        model = TeamAllocation
        fields = ()
        sequence = ("allocation", "team", "partition", "gpu_model", "start", "end", "gpu_hours", "used", "percent",
                    "left", "running", "max_gpus", "exhausted_on", "state")
        empty_text = "No allocations yet: a team asks for one (Request an allocation) and a manager approves it."

    def render_gpu_hours(self, value):
        return f"{value:,.0f}"

    def render_used(self, value):
        return f"{value:,.1f}"

    def render_left(self, value):
        return f"{value:,.1f}"


class AllocationRequestTable(PortalTable):
    request = tables.Column(accessor="pk", verbose_name="#", linkify=True)
    created = tables.DateTimeColumn("Y-m-d H:i", verbose_name="Asked")
    team = tables.Column(linkify=lambda record: team_url(record.team.name))  # teams' pages go by name
    kind = tables.Column()
    status = tables.Column()
    scope = tables.Column(accessor="scope", orderable=False)
    start = tables.DateColumn("Y-m-d")
    end = tables.DateColumn("Y-m-d")
    gpu_hours = tables.Column("Budget (GPU-h)", attrs={"td": {"class": "num"}})
    max_gpus = tables.Column("GPU limit", attrs={"td": {"class": "num"}})
    requested_by = tables.Column("By")

    class Meta:
        model = AllocationRequest
        fields = ()
        sequence = ("request", "created", "team", "kind", "status", "scope", "start", "end", "gpu_hours", "max_gpus",
                    "requested_by")
        empty_text = "No allocation requests."

    def render_gpu_hours(self, value):
        return f"{value:,.0f}"
