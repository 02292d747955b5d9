"""Outgoing webhooks, each event's delivery to each of them and every attempt (sent by ``delivery``)."""

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from simple_history.models import HistoricalRecords

from portal import outbound
from portal.history import ChangeRecord
from portal.models import PortalModel


def validate_webhook_url(value):
    """The outbound policy's check (``portal.outbound``): http(s), no credentials, a host it allows."""
    problem = outbound.url_problem(value, "the webhook's secret signs each payload instead.")
    if problem:
        raise ValidationError(problem)


class Webhook(PortalModel):
    class Event(models.TextChoices):
        PLAN_APPROVED = "plan.approved", "plan.approved"
        DELIVERY_RECEIVED = "delivery.received", "delivery.received"
        CONTRACT_EXPIRING = "contract.expiring", "contract.expiring"

    name = models.CharField(max_length=100, unique=True)
    url = models.URLField(max_length=500, validators=[validate_webhook_url])
    secret = models.CharField(max_length=200, help_text="Signs each payload (HMAC-SHA256, X-Portal-Signature).")
    events = models.JSONField(default=list, help_text="Event names this webhook receives.")
    enabled = models.BooleanField(default=True)
    history = HistoricalRecords(bases=[ChangeRecord], excluded_fields=["secret"])

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def clean(self):
        unknown = set(self.events or []) - set(self.Event.values)
        if unknown:
            raise ValidationError({"events": f"Unknown events: {', '.join(sorted(unknown))}."})


class WebhookDelivery(models.Model):
    """One event for one webhook, with every attempt's outcome (sent by Celery, retried with backoff)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=50, choices=Webhook.Event.choices)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Set while a task sends it (no transaction is open during the POST): another task leaves it alone.
    sending_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self):
        return f"{self.event} → {self.webhook} ({self.status})"


class WebhookAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["delivery", "at"]

    def __str__(self):
        return f"{self.delivery} @ {self.at:%Y-%m-%d %H:%M:%S}: {self.status_code or self.error}"
