"""Expansion recommendations, written by the analysis (``planning.recommendations.store``)."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from inventory.models import Node, NodeModel, Site

from ..plans.models import CapacityPlan


class RecommendationKind(models.TextChoices):
    CAPACITY = "capacity_bound", "Capacity-bound"
    SCHEDULING = "scheduling_bound", "Scheduling-bound"
    STORAGE = "storage_bound", "Storage-bound"
    NETWORK = "network_bound", "Network-bound"
    MEMORY = "memory_bound", "Memory-bound"
    AGEING = "ageing", "Ageing hardware"
    REPAIR = "repair", "Repair under warranty"
    UNDER_USED = "under_used", "Under-used"
    RELIABILITY = "reliability_bound", "Reliability-bound"


class RecommendationStatus(models.TextChoices):
    OPEN = "open", "Open"
    ACCEPTED = "accepted", "Accepted"
    DISMISSED = "dismissed", "Dismissed"
    RESOLVED = "resolved", "Resolved (no longer detected)"


class RecommendationSeverity(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class Recommendation(models.Model):
    """What the telemetry says to buy, fix or replace (``planning.recommendations`` writes them): a kind of
    bottleneck, found in a scope (a partition, a site), with its evidence (figures and a chart's series) and a
    suggested action. Re-running the analysis updates the open recommendation with the same ``key`` (kind and
    scope) instead of adding another. A manager accepts one (a draft capacity plan is made from it) or
    dismisses it with a reason; one the rules no longer find is resolved."""

    # Named apart from other models' Kind and Status: the API schema names enums after the class.
    Kind = RecommendationKind
    Status = RecommendationStatus
    Severity = RecommendationSeverity

    key = models.CharField(max_length=200, db_index=True,
                           help_text="Kind and scope, e.g. capacity_bound:partition=train-h200.")
    kind = models.CharField(max_length=30, choices=Kind.choices, db_index=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN, db_index=True)
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.MEDIUM)
    title = models.CharField(max_length=200)
    summary = models.TextField()
    action = models.TextField("suggested action")
    evidence = models.JSONField(default=dict, help_text='{"figures": [{"label", "value", "unit"}], "chart": {...}}')
    partition = models.CharField(max_length=100, blank=True, db_index=True)
    site = models.ForeignKey(Site, on_delete=models.SET_NULL, null=True, blank=True, related_name="recommendations")
    node = models.ForeignKey(Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="recommendations")
    node_model = models.ForeignKey(NodeModel, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                   help_text="The node to buy, where the action is to add or replace nodes.")
    node_count = models.PositiveIntegerField(default=0, help_text="How many nodes the action adds or replaces.")
    node_price = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True,
                                     validators=[MinValueValidator(0)])
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    detected_at = models.DateTimeField(default=timezone.now, help_text="When the analysis last found it.")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    dismiss_reason = models.TextField(blank=True)
    plan = models.ForeignKey(CapacityPlan, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="recommendations", help_text="The draft plan made when it was accepted.")

    class Meta:
        ordering = ["-detected_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["key"], condition=models.Q(status="open"),
                                    name="recommendation_one_open_per_key"),
        ]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        from django.urls import reverse

        return reverse("planning:recommendation_detail", args=[self.pk])

    @property
    def is_open(self):
        return self.status == self.Status.OPEN


class RecommendationAction(models.Model):
    """What someone did about a recommendation beyond accepting it (``planning.recommendations.actions``): mailed the
    owning team, opened a ticket, proposed a move of its nodes. Kept so that the page says it was done, by whom."""

    recommendation = models.ForeignKey(Recommendation, on_delete=models.CASCADE, related_name="actions")
    action = models.CharField(max_length=30, help_text="The registered action's key, e.g. notify_team.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="+")
    username = models.CharField(max_length=150, help_text="Kept when the user is deleted.")
    at = models.DateTimeField(default=timezone.now)
    said = models.TextField(help_text="What was done, e.g. whom the mail went to.")
    url = models.CharField(max_length=200, blank=True, help_text="The ticket or move it made, if any.")

    class Meta:
        ordering = ["recommendation", "at", "pk"]

    def __str__(self):
        return f"{self.action} on recommendation #{self.recommendation_id} by {self.username}"
