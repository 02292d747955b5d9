"""The interruptions list (django-tables2): each row links its job, node, GPU, fault and ticket."""

import django_tables2 as tables
from django.urls import reverse
from django.utils.html import format_html

from inventory.teams.models import team_url
from inventory.telemetry import xid
from inventory.telemetry.tables import DATETIME
from portal.tables import PortalTable

from .models import Interruption


class InterruptionTable(PortalTable):
    ended_at = tables.DateTimeColumn(DATETIME, verbose_name="Ended")
    job = tables.Column("Job", accessor="job__job_id", order_by="job__job_id")
    node = tables.Column(linkify=True)
    gpu = tables.Column("GPU", linkify=True)
    reason = tables.Column(attrs={"td": {"class": "wrap"}})
    fault = tables.Column("Fault", accessor="fault_ts", orderable=False, attrs={"td": {"class": "wrap"}})
    ticket = tables.Column("Ticket", accessor="pk", orderable=False)
    lost_gpu_hours = tables.Column("Lost GPU-h", attrs={"td": {"class": "num"}})

    class Meta:
        model = Interruption
        fields = (
            "ended_at",
            "job",
            "account",
            "partition",
            "cause",
            "reason",
            "node",
            "gpu",
            "fault",
            "ticket",
            "gpus",
            "lost_gpu_hours",
        )

    def render_job(self, record, value):
        return format_html('<a href="{}">{}</a>', reverse("inventory-api:slurmjob-detail", args=[record.job_id]), value)

    def render_lost_gpu_hours(self, value):
        return f"{value:,.2f}"  # an estimate: hundredths, not the float's 15 digits (exports keep the value)

    def value_lost_gpu_hours(self, value):
        return value

    def value_job(self, value):
        return value

    def render_account(self, value):
        url = team_url(value)
        return format_html('<a href="{}">{}</a>', url, value) if url else value

    def value_account(self, value):
        return value

    def render_gpu(self, record, value):
        return f"gpu{record.gpu.slot}"

    def render_fault(self, record):
        if record.xid_event_id:
            event = record.xid_event
            return format_html(
                '<a href="{}" title="{}">XID {}</a> <span class="muted">{}</span>',
                reverse("inventory:gpu_detail", args=[event.gpu_id]),
                xid.describe(event.code),
                event.code,
                xid.meaning(event.code),
            )
        # Times formatted before format_html, which escapes its arguments into text (no date format then).
        if record.transition_id:
            return format_html("degraded at {}", f"{record.transition.created:%Y-%m-%d %H:%M}")
        if record.fault_ts:
            return format_html("{} at {}", record.get_reason_display(), f"{record.fault_ts:%Y-%m-%d %H:%M}")
        return "—"

    def value_fault(self, record):
        if record.xid_event_id:
            return f"XID {record.xid_event.code}: {xid.meaning(record.xid_event.code)}"
        return record.fault_ts.isoformat() if record.fault_ts else ""

    def render_ticket(self, record):
        ticket = getattr(self, "tickets", {}).get(record.pk)
        if not ticket:
            return "—"
        return format_html('<a href="{}">#{}</a>', ticket["url"], ticket["id"])

    def value_ticket(self, record):
        ticket = getattr(self, "tickets", {}).get(record.pk)
        return ticket["id"] if ticket else ""
