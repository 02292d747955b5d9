"""Django admin for telemetry (imported by ``inventory/admin.py``, which Django's autodiscovery finds).
Sources are edited here as in the portal (the token write-only); what the pulls write is read-only."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .forms import TelemetrySourceForm
from .models import GPUDaily, GPUHourly, NodeDaily, NodeHourly, SlurmJob, TelemetrySource, UnknownSeries


@admin.register(TelemetrySource)
class TelemetrySourceAdmin(SimpleHistoryAdmin):
    form = TelemetrySourceForm
    list_display = ("name", "kind", "site", "enabled", "last_success_at", "stale_since", "consecutive_failures",
                    "synced_until")
    list_filter = ("kind", "enabled", "site")
    list_select_related = ("site",)
    search_fields = ("name", "url")
    autocomplete_fields = ("site",)
    readonly_fields = ("synced_until", "last_attempt_at", "last_success_at", "last_error", "last_error_at",
                       "stale_since", "consecutive_failures", "next_attempt_at", "created", "updated")
    history_list_display = ("name", "kind", "url", "enabled")


@admin.register(UnknownSeries)
class UnknownSeriesAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("key", "source", "uuid", "hostname", "gpu_index", "model_name", "first_seen", "last_seen")
    list_filter = ("source",)
    list_select_related = ("source",)
    search_fields = ("key", "uuid", "hostname")


@admin.register(SlurmJob)
class SlurmJobAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("job_id", "source", "account", "partition", "state", "submit_time", "start_time", "end_time",
                    "node_count", "gpus")
    list_filter = ("source", "partition", "state")
    list_select_related = ("source",)
    search_fields = ("job_id", "name", "user", "account")
    show_full_result_count = False


class RollupAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Millions of rows: no full count, filters by object id in the URL (``?gpu__id__exact=3``)."""

    list_display = ("__str__", "util_mean", "util_max", "mem_used_mean_gb", "power_mean_w", "energy_wh",
                    "xid_errors", "samples")
    show_full_result_count = False


@admin.register(GPUHourly)
class GPUHourlyAdmin(RollupAdmin):
    ordering = ("-hour",)


@admin.register(NodeHourly)
class NodeHourlyAdmin(RollupAdmin):
    list_display = (*RollupAdmin.list_display, "gpus_reporting")
    ordering = ("-hour",)


@admin.register(GPUDaily)
class GPUDailyAdmin(RollupAdmin):
    list_display = (*RollupAdmin.list_display, "hours")
    ordering = ("-day",)


@admin.register(NodeDaily)
class NodeDailyAdmin(RollupAdmin):
    list_display = (*RollupAdmin.list_display, "hours", "gpus_reporting")
    ordering = ("-day",)
