"""The telemetry API's serializers: sources, unknown series, hourly rollups, Slurm jobs, and the query parameters
and answers of the utilization and allocations reports."""

from rest_framework import serializers

from inventory.queries import partitions, unknown_partition
from portal.api.serializers import COMMON, TIMESTAMPS, OutboundErrorsMixin, PortalModelSerializer
from portal.forms import parse_month

from .. import queries as telemetry_queries
from .. import ranges, slurm_figures
from ..models import GPUHourly, SlurmJob, TelemetrySource, UnknownSeries
from ..rollups import HEALTH_FIELDS

SOURCE_ERRORS_PERMISSION = "inventory.change_telemetrysource"
SOURCE_STATUS = ["synced_until", "last_attempt_at", "last_success_at", "last_error", "last_error_at", "stale_since",
                 "consecutive_failures", "next_attempt_at"]


class TelemetrySourceSerializer(OutboundErrorsMixin, PortalModelSerializer):
    """A telemetry source. ``auth_token`` is write-only (never returned; ``has_auth_token`` says whether one is
    saved; omit it on an update to keep it, send "" to remove it); the pull status fields are read-only;
    ``last_error`` is null for those who may not change sources (only managers read errors)."""

    outbound_error_fields = ("last_error",)
    outbound_errors_permission = SOURCE_ERRORS_PERMISSION

    site_name = serializers.CharField(source="site.name", read_only=True, allow_null=True)
    auth_token = serializers.CharField(write_only=True, required=False, allow_blank=True, max_length=500,
                                       style={"input_type": "password"},
                                       help_text="Write-only: sent to the source, never returned.")
    has_auth_token = serializers.SerializerMethodField(help_text="Whether a token is saved.")
    unknown_count = serializers.IntegerField(read_only=True, help_text="Series that match no GPU in the inventory.")

    class Meta:
        model = TelemetrySource
        fields = [
            *COMMON, "name", "kind", "url", "site", "site_name", "enabled", "interval_seconds", "timeout_seconds",
            "backfill_hours", "auth_token", "has_auth_token", "user_name", *SOURCE_STATUS, "unknown_count",
            *TIMESTAMPS,
        ]
        read_only_fields = SOURCE_STATUS

    def get_has_auth_token(self, obj) -> bool:
        return bool(obj.auth_token)


class UnknownSeriesSerializer(PortalModelSerializer):
    """A series a source reports that matches no GPU in the inventory (by UUID, nor by hostname + index)."""

    source_name = serializers.CharField(source="source.name", read_only=True)

    class Meta:
        model = UnknownSeries
        fields = [*COMMON, "source", "source_name", "key", "uuid", "hostname", "gpu_index", "model_name",
                  "first_seen", "last_seen"]
        read_only_fields = fields


class GPUHourlySerializer(serializers.ModelSerializer):
    """One GPU's hour: utilization, memory, power, energy, error counts and health (temperatures, SM clock, ECC /
    NVLink / PCIe errors, retired pages, remapped rows); null: not reported, never zero."""

    node = serializers.IntegerField(source="gpu.node_id", read_only=True, allow_null=True)

    class Meta:
        model = GPUHourly
        fields = ["id", "gpu", "node", "hour", "util_mean", "util_max", "mem_used_mean_gb", "power_mean_w",
                  "energy_wh", "gr_engine_active_mean", "tensor_active_mean", "xid_errors", "samples", *HEALTH_FIELDS]
        read_only_fields = fields


class SlurmJobSerializer(PortalModelSerializer):
    """A job from Slurm accounting, as a Slurm source's pulls recorded it (read-only)."""

    source_name = serializers.CharField(source="source.name", read_only=True)
    queue_wait_hours = serializers.SerializerMethodField(
        help_text="Start time − submit time in hours (never negative); null while the job has not started.")
    gpu_hours = serializers.SerializerMethodField(
        help_text="Allocated GPUs × the hours the job ran (until now while it runs).")

    class Meta:
        model = SlurmJob
        fields = [*COMMON, "source", "source_name", "job_id", "cluster", "name", "user", "account", "partition",
                  "state", "submit_time", "start_time", "end_time", "queue_wait_hours", "nodes", "node_count", "gpus",
                  "gpu_hours", "restarts", "reason"]
        read_only_fields = fields

    def get_queue_wait_hours(self, obj) -> float | None:
        wait = obj.queue_wait
        return None if wait is None else max(wait.total_seconds(), 0) / 3600

    def get_gpu_hours(self, obj) -> float:
        return obj.gpu_hours()


def choices_error(name, values):
    return {"invalid_choice": f"Unknown {name} '{{input}}'; use one of {', '.join(values)}."}


def range_field(help_text):
    return serializers.ChoiceField(
        choices=list(telemetry_queries.RANGES), default=telemetry_queries.DEFAULT_RANGE, help_text=help_text,
        error_messages=choices_error("range", telemetry_queries.RANGES),
    )


class ReportQuerySerializer(serializers.Serializer):
    """Query parameters of a telemetry report; ``filters()``: those of ``filter_names`` that were given."""

    filter_names = ()

    def filters(self):
        return {name: self.validated_data[name] for name in self.filter_names if name in self.validated_data}


class UtilizationQuerySerializer(ReportQuerySerializer):
    """The query parameters of ``/api/inventory/utilization/``."""

    filter_names = tuple(telemetry_queries.FILTER_LOOKUPS)

    group_by = serializers.ChoiceField(
        choices=list(telemetry_queries.GROUPS), default="site", help_text="What one row of the answer is.",
        error_messages=choices_error("group_by", telemetry_queries.GROUPS),
    )
    range = serializers.CharField(
        default=telemetry_queries.DEFAULT_RANGE, max_length=40,
        help_text="24h and 7d read hourly rollups, each ending with the current hour; 30d, 90d and 1y daily rollups, "
        "each ending with the current day; last_month, a month (2026-11) or dates (2026-10-01..2026-10-15) whole "
        "local days (TIME_ZONE), until now while they last.")
    month = serializers.CharField(required=False, max_length=7, help_text="A calendar month, YYYY-MM, instead of "
                                  "the range.")
    start = serializers.CharField(required=False, max_length=10, help_text="With `end`: dates, YYYY-MM-DD (both "
                                  "included), instead of the range.")
    end = serializers.CharField(required=False, max_length=10, help_text="The last day of the dates, YYYY-MM-DD.")
    site = serializers.IntegerField(required=False, help_text="Only GPUs in nodes of this site (id).")
    partition = serializers.CharField(required=False, help_text="Only GPUs in nodes of this partition.")
    gpu_model = serializers.IntegerField(required=False, help_text="Only GPUs of this GPU model (id).")
    team = serializers.CharField(required=False, help_text="Only GPUs in nodes of this owner team.")

    def validate(self, data):
        """A partition must be one of the chosen site's, as the dashboard offers: else the answer would be empty
        with no word why."""
        site, partition = data.get("site"), data.get("partition")
        if site and partition and partition not in (known := partitions(site)):
            raise serializers.ValidationError({"partition": [unknown_partition(site, partition, known)]})
        month, start, end = (data.pop(name, None) for name in ("month", "start", "end"))
        try:  # one range key from the range, the month or the dates (``ranges.range_key``)
            data["range"] = ranges.range_key(data.get("range"), month, start, end)
        except ranges.UnknownParameter as error:
            raise serializers.ValidationError({"month" if month else "start" if start or end else "range":
                                               [str(error)]}) from None
        return data


class UtilizationGroupSerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, help_text="Site, GPU model or node id; null for partition and "
                                  "team, and for GPUs in no node.")
    name = serializers.CharField(help_text='The group\'s name; "(none)" for nodes without a partition or team.')
    gpus = serializers.IntegerField(help_text="GPUs that reported in the range.")
    gpu_hours = serializers.FloatField(help_text="GPU-hours with a utilization reading.")
    util_mean = serializers.FloatField(allow_null=True, help_text="Mean utilization (%), weighted by hours.")
    idle_gpu_hours = serializers.FloatField(help_text="GPU-hours × (1 − utilization / 100), summed.")
    idle_cost = serializers.FloatField(help_text="Idle GPU-hours × each node's cost per GPU-hour from its contracts, "
                                       "else × idle_gpu_hour_cost.")
    idle_gpu_hours_at_default_cost = serializers.FloatField(
        help_text="Of the idle GPU-hours, those of nodes without a cost from their contracts: priced at "
        "idle_gpu_hour_cost.")


class StaleSourceSerializer(OutboundErrorsMixin, serializers.ModelSerializer):
    outbound_error_fields = ("last_error",)
    outbound_errors_permission = SOURCE_ERRORS_PERMISSION

    class Meta:
        model = TelemetrySource
        fields = ["id", "name", "stale_since", "synced_until", "consecutive_failures", "last_error"]
        read_only_fields = fields


class UtilizationSerializer(serializers.Serializer):
    group_by = serializers.CharField()
    range = serializers.CharField()
    rollup = serializers.ChoiceField(choices=["hourly", "daily"], help_text="Which rollup table the range reads.")
    start = serializers.DateTimeField(help_text="Start of the range (its first hour or day).")
    end = serializers.DateTimeField(help_text="When the figures were computed; a calendar range's last midnight.")
    currency = serializers.CharField()
    idle_gpu_hour_cost = serializers.FloatField(help_text="The cost per idle GPU-hour of nodes without a cost from "
                                                "their contracts.")
    idle_cost_basis = serializers.CharField(help_text="What the idle cost priced, in words (the dashboard's label).")
    groups = UtilizationGroupSerializer(many=True, help_text="Most idle GPU-hours first.")
    stale_sources = StaleSourceSerializer(
        many=True, help_text="Enabled sources whose pulls fail: their hours after synced_until are missing from "
        "these figures (not counted as idle).",
    )


class AllocationQuerySerializer(ReportQuerySerializer):
    """The query parameters of ``/api/inventory/allocations/``."""

    filter_names = tuple(slurm_figures.JOB_FILTER_LOOKUPS)

    group_by = serializers.ChoiceField(
        choices=list(slurm_figures.ALLOCATION_GROUPS), default="account",
        help_text="What one row of the answer is: a team (Slurm account) or a partition.",
        error_messages=choices_error("group_by", slurm_figures.ALLOCATION_GROUPS),
    )
    range = range_field("From the start of the range's first hour (24h, 7d) or day (30d, 90d, 1y) until now.")
    month = serializers.CharField(
        required=False, help_text="A calendar month, YYYY-MM, instead of the range: from its first to its last local "
        "midnight (TIME_ZONE), or until now while it lasts; the monthly statements' months.")
    partition = serializers.CharField(required=False, help_text="Only jobs of this Slurm partition.")
    team = serializers.CharField(required=False, help_text="Only jobs of this Slurm account (team).")

    def validate_month(self, value):
        try:
            return parse_month(value)
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None


class AllocationGroupSerializer(serializers.Serializer):
    name = serializers.CharField(help_text='The team (Slurm account) or partition; "(none)" for jobs without one.')
    gpu_hours = serializers.FloatField(help_text="Allocated GPUs × the hours of the jobs' runs inside the range.")
    jobs = serializers.IntegerField(help_text="Jobs with GPUs allocated for some time in the range.")
    multi_node_gpu_hours = serializers.FloatField(
        allow_null=True, help_text="Partitions only: the GPU-hours of jobs that span more than one node.")
    multi_node_share_percent = serializers.FloatField(
        source="multi_node_share", allow_null=True,
        help_text="Partitions only: multi-node GPU-hours as a percentage of the partition's GPU-hours.")
    jobs_started = serializers.IntegerField(
        allow_null=True, help_text="Partitions only: jobs that started in the range (the queue waits' jobs).")
    queue_wait_p50_hours = serializers.FloatField(
        allow_null=True, help_text="Partitions only: median queue wait (start − submit) of the jobs started in the "
        "range, in hours.")
    queue_wait_p95_hours = serializers.FloatField(
        allow_null=True, help_text="Partitions only: 95th percentile of that queue wait, in hours.")


class AllocationsSerializer(serializers.Serializer):
    group_by = serializers.CharField()
    range = serializers.CharField(help_text="The range, or the month (YYYY-MM) when one was asked for.")
    start = serializers.DateTimeField(help_text="Start of the range (its first hour or day) or month.")
    end = serializers.DateTimeField(help_text="When the figures were computed (running jobs count until then), or "
                                    "the end of the month.")
    groups = AllocationGroupSerializer(many=True, help_text="Most GPU-hours first.")
    stale_sources = StaleSourceSerializer(
        many=True, help_text="Enabled Slurm sources whose pulls fail: jobs they have not delivered are missing from "
        "these figures.",
    )
