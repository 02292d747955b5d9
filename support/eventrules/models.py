"""Notification rules: who is told of which business events (``portal.events``), how (e-mail or a signed webhook)
and when (at once, or in an hourly or daily digest), and the log of each event a rule matched, which makes a
delivery and a digest happen at most once per event (``delivery``)."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from inventory.telemetry import xid
from portal.history import ChangeRecord
from portal.models import PortalModel


class EventKind(models.TextChoices):
    """The events a rule may subscribe to: the name each emitter gives ``portal.events.emit``."""

    XID = "gpu.xid", "XID error on a GPU"
    DEGRADED = "node.degraded", "Node or GPU degraded"
    SLA_BREACHED = "ticket.sla_breached", "Ticket past its SLA"
    ALLOCATION = "allocation.threshold", "Allocation at 80 % / 100 % of its budget"
    SOURCE_STALE = "source.stale", "Telemetry source stale"
    RECOMMENDATION = "recommendation.raised", "Recommendation raised"


# Events about one team's hardware, tickets or allocations: a team's rules hear those of their team only.
TEAM_EVENTS = (EventKind.XID, EventKind.DEGRADED, EventKind.SLA_BREACHED, EventKind.ALLOCATION)

XID_CLASSES = [(xid.HARDWARE, "Hardware / driver fault"), (xid.APPLICATION, "Application error"),
               (xid.UNCLASSIFIED, "Unclassified")]


class NotificationRule(PortalModel):
    class Channel(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Signed webhook"

    class Digest(models.TextChoices):
        NONE = "none", "At once"
        HOURLY = "hourly", "Hourly digest"
        DAILY = "daily", "Daily digest"

    name = models.CharField(max_length=100)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True,
                              related_name="notification_rules", help_text="A user's own rule: mails go to them.")
    team = models.ForeignKey("inventory.Team", on_delete=models.CASCADE, null=True, blank=True,
                             related_name="notification_rules",
                             help_text="A team's rule: mails go to its address, its PI and its managers.")
    events = models.JSONField(default=list, help_text="The event kinds this rule hears.")
    xid_classes = models.JSONField("XID classes", default=list, blank=True,
                                   help_text="For XID events: only these classes (none: every class).")
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.EMAIL)
    webhook = models.ForeignKey("planning.Webhook", on_delete=models.PROTECT, null=True, blank=True,
                                related_name="notification_rules", help_text="For the webhook channel: where to.")
    digest = models.CharField("when", max_length=10, choices=Digest.choices, default=Digest.NONE)
    enabled = models.BooleanField(default=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["name", "pk"]
        verbose_name = "notification rule"
        verbose_name_plural = "notifications"  # the pages are /support/notifications/
        constraints = [
            models.CheckConstraint(
                condition=Q(owner__isnull=False, team__isnull=True) | Q(owner__isnull=True, team__isnull=False),
                name="notificationrule_one_owner", violation_error_message="A rule is a user's or a team's."),
            models.CheckConstraint(
                condition=(Q(channel="webhook", webhook__isnull=False)
                           | (~Q(channel="webhook") & Q(webhook__isnull=True))),
                name="notificationrule_webhook_channel",
                violation_error_message="A webhook rule names its webhook; an e-mail rule names none."),
        ]

    def __str__(self):
        return self.name

    def event_labels(self):
        labels = dict(EventKind.choices)
        return [labels.get(event, event) for event in self.events or []]

    def xid_class_labels(self):
        labels = dict(XID_CLASSES)
        return [labels.get(value, value) for value in self.xid_classes or []]

    @property
    def subscriber(self):
        return self.team or self.owner

    def clean(self):
        errors = {}
        events = self.events if isinstance(self.events, list) else None
        if events is None or not events:
            errors["events"] = "Choose at least one event."
        elif unknown := set(map(str, events)) - set(EventKind.values):
            errors["events"] = f"Unknown events: {', '.join(sorted(unknown))}."
        elif self.team_id and (fleet := [e for e in events if e not in TEAM_EVENTS]):
            errors["events"] = ("A team's rule hears events about the team's hardware, tickets and allocations; "
                                f"not {', '.join(EventKind(e).label.lower() for e in fleet)}.")
        classes = self.xid_classes if isinstance(self.xid_classes, list) else None
        if classes is None or set(map(str, classes)) - {value for value, _ in XID_CLASSES}:
            errors["xid_classes"] = f"XID classes are among {', '.join(value for value, _ in XID_CLASSES)}."
        if self.channel == self.Channel.WEBHOOK and not self.webhook_id:
            errors["webhook"] = "Choose the webhook to send to."
        elif self.channel != self.Channel.WEBHOOK and self.webhook_id:
            errors["webhook"] = "Only a webhook rule names a webhook."
        if errors:
            raise ValidationError(errors)


class NotificationEvent(models.Model):
    """One event a rule matched: sent once at once, or in its digest. ``key`` is the event's identity (its kind and
    payload): an event emitted again (a retried pull, the SLA check's next run) is not recorded twice."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"  # claimed by one task: no other sends it (at most once)
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    rule = models.ForeignKey(NotificationRule, on_delete=models.CASCADE, related_name="notices")
    event = models.CharField(max_length=50, choices=EventKind.choices)
    key = models.CharField(max_length=64)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created", "-pk"]
        constraints = [models.UniqueConstraint(fields=["rule", "key"], name="notificationevent_once_per_rule")]
        indexes = [models.Index(fields=["status", "created"])]

    def __str__(self):
        return f"{self.event} for {self.rule_id} ({self.status})"
