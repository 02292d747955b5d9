"""Telemetry data. Raw samples stay in the source (Prometheus keeps them); the portal keeps one row per
GPU and per node per hour and per day, written with upserts keyed by (object, hour) so a retried or
overlapping pull replaces rows instead of adding to them.

The inventory's models are named by string ("inventory.GPU"): ``inventory/models.py`` imports this module (Django
finds the app's models there), so importing it back would be a cycle."""

from datetime import timedelta
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from simple_history.models import HistoricalRecords

from portal import outbound
from portal.history import ChangeRecord
from portal.models import PortalModel


def validate_source_url(value):
    """An http(s) URL with a host that the outbound policy allows (``portal.outbound``), without credentials.
    Unlike Django's URLValidator this accepts single-label hosts such as ``http://prometheus:9090``, the usual
    name of a service inside a cluster."""
    if urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname:
        raise ValidationError("Enter an http:// or https:// URL with a host name, e.g. http://prometheus:9090.")
    problem = outbound.url_problem(value, "put the token in the auth token field.")
    if problem:
        raise ValidationError(problem)


class TelemetrySource(PortalModel):
    class Kind(models.TextChoices):
        PROMETHEUS = "prometheus", "Prometheus (DCGM exporter series)"
        EXPORTER = "exporter", "DCGM exporter scrape (/metrics)"
        SLURM = "slurm", "Slurm accounting (slurmrestd or sacct --json)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    url = models.CharField(
        "URL", max_length=500, validators=[validate_source_url],
        help_text="Prometheus base URL (http://prom:9090), exporter /metrics URL, or the Slurm jobs URL "
        "(slurmrestd /slurmdb/v0.0.40/jobs, or any URL serving sacct --json output).",
    )
    site = models.ForeignKey("inventory.Site", on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="telemetry_sources", help_text="The site this source covers, if one.")
    enabled = models.BooleanField(default=True)
    interval_seconds = models.PositiveIntegerField(default=300, help_text="How often beat pulls this source.")
    timeout_seconds = models.PositiveIntegerField(default=10, help_text="Every request to the source is bounded.")
    backfill_hours = models.PositiveIntegerField(
        default=168, help_text="On first contact, how far back to pull (Prometheus and Slurm)."
    )
    auth_token = models.CharField(
        max_length=500, blank=True,
        help_text="Optional: sent as 'Authorization: Bearer …' (Prometheus) or X-SLURM-USER-TOKEN (slurmrestd).",
    )
    user_name = models.CharField(
        "user name", max_length=100, blank=True,
        help_text="Optional: sent as X-SLURM-USER-NAME with the token (slurmrestd with JWT: the Slurm user the token "
        "was issued to, e.g. slurm; see docs/slurm.md).",
    )
    # State of the pulls, written by the pull task.
    synced_until = models.DateTimeField(null=True, blank=True, help_text="Data is complete up to this time.")
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    stale_since = models.DateTimeField(null=True, blank=True, help_text="First failure since the last success.")
    consecutive_failures = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # The token is a secret: never copied into the history table. Pull state changes every minute: noise.
    history = HistoricalRecords(bases=[ChangeRecord], excluded_fields=[
        "auth_token", "synced_until", "last_attempt_at", "last_success_at", "last_error", "last_error_at",
        "stale_since", "consecutive_failures", "next_attempt_at", "updated",
    ])

    class Meta:
        ordering = ["name"]
        verbose_name = "telemetry source"

    def __str__(self):
        return self.name

    @property
    def is_stale(self):
        return self.stale_since is not None

    def is_due(self, now=None):
        now = now or timezone.now()
        return self.enabled and (self.next_attempt_at is None or self.next_attempt_at <= now)


class UnknownSeries(models.Model):
    """A series from a source that matches no GPU in the inventory: listed on the source's page."""

    source = models.ForeignKey(TelemetrySource, on_delete=models.CASCADE, related_name="unknown_series")
    key = models.CharField(max_length=300, help_text="UUID, or hostname/gpu index.")
    uuid = models.CharField("UUID", max_length=100, blank=True)
    hostname = models.CharField(max_length=100, blank=True)
    gpu_index = models.CharField("GPU index", max_length=10, blank=True)
    model_name = models.CharField(max_length=100, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-last_seen", "key"]
        constraints = [models.UniqueConstraint(fields=["source", "key"], name="unknown_series_unique_key")]
        verbose_name_plural = "unknown series"

    def __str__(self):
        return self.key


class TelemetrySample(models.Model):
    """One scrape of one GPU (exporter sources only: Prometheus keeps its own samples). Kept until its
    hour is complete and rolled up; the pull task prunes older ones."""

    source = models.ForeignKey(TelemetrySource, on_delete=models.CASCADE, related_name="samples")
    gpu = models.ForeignKey("inventory.GPU", on_delete=models.CASCADE, related_name="+")
    ts = models.DateTimeField()
    util = models.FloatField(null=True)
    mem_used_gb = models.FloatField(null=True)
    mem_free_gb = models.FloatField(null=True)
    power_w = models.FloatField(null=True)
    gr_engine_active = models.FloatField(null=True)
    tensor_active = models.FloatField(null=True)
    xid = models.IntegerField(null=True, help_text="Last XID error code reported (0: none).")
    energy_mj = models.FloatField(
        "energy counter (mJ)", null=True,
        help_text="DCGM's total energy counter: mJ since the driver loaded (back to 0 on a reload or reboot).",
    )
    gpu_temp_c = models.FloatField("GPU temperature (°C)", null=True)
    memory_temp_c = models.FloatField("memory temperature (°C)", null=True)
    sm_clock_mhz = models.FloatField("SM clock (MHz)", null=True)
    # DCGM's error counters as read; the rollup stores their increase per hour.
    ecc_sbe = models.FloatField("single-bit ECC errors (counter)", null=True)
    ecc_dbe = models.FloatField("double-bit ECC errors (counter)", null=True)
    nvlink_errors = models.FloatField("NVLink errors (counter)", null=True)
    pcie_replay = models.FloatField("PCIe replays (counter)", null=True)
    retired_pages = models.FloatField(null=True)
    remapped_rows = models.FloatField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu", "ts"], name="sample_unique_gpu_ts")]
        indexes = [models.Index(fields=["ts"])]

    def __str__(self):
        return f"GPU {self.gpu_id} @ {self.ts:%Y-%m-%d %H:%M:%S}"


class RollupFields(models.Model):
    """What an hour (or a day) of a GPU or node looks like. Fields are null when the source did not
    report them: missing data is shown as missing, never as zero. Counters have database defaults
    (``db_default``) because bulk upserts write only the columns they know."""

    util_mean = models.FloatField("mean utilization (%)", null=True)
    util_max = models.FloatField("max utilization (%)", null=True)
    mem_used_mean_gb = models.FloatField("mean memory used (GB)", null=True)
    power_mean_w = models.FloatField("mean power (W)", null=True)
    energy_wh = models.FloatField("energy (Wh)", null=True)
    gr_engine_active_mean = models.FloatField(null=True)
    tensor_active_mean = models.FloatField(null=True)
    xid_errors = models.PositiveIntegerField(
        db_default=0, help_text="Hardware XID events (a new fault code on the sticky XID gauge), not samples.")
    samples = models.PositiveIntegerField(db_default=0)
    # GPU health (issue 19), null where the exporter does not publish the field.
    gpu_temp_max_c = models.FloatField("max GPU temperature (°C)", null=True)
    memory_temp_max_c = models.FloatField("max memory temperature (°C)", null=True)
    sm_clock_mean_mhz = models.FloatField("mean SM clock (MHz)", null=True)
    ecc_sbe_errors = models.PositiveIntegerField("single-bit ECC errors", null=True,
                                                 help_text="Counted in the period (the counter's increase).")
    ecc_dbe_errors = models.PositiveIntegerField("double-bit ECC errors", null=True,
                                                 help_text="Counted in the period (the counter's increase).")
    nvlink_errors = models.PositiveIntegerField("NVLink errors", null=True,
                                                help_text="CRC, replay and recovery errors counted in the period.")
    pcie_replays = models.PositiveIntegerField("PCIe replays", null=True, help_text="Counted in the period.")
    retired_pages = models.PositiveIntegerField(null=True, help_text="Retired memory pages in all (the highest "
                                                "reading of the period; nodes: their GPUs' summed).")
    remapped_rows = models.PositiveIntegerField(null=True, help_text="Remapped memory rows in all (the highest "
                                                "reading of the period; nodes: their GPUs' summed).")

    class Meta:
        abstract = True


class GPUHourly(RollupFields):
    gpu = models.ForeignKey("inventory.GPU", on_delete=models.CASCADE, related_name="hourly")
    hour = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu", "hour"], name="gpu_hourly_unique")]
        indexes = [models.Index(fields=["hour"])]

    def __str__(self):
        return f"gpu {self.gpu_id} @ {self.hour:%Y-%m-%d %H:00}"


class NodeHourly(RollupFields):
    node = models.ForeignKey("inventory.Node", on_delete=models.CASCADE, related_name="hourly")
    hour = models.DateTimeField()
    gpus_reporting = models.PositiveIntegerField(db_default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "hour"], name="node_hourly_unique")]
        indexes = [models.Index(fields=["hour"])]

    def __str__(self):
        return f"node {self.node_id} @ {self.hour:%Y-%m-%d %H:00}"


class GPUDaily(RollupFields):
    gpu = models.ForeignKey("inventory.GPU", on_delete=models.CASCADE, related_name="daily")
    day = models.DateField()
    hours = models.PositiveIntegerField(db_default=0, help_text="Hours of the day with a utilization reading.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu", "day"], name="gpu_daily_unique")]
        indexes = [models.Index(fields=["day"])]

    def __str__(self):
        return f"gpu {self.gpu_id} @ {self.day:%Y-%m-%d}"


class NodeDaily(RollupFields):
    node = models.ForeignKey("inventory.Node", on_delete=models.CASCADE, related_name="daily")
    day = models.DateField()
    hours = models.PositiveIntegerField(db_default=0, help_text="Hours of the day with a utilization reading.")
    gpus_reporting = models.PositiveIntegerField(db_default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "day"], name="node_daily_unique")]
        indexes = [models.Index(fields=["day"])]

    def __str__(self):
        return f"node {self.node_id} @ {self.day:%Y-%m-%d}"


class UsageFields(models.Model):
    """The GPUs of one model in one node (spare GPUs: no node) over a period, their rows with a utilization reading
    summed (``rollups``): what the dashboards' groupings and series read, about one row for every eight GPU rows."""

    node = models.ForeignKey("inventory.Node", on_delete=models.SET_NULL, null=True, related_name="+")
    gpu_model = models.ForeignKey("inventory.GPUModel", on_delete=models.CASCADE, related_name="+")
    gpus = models.PositiveIntegerField(help_text="GPUs with a utilization reading in the period.")
    util_hours = models.FloatField(help_text="Their hourly utilization (%) summed over their hours.")

    class Meta:
        abstract = True


class UsageHourly(UsageFields):
    """An hour of the GPUs of one model in one node: the 24-hour and 7-day dashboards group these rows instead of
    every GPU's hour (``rollups.refresh``, ``rollups.rollup_usage``). Each GPU counts one hour: its GPU-hours are
    ``gpus``."""

    hour = models.DateTimeField()

    class Meta:
        # Node first, then hour: the heatmap reads its nodes' hours of a range (a node keeps 9,600 hours at 400 days).
        constraints = [models.UniqueConstraint(fields=["node", "hour", "gpu_model"], name="usage_hourly_unique")]
        indexes = [models.Index(fields=["hour"])]
        verbose_name_plural = "usage hours"

    def __str__(self):
        return f"node {self.node_id}, model {self.gpu_model_id} @ {self.hour:%Y-%m-%d %H:00}"


class UsageDaily(UsageFields):
    """A day of the GPUs of one model in one node: the daily GPU rows with a utilization reading, summed
    (``rollups.rollup_usage``). The 30-day and 1-year dashboards group these rows; per GPU they read ``GPUDaily``."""

    day = models.DateField()
    gpu_hours = models.PositiveIntegerField(help_text="Their hours with a utilization reading, summed.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "gpu_model", "day"], name="usage_daily_unique")]
        indexes = [models.Index(fields=["day"])]
        verbose_name_plural = "usage days"

    def __str__(self):
        return f"node {self.node_id}, model {self.gpu_model_id} @ {self.day:%Y-%m-%d}"


class XidEvent(models.Model):
    """The XID gauge of a GPU took a new non-zero code (``xid.py``): one fault or error, counted once however
    long the gauge keeps showing it."""

    class Kind(models.TextChoices):
        HARDWARE = "hardware", "Hardware / driver fault"
        APPLICATION = "application", "Application error"
        UNCLASSIFIED = "unclassified", "Unclassified"

    gpu = models.ForeignKey("inventory.GPU", on_delete=models.CASCADE, related_name="xid_events")
    source = models.ForeignKey(TelemetrySource, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    ts = models.DateTimeField(help_text="When the gauge was first read with this code.")
    hour = models.DateTimeField(help_text="The hour of ts (what the hourly rollups count).")
    code = models.PositiveIntegerField()
    kind = models.CharField(max_length=20, choices=Kind.choices)

    class Meta:
        ordering = ["-ts"]
        constraints = [models.UniqueConstraint(fields=["gpu", "ts", "code"], name="xid_event_unique")]
        indexes = [models.Index(fields=["hour"]), models.Index(fields=["gpu", "-ts"])]
        verbose_name = "XID event"

    def __str__(self):
        return f"XID {self.code} on GPU {self.gpu_id} at {self.ts:%Y-%m-%d %H:%M}"

    @property
    def meaning(self):
        from .xid import meaning

        return meaning(self.code)


class XidReading(models.Model):
    """The last value of a GPU's XID gauge the portal read, and when: a new reading is an event only if it
    differs (``xid.events``)."""

    gpu = models.OneToOneField("inventory.GPU", on_delete=models.CASCADE, primary_key=True, related_name="+")
    code = models.PositiveIntegerField(default=0)
    ts = models.DateTimeField()

    def __str__(self):
        return f"GPU {self.gpu_id}: XID {self.code} at {self.ts:%Y-%m-%d %H:%M}"


class HealthKind(models.TextChoices):
    """DCGM gauges whose turning to 1 is a health event (``remap.py``)."""

    ROW_REMAP_FAILURE = "row_remap_failure", "Row remap failure"
    ROW_REMAP_PENDING = "row_remap_pending", "Row remap pending"


class HealthEvent(models.Model):
    """A GPU's row-remap gauge turned to 1 (``remap.py``): counted once however long the gauge stays there."""

    Kind = HealthKind

    gpu = models.ForeignKey("inventory.GPU", on_delete=models.CASCADE, related_name="health_events")
    source = models.ForeignKey(TelemetrySource, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    ts = models.DateTimeField(help_text="When the gauge was first read at 1.")
    hour = models.DateTimeField(help_text="The hour of ts.")
    kind = models.CharField(max_length=30, choices=Kind.choices)

    class Meta:
        ordering = ["-ts"]
        constraints = [models.UniqueConstraint(fields=["gpu", "ts", "kind"], name="health_event_unique")]
        indexes = [models.Index(fields=["hour"]), models.Index(fields=["gpu", "-ts"])]

    def __str__(self):
        return f"{self.get_kind_display()} on GPU {self.gpu_id} at {self.ts:%Y-%m-%d %H:%M}"

    @property
    def meaning(self):
        from .remap import meaning

        return meaning(self.kind)


class HealthReading(models.Model):
    """The last value of a GPU's row-remap gauge the portal read, and when: a new reading is an event only if it
    turns to 1; a gauge reading 1 now marks the GPU (its badge)."""

    gpu = models.ForeignKey("inventory.GPU", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=30, choices=HealthKind.choices)
    value = models.PositiveIntegerField(default=0)
    ts = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu", "kind"], name="health_reading_unique")]

    def __str__(self):
        return f"GPU {self.gpu_id}: {self.kind} = {self.value} at {self.ts:%Y-%m-%d %H:%M}"


class MigInstance(models.Model):
    """A MIG GPU instance (``GPU_I_ID`` / ``GPU_I_PROFILE`` labels) of a physical GPU, as a source last saw it.
    Its figures are summed into the GPU's (``dcgm.combine_instances``)."""

    gpu = models.ForeignKey("inventory.GPU", on_delete=models.CASCADE, related_name="mig_instances")
    instance_id = models.CharField(max_length=20)
    profile = models.CharField(max_length=40, blank=True, help_text="e.g. 1g.10gb")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["gpu", "instance_id"]
        constraints = [models.UniqueConstraint(fields=["gpu", "instance_id"], name="mig_instance_unique")]
        verbose_name = "MIG instance"

    def __str__(self):
        return f"GPU {self.gpu_id} MIG {self.instance_id} ({self.profile})"


class TeamRowQuerySet(models.QuerySet):
    """Rows of a team's Slurm jobs (jobs, interruptions), whose team is their ``account``."""

    def visible_to(self, user):
        """The rows ``inventory.read_job`` lets the user read (``inventory.policy``), as a query: every team's for
        the roles that read the whole fleet, a researcher's own teams' only, none without the rule."""
        from inventory.policy import team_accounts  # not at import: the models load before the policy

        if user.has_perm("inventory.read_every_job"):
            return self
        if not user.has_perm("inventory.read_job"):
            return self.none()
        return self.filter(account__in=team_accounts(user))


class SlurmJob(models.Model):
    """One run of a job from Slurm accounting: when it waited and ran, where, with how many GPUs.

    A requeued job runs again under the same id, and Slurm gives each run its own submit time (the requeue's):
    each run is a row, keyed by (source, job id, submit time), so an interrupted run keeps its GPU-hours and its
    end (REQUEUED, NODE_FAIL…) after the job has moved on."""

    source = models.ForeignKey(TelemetrySource, on_delete=models.CASCADE, related_name="jobs")
    job_id = models.CharField(max_length=50)
    cluster = models.CharField(max_length=100, blank=True)
    name = models.CharField(max_length=200, blank=True)
    user = models.CharField(max_length=100, blank=True)
    account = models.CharField("account / team", max_length=100, blank=True, db_index=True)
    partition = models.CharField(max_length=100, blank=True, db_index=True)
    state = models.CharField(max_length=40, blank=True)
    submit_time = models.DateTimeField(db_index=True)
    start_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True)
    nodes = models.TextField(blank=True, help_text="Slurm node list, e.g. gpu-[001-004].")
    node_count = models.PositiveIntegerField(default=0)
    gpus = models.PositiveIntegerField(default=0, help_text="Allocated GPUs (TRES gres/gpu).")
    running_until = models.DateTimeField(
        null=True, blank=True,
        help_text="While the job runs: the moment the source last said it was running (start + elapsed, or the "
        "answer's time). It counts up to here, not up to the portal's clock.",
    )
    restarts = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Slurm's restart count (restart_cnt): times the job was requeued before this run; empty when the "
        "source does not say.",
    )
    reason = models.CharField(
        max_length=100, blank=True,
        help_text="Slurm's state reason (state.reason, state_reason): why a pending job waits (Priority, Resources, "
        "AssocGrpGRESMinutes: its team's GPU budget is used up); empty when the source does not say.",
    )

    objects = TeamRowQuerySet.as_manager()

    class Meta:
        ordering = ["-submit_time"]
        constraints = [models.UniqueConstraint(fields=["source", "job_id", "submit_time"], name="slurm_job_run_unique")]
        indexes = [models.Index(fields=["start_time"]), models.Index(fields=["end_time"])]

    def __str__(self):
        return f"job {self.job_id}"

    @property
    def queue_wait(self):
        return self.start_time - self.submit_time if self.start_time else None

    def counted_until(self, now=None):
        """Where the job's run ends for the figures: its end, else the last moment the source saw it running,
        never past ``now``."""
        now = now or timezone.now()
        return min(self.end_time or self.running_until or now, now)

    def gpu_hours(self, now=None):
        if not self.start_time:
            return 0.0
        return self.gpus * max(self.counted_until(now) - self.start_time, timedelta(0)).total_seconds() / 3600


class SlurmJobNode(models.Model):
    """One node of a job's allocation, with the GPUs the job holds there (its GPUs spread evenly over its
    nodes: accounting does not say more). ``node`` is the inventory node the Slurm host name matches
    (FQDN or short name, any case), None for a host the inventory does not know. Allocated GPU-hours are
    clipped per node to the node's GPUs (``allocation.py``)."""

    job = models.ForeignKey(SlurmJob, on_delete=models.CASCADE, related_name="allocations")
    host = models.CharField(max_length=100, help_text="The host name as Slurm lists it.")
    node = models.ForeignKey("inventory.Node", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    gpus = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "host"], name="slurm_job_node_unique")]
        indexes = [models.Index(fields=["node"])]

    def __str__(self):
        return f"job {self.job_id} on {self.host}"


class AllocationExcess(models.Model):
    """While a node's jobs held more GPUs than it has, the part of one job's GPUs there that the node could not
    have given: during [start, end) the job held ``gpus`` GPUs beyond its share (its GPUs × (held − the node's
    GPUs) / held). Allocated GPU-hours subtract these, so no node gives more than its GPUs × hours in any window
    (``allocation.py``)."""

    allocation = models.ForeignKey(SlurmJobNode, on_delete=models.CASCADE, related_name="excess")
    node = models.ForeignKey("inventory.Node", on_delete=models.CASCADE, related_name="+")
    start = models.DateTimeField()
    end = models.DateTimeField()
    gpus = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["node", "end"]), models.Index(fields=["start"])]

    def __str__(self):
        return f"{self.allocation} over by {self.gpus:g} GPUs {self.start:%Y-%m-%d %H:%M}–{self.end:%H:%M}"


class AllocatedFields(models.Model):
    """Allocated GPU-hours of a team (Slurm account) on a partition in a period, from jobs on one node or several."""

    source = models.ForeignKey(TelemetrySource, on_delete=models.CASCADE, related_name="+")
    account = models.CharField(max_length=100, blank=True)
    partition = models.CharField(max_length=100, blank=True)
    multi_node = models.BooleanField(default=False, help_text="From jobs on more than one node.")
    gpu_hours = models.FloatField()

    class Meta:
        abstract = True


class AllocationHourly(AllocatedFields):
    """What ``allocation.clipped_gpu_time`` counts, per node and hour, summed when the jobs are pulled
    (``allocation_rollup``) so that no page scans the job history. ``node`` is None for jobs on hosts the inventory
    does not know or without a host list (they count as reported). Runs whose end depends on the reader's clock
    (running, never seen running: no ``running_until``) are not in it: readers count them from the jobs."""

    node = models.ForeignKey("inventory.Node", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    hour = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["hour"]), models.Index(fields=["node", "hour"])]
        verbose_name = "allocated GPU-hours per node and hour"

    def __str__(self):
        return f"{self.account or '-'} on {self.node_id or 'unknown'} at {self.hour:%Y-%m-%d %H:%M}: {self.gpu_hours:g}"


class AllocationDaily(AllocatedFields):
    """``AllocationHourly`` summed per day over the nodes: the team and partition figures of the long ranges."""

    day = models.DateField()

    class Meta:
        indexes = [models.Index(fields=["day"]), models.Index(fields=["source", "day"])]
        verbose_name = "allocated GPU-hours per day"

    def __str__(self):
        return f"{self.account or '-'} on {self.day}: {self.gpu_hours:g}"


class PullReport(models.Model):
    """One pull of a source: when, its outcome and what it counted, left out, corrected or clipped
    (``records.Quality``): the data-quality panel of the source's page. The newest
    ``TELEMETRY_PULL_REPORTS_KEPT`` per source are kept."""

    source = models.ForeignKey(TelemetrySource, on_delete=models.CASCADE, related_name="pull_reports")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    ok = models.BooleanField()
    error = models.TextField(blank=True)
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True, help_text="What was read and written, e.g. jobs, samples.")
    quality = models.JSONField(default=dict, blank=True, help_text="Data-quality kind → count.")
    examples = models.JSONField(default=dict, blank=True, help_text="Data-quality kind → the first examples.")

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [models.Index(fields=["source", "-started_at"])]

    def __str__(self):
        return f"{self.source} pull at {self.started_at:%Y-%m-%d %H:%M:%S}"

    # What ``pull.store`` counts, in words for the page.
    COUNT_LABELS = {"hours": "hours rolled up", "samples": "samples", "jobs": "jobs", "unknown": "unknown GPUs",
                    "xid_events": "XID events", "health_events": "health events (row remap)",
                    "mig_instances": "MIG instances"}

    def read(self):
        """The counts as ``(value, words)`` pairs, in the order the pull wrote them."""
        return [(value, self.COUNT_LABELS.get(name, name.replace("_", " "))) for name, value in self.counts.items()]
