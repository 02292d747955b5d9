"""Tables of the telemetry pages (django-tables2)."""

import django_tables2 as tables
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from portal.roles import sees_outbound_errors

from .models import SlurmJob, TelemetrySource, UnknownSeries

DATETIME = "Y-m-d H:i"


class TelemetrySourceTable(tables.Table):
    name = tables.Column(linkify=True)
    kind = tables.Column()
    site = tables.Column(linkify=True)
    status = tables.Column("Status", accessor="stale_since", order_by=("stale_since", "last_success_at"),
                           empty_values=())
    last_success_at = tables.DateTimeColumn(DATETIME, verbose_name="Last success")
    synced_until = tables.DateTimeColumn(DATETIME)
    consecutive_failures = tables.Column("Failures")
    unknown_count = tables.Column("Unknown GPUs")

    class Meta:
        model = TelemetrySource
        fields = ("name", "kind", "site", "enabled", "status", "last_success_at", "synced_until",
                  "consecutive_failures", "unknown_count")

    def render_status(self, record):
        if not record.enabled:
            return mark_safe('<span class="badge">disabled</span>')
        if record.stale_since:
            since = f"{timezone.localtime(record.stale_since):%Y-%m-%d %H:%M}"
            request = getattr(self, "request", None)  # set by RequestConfig; errors are for managers only
            if request and sees_outbound_errors(request.user, "inventory.change_telemetrysource"):
                return format_html('<span class="badge stale" title="{}">stale since {}</span>', record.last_error,
                                   since)
            return format_html('<span class="badge stale">stale since {}</span>', since)
        if record.last_success_at is None:
            return mark_safe('<span class="badge">not pulled yet</span>')
        return mark_safe('<span class="badge fresh">ok</span>')

    def render_kind(self, record):
        return record.get_kind_display().split(" (")[0]  # the short name; the page says the rest

    def value_status(self, record):
        if not record.enabled:
            return "disabled"
        return f"stale since {record.stale_since.isoformat()}" if record.stale_since else "ok"


class UnknownSeriesTable(tables.Table):
    first_seen = tables.DateTimeColumn(DATETIME)
    last_seen = tables.DateTimeColumn(DATETIME)

    class Meta:
        model = UnknownSeries
        fields = ("key", "uuid", "hostname", "gpu_index", "model_name", "first_seen", "last_seen")


class SlurmJobTable(tables.Table):
    queue_wait = tables.Column("Queue wait", accessor="start_time", orderable=False)
    submit_time = tables.DateTimeColumn(DATETIME)
    start_time = tables.DateTimeColumn(DATETIME)
    end_time = tables.DateTimeColumn(DATETIME)

    class Meta:
        model = SlurmJob
        fields = ("job_id", "name", "account", "partition", "state", "submit_time", "start_time", "end_time",
                  "queue_wait", "node_count", "gpus", "nodes", "restarts")

    def render_queue_wait(self, record):
        wait = record.queue_wait
        if wait is None:
            return "—"
        minutes = int(wait.total_seconds() // 60)
        return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
