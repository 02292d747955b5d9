"""Support tickets: raised by people (researchers, managers, support staff) or by telemetry faults, against
the hardware they concern, and worked within the SLA of the support contract covering that hardware.

- ``Ticket.team``: the team (``inventory.Team``) a ticket belongs to. Researchers see their own tickets and their
  teams' tickets.
- ``Ticket``: status changes go through ``support.workflow`` (it keeps the SLA clock: first response,
  pauses while waiting on the requester, resolution); due times come from ``support.sla``.
- ``TicketComment``: public, or internal (support staff only). ``TicketAttachment``: files, size and type
  checked, served through a permission-checked view.

Tickets keep a full change history (django-simple-history).
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone
from simple_history.models import HistoricalRecords

from inventory.models import GPU, Node, Site, StorageSystem, Switch, Team
from planning.models import Contract, SLATerm
from portal.history import ChangeRecord


class TicketQuerySet(models.QuerySet):
    def open(self):
        return self.exclude(status__in=Ticket.CLOSED_STATES)

    def visible_to(self, user):
        """The tickets ``support.read_ticket`` lets the user read (``support.policy``), as a query: every ticket
        for readers of all, a researcher's own and their teams'."""
        if user.has_perm("support.read_every_ticket"):
            return self
        if not user.has_perm("support.read_ticket"):
            return self.none()
        return self.filter(Q(requester=user) | Q(team__in=user.teams.all()))

    def due_before(self, moment):
        """Open tickets whose running clock (first response, else resolution) is due before ``moment``;
        a paused clock (waiting on the requester) runs out at nothing."""
        return self.open().filter(clock_due(moment))

    def breached(self, now=None):
        return self.open().filter(breached(now or timezone.now()))

    def breaching_soon(self, now=None):
        """Due within ``SUPPORT_BREACHING_SOON_HOURS`` but not breached yet."""
        now = now or timezone.now()
        return self.due_before(breaching_soon_limit(now)).exclude(pk__in=self.breached(now).values("pk"))

    def at_risk(self, now=None):
        """Breached or breaching soon: what the dashboard lists."""
        now = now or timezone.now()
        return self.open().filter(breached(now) | clock_due(breaching_soon_limit(now)))


def clock_due(moment):
    """The running clock (first response, else resolution) of a ticket not paused is due by ``moment``."""
    return Q(paused_since__isnull=True) & (
        Q(first_response_at__isnull=True, response_due__lte=moment) | Q(resolution_due__lte=moment)
    )


def breached(now):
    """What ``sla.state`` calls breached: the running clock past due, a first response that came late, or a clock
    already past due when it was paused."""
    paused_late = Q(paused_since__isnull=False) & (
        Q(first_response_at__isnull=True, response_due__lte=F("paused_since"))
        | Q(resolution_due__lte=F("paused_since"))
    )
    return clock_due(now) | Q(first_response_at__gt=F("response_due")) | paused_late


def breaching_soon_limit(now):
    return now + timedelta(hours=settings.SUPPORT_BREACHING_SOON_HOURS)


class TicketCategory(models.TextChoices):
    HARDWARE = "hardware", "Hardware fault"
    PERFORMANCE = "performance", "Performance"
    SOFTWARE = "software", "Software / driver / CUDA"
    STORAGE = "storage", "Storage"
    NETWORK = "network", "Network"
    ACCESS = "access", "Access"
    CAPACITY = "capacity", "Capacity request"


class TicketStatus(models.TextChoices):
    NEW = "new", "New"
    TRIAGED = "triaged", "Triaged"
    IN_PROGRESS = "in_progress", "In progress"
    WAITING_VENDOR = "waiting_vendor", "Waiting on vendor"
    WAITING_REQUESTER = "waiting_requester", "Waiting on requester"
    RESOLVED = "resolved", "Resolved"
    CLOSED = "closed", "Closed"


class TicketSource(models.TextChoices):
    PERSON = "person", "Reported by a person"
    TELEMETRY = "telemetry", "Opened from a telemetry fault"


class TicketFault(models.TextChoices):
    XID = "xid", "XID errors"
    GPU_MISSING = "gpu_missing", "GPU missing from telemetry"
    NODE_SILENT = "node_silent", "Node silent"
    ECC = "ecc", "Repeated ECC errors"
    ROW_REMAP = "row_remap", "Row remap failure"


class Ticket(models.Model):
    Category = TicketCategory
    Priority = SLATerm.Priority
    Status = TicketStatus
    Source = TicketSource
    Fault = TicketFault

    CLOSED_STATES = (Status.RESOLVED, Status.CLOSED)

    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, help_text="Markdown: what happened, when, job ids, error messages.")
    category = models.CharField(max_length=20, choices=Category.choices, default=Category.HARDWARE, db_index=True)
    priority = models.CharField(max_length=2, choices=Priority.choices, default=Priority.P3, db_index=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.NEW, db_index=True)
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                  related_name="requested_tickets", help_text="Empty for a ticket opened by telemetry.")
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="assigned_tickets")
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets")
    # The hardware concerned (any of them; the site is filled in from the asset).
    site = models.ForeignKey(Site, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets")
    node = models.ForeignKey(Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets")
    gpu = models.ForeignKey(GPU, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets",
                            verbose_name="GPU")
    switch = models.ForeignKey(Switch, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets")
    storage_system = models.ForeignKey(StorageSystem, on_delete=models.SET_NULL, null=True, blank=True,
                                       related_name="tickets")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.PERSON)
    fault = models.CharField(max_length=20, choices=Fault.choices, blank=True)
    fault_key = models.CharField(max_length=100, blank=True, editable=False,
                                 help_text="Fault and asset (xid:gpu:12): one open ticket per key.")
    rma_number = models.CharField("RMA number", max_length=100, blank=True,
                                  help_text="The vendor's return authorisation, once a part goes back.")
    # The SLA clock (see support.sla and support.workflow).
    sla_contract = models.ForeignKey(Contract, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                     verbose_name="SLA from contract", editable=False)
    opened = models.DateTimeField(default=timezone.now, db_index=True)
    response_due = models.DateTimeField(null=True, blank=True, editable=False)
    resolution_due = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)
    first_response_at = models.DateTimeField(null=True, blank=True, editable=False)
    paused_since = models.DateTimeField(null=True, blank=True, editable=False,
                                        help_text="Waiting on the requester since: the SLA clock is paused.")
    paused_seconds = models.PositiveIntegerField(default=0, editable=False,
                                                 help_text="Time spent waiting on the requester, not counted.")
    resolved_at = models.DateTimeField(null=True, blank=True, editable=False)
    closed_at = models.DateTimeField(null=True, blank=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = TicketQuerySet.as_manager()
    history = HistoricalRecords(bases=[ChangeRecord], excluded_fields=["updated"])

    class Meta:
        ordering = ["-opened", "-pk"]
        permissions = [
            ("view_support_pages", "Can open the ticket queues (showing the tickets they may see)"),
            ("work_ticket", "Can work tickets: all tickets, internal comments, triage, assign, every status"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["fault_key"], condition=~Q(fault_key="") & ~Q(status__in=["resolved", "closed"]),
                name="ticket_one_open_per_fault",
                violation_error_message="A ticket is already open for this fault on this asset.",
            ),
        ]
        indexes = [models.Index(fields=["status", "resolution_due"])]

    def __str__(self):
        return f"#{self.pk} {self.title}" if self.pk else self.title

    def save(self, *args, **kwargs):
        self.fill_site()
        super().save(*args, **kwargs)

    def get_absolute_url(self):
        return reverse("support:ticket_detail", args=[self.pk])

    def get_edit_url(self):
        return reverse("support:ticket_edit", args=[self.pk])

    def get_delete_url(self):
        return reverse("support:ticket_delete", args=[self.pk])

    @property
    def is_open(self):
        return self.status not in self.CLOSED_STATES

    @property
    def asset(self):
        """The most specific asset the ticket is about (GPU, node, switch, storage, site), or None."""
        return self.gpu or self.node or self.switch or self.storage_system or self.site

    def fill_site(self):
        """The site follows the asset, so tickets can be counted per site."""
        if self.gpu_id and self.gpu.node_id:
            self.site_id = self.gpu.node.site_id
        elif self.node_id:
            self.site_id = self.node.site_id
        elif self.switch_id:
            self.site_id = self.switch.site_id
        elif self.storage_system_id:
            self.site_id = self.storage_system.site_id
        if self.gpu_id and not self.node_id and self.gpu.node_id:
            self.node_id = self.gpu.node_id


def attachment_path(instance, filename):
    return f"support/{instance.ticket_id}/{filename}"


class TicketComment(models.Model):
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="+")
    author_name = models.CharField(max_length=150, blank=True, help_text="Kept as text: survives user deletion.")
    body = models.TextField(help_text="Markdown.")
    internal = models.BooleanField(default=False, help_text="Visible to support staff only.")
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created", "pk"]

    def __str__(self):
        return f"{self.author_name or 'system'} on #{self.ticket_id} @ {self.created:%Y-%m-%d %H:%M}"


class TicketAttachment(models.Model):
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="attachments")
    comment = models.ForeignKey(TicketComment, on_delete=models.CASCADE, null=True, blank=True,
                                related_name="attachments", help_text="Set when attached to an (internal) comment.")
    file = models.FileField(upload_to=attachment_path)
    name = models.CharField(max_length=200)
    content_type = models.CharField(max_length=100)
    size = models.PositiveIntegerField(help_text="Bytes.")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+")
    uploaded = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["uploaded", "pk"]

    def __str__(self):
        return self.name

    @property
    def internal(self):
        return self.comment_id is not None and self.comment.internal


# The notification rules' models (``support/eventrules``): Django loads an app's models from here.
from .eventrules.models import NotificationEvent, NotificationRule  # noqa: E402, F401
