"""A team's GPU allocations: what it may use of a partition (or a GPU model) in a period, and the requests that set
them. An allocation is never written by hand: a request (new, change or renewal) approved by enough managers writes
it (``workflow``), so that every allocation's history is its requests, their approvals and its change records."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse
from simple_history.models import HistoricalRecords

from portal.history import ChangeRecord
from portal.models import PortalModel


class Terms(models.Model):
    """What an allocation grants (and a request asks for): the scope, the period and the limits."""

    team = models.ForeignKey("inventory.Team", on_delete=models.PROTECT, related_name="+")
    partition = models.CharField(max_length=100, blank=True,
                                 help_text="The Slurm partition; empty: every partition.")
    gpu_model = models.ForeignKey("inventory.GPUModel", on_delete=models.PROTECT, null=True, blank=True,
                                  related_name="+", verbose_name="GPU model",
                                  help_text="Only GPUs of this model; empty: any model.")
    start = models.DateField(help_text="The first day of the period.")
    end = models.DateField(help_text="The last day of the period (included).")
    gpu_hours = models.FloatField("GPU-hour budget", null=True, blank=True, validators=[MinValueValidator(1)],
                                  help_text="GPU-hours the team may use in the period (Slurm GrpTRESMins).")
    max_gpus = models.PositiveIntegerField("concurrent GPUs", null=True, blank=True,
                                           validators=[MinValueValidator(1)],
                                           help_text="GPUs the team's running jobs may hold at once (Slurm GrpTRES).")
    fairshare = models.PositiveIntegerField("fair-share weight", null=True, blank=True,
                                            validators=[MinValueValidator(1)],
                                            help_text="The team's share of the scheduler's priority (Slurm Fairshare).")

    class Meta:
        abstract = True

    def clean(self):
        errors = {}
        if self.start and self.end and self.end < self.start:
            errors["end"] = "The period ends before it starts."
        if self.gpu_hours is None and self.max_gpus is None:
            errors["gpu_hours"] = "Give a GPU-hour budget, a concurrent-GPU limit, or both."
        if errors:
            raise ValidationError(errors)

    @property
    def scope(self):
        """The words for what it covers: "gpu, H100 80GB" or "every partition"."""
        parts = [self.partition or "every partition"]
        if self.gpu_model_id:
            parts.append(str(self.gpu_model))
        return ", ".join(parts)


class TeamAllocation(Terms, PortalModel):
    """An approved allocation. Two allocations of one team never cover the same partition and GPU model on the same
    day (``workflow`` checks it under the team's lock)."""

    team = models.ForeignKey("inventory.Team", on_delete=models.PROTECT, related_name="allocations")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["team__name", "-start", "partition"]
        constraints = [models.CheckConstraint(condition=models.Q(end__gte=models.F("start")),
                                              name="allocation_ends_after_start")]

    def __str__(self):
        return f"{self.team} · {self.scope} · {self.start:%Y-%m-%d} to {self.end:%Y-%m-%d}"


class AllocationRequest(Terms, PortalModel):
    """A team's request for a new allocation, a change of one, or its renewal for a next period; pending until enough
    managers approve it (``approvals_needed``) or one rejects it, or its requester withdraws it."""

    class Kind(models.TextChoices):
        NEW = "new", "New allocation"
        CHANGE = "change", "Change"
        RENEWAL = "renewal", "Renewal"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"

    team = models.ForeignKey("inventory.Team", on_delete=models.PROTECT, related_name="allocation_requests")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.NEW)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True)
    allocation = models.ForeignKey(TeamAllocation, on_delete=models.PROTECT, null=True, blank=True,
                                   related_name="requests",
                                   help_text="The allocation it changes or renews; once approved, the one it wrote.")
    reason = models.TextField(help_text="What the GPUs are for: the project, the deadline, why this much.")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                                   related_name="+")
    decision_comment = models.TextField(blank=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self):
        return f"{self.get_kind_display()} for {self.team}: {self.scope}, {self.start:%Y-%m-%d} to {self.end:%Y-%m-%d}"

    @property
    def approvals_needed(self):
        """Two managers above ``ALLOCATION_SECOND_APPROVAL_GPU_HOURS`` of budget, one below (neither the requester)."""
        big = self.gpu_hours is not None and self.gpu_hours >= settings.ALLOCATION_SECOND_APPROVAL_GPU_HOURS
        return 2 if big else 1

    @property
    def is_pending(self):
        return self.status == self.Status.PENDING


class AllocationApproval(models.Model):
    """One manager's approval of a request."""

    request = models.ForeignKey(AllocationRequest, on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    comment = models.TextField(blank=True)

    class Meta:
        ordering = ["created", "pk"]
        constraints = [models.UniqueConstraint(fields=["request", "user"], name="allocation_approved_once_per_user")]

    def __str__(self):
        return f"{self.user} approved {self.request_id}"


class AllocationAlert(models.Model):
    """A warning sent once when an allocation's use crossed a level (80 or 100 % of its budget)."""

    allocation = models.ForeignKey(TeamAllocation, on_delete=models.CASCADE, related_name="alerts")
    level = models.PositiveSmallIntegerField(help_text="Per cent of the budget.")
    used_gpu_hours = models.FloatField()
    created = models.DateTimeField(auto_now_add=True)
    recipients = models.TextField(blank=True, help_text="Whom it was e-mailed to.")

    class Meta:
        ordering = ["-created"]
        constraints = [models.UniqueConstraint(fields=["allocation", "level"], name="allocation_alert_once")]

    def __str__(self):
        return f"{self.allocation} at {self.level} %"


class SlurmSync(models.Model):
    """One look at Slurm against the approved allocations: what the portal wants (``desired``, ``slurm_sync.Desired``),
    what Slurm held (``actual``, a ``State``), the ``changes`` that would make it so (``Change`` dicts, in order), the
    ``drift`` (hand edits since the portal last applied: ``Drift`` dicts) and the ``warnings`` about Slurm's settings.
    A manager's approval applies the changes one at a time (``SlurmSyncChange`` rows say what each did); a proposal
    older than the latest is stale and cannot be applied."""

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        APPLIED = "applied", "Applied"
        FAILED = "failed", "Applied with failures"
        SUPERSEDED = "superseded", "Superseded"
        IN_SYNC = "in_sync", "Nothing to change"

    cluster = models.CharField(max_length=100)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PROPOSED, db_index=True)
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+", help_text="Empty: beat's daily look.")
    desired = models.JSONField(default=dict)
    actual = models.JSONField(default=dict)
    changes = models.JSONField(default=list)
    drift = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    billing_weights = models.JSONField(default=dict, help_text="TRESBillingWeights per partition as read "
                                       "({partition: {tres: weight}}): the allocations' use in billing units.")
    error = models.TextField(blank=True, help_text="Why Slurm could not be read, when it could not.")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+")
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]
        get_latest_by = "created"

    def __str__(self):
        return f"Slurm sync #{self.pk} ({self.cluster}, {self.get_status_display().lower()})"

    def get_absolute_url(self):
        return reverse("inventory:slurmsync_detail", args=[self.pk])


class SlurmSyncChange(models.Model):
    """One ``sacctmgr -i`` call an approved sync made, in order: its command, the value before and after, what was
    read back and the outcome (``slurm_sync`` VERIFIED, FAILED, STALE: Slurm no longer held ``before``, ERROR)."""

    sync = models.ForeignKey(SlurmSync, on_delete=models.CASCADE, related_name="applied")
    position = models.PositiveIntegerField()
    description = models.TextField()
    command = models.TextField()
    before = models.JSONField(null=True)
    after = models.JSONField(null=True)
    status = models.CharField(max_length=20)
    read_back = models.JSONField(null=True)
    output = models.TextField(blank=True)
    applied_at = models.DateTimeField(auto_now_add=True)
    applied_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")

    class Meta:
        ordering = ["sync", "position"]

    def __str__(self):
        return f"{self.description}: {self.status}"


class SlurmApplied(models.Model):
    """What the portal last applied and verified in a cluster (a ``slurm_sync.State`` as a dict): the reference that
    tells a hand edit (drift) from the portal's own."""

    cluster = models.CharField(max_length=100, unique=True)
    state = models.JSONField(default=dict)
    updated = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"applied state of {self.cluster}"
