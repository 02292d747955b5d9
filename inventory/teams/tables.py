"""The teams list: every team with its figures over a range."""

import django_tables2 as tables
from django.utils.html import format_html

from .models import team_url


class TeamTable(tables.Table):
    """The teams list (rows of ``figures.team_rows``), sortable by any figure; each name links to its page."""

    name = tables.Column("Team")
    nodes = tables.Column("Nodes owned", attrs={"td": {"class": "num"}})
    gpus = tables.Column("GPUs owned", attrs={"td": {"class": "num"}})
    util_mean = tables.Column("Util. of owned GPUs", attrs={"td": {"class": "num"}})
    allocated_gpu_hours = tables.Column("Allocated GPU-h", attrs={"td": {"class": "num"}})
    goodput_ratio = tables.Column("Goodput", attrs={"td": {"class": "num"}})
    interruptions = tables.Column("Infra. interruptions", attrs={"td": {"class": "num"}})
    interruptions_per_1000_gpu_days = tables.Column("per 1,000 GPU-days", attrs={"td": {"class": "num"}})
    lost_gpu_hours = tables.Column("Lost GPU-h", attrs={"td": {"class": "num"}})
    queue_wait_share = tables.Column("Queue wait", attrs={"td": {"class": "num"}})

    class Meta:
        attrs = {"class": "table compact"}
        empty_text = "No team: none was made, no node has an owner team and no Slurm job ran in this range."

    def render_name(self, value):
        url = team_url(value)
        return format_html('<a href="{}">{}</a>', url, value) if url else value

    def render_util_mean(self, value):
        return f"{value:.1f} %"

    def render_allocated_gpu_hours(self, value):
        return f"{value:,.1f}"

    def render_goodput_ratio(self, value):
        return f"{value * 100:.1f} %"

    def render_interruptions_per_1000_gpu_days(self, value):
        return f"{value:.1f}"

    def render_lost_gpu_hours(self, value):
        return f"{value:,.1f}"

    def render_queue_wait_share(self, value):
        return f"{value * 100:.1f} %"
