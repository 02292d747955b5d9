"""Contracts (purchase, rental, expansion, support) with their SLA terms, documents and renewal alerts."""

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from simple_history.models import HistoricalRecords

from inventory.models import GPU, GPUModel, Node, Rack, Site, StorageSystem, Switch
from portal.history import ChangeRecord
from portal.models import PortalModel

from ..common import MONEY, check_currency


class Contract(PortalModel):
    class Kind(models.TextChoices):
        PURCHASE = "purchase", "Purchase"
        RENTAL = "rental", "Rental / lease"
        EXPANSION = "expansion", "Expansion"
        SUPPORT = "support", "Support / maintenance"

    kind = models.CharField(max_length=20, choices=Kind.choices, db_index=True)
    vendor = models.CharField("vendor / provider", max_length=100, db_index=True)
    reference = models.CharField(max_length=100, help_text="The vendor's contract or order number.")
    title = models.CharField(max_length=200, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="contracts", help_text="Receives the renewal alerts.")
    start = models.DateField()
    end = models.DateField(null=True, blank=True, help_text="Empty for a purchase that does not end.")
    notice_days = models.PositiveIntegerField("notice period (days)", default=0)
    auto_renew = models.BooleanField("renews automatically", default=False)
    one_off_cost = models.DecimalField("one-off cost", default=0, **MONEY)
    monthly_cost = models.DecimalField(default=0, **MONEY)
    gpu_hour_cost = models.DecimalField("cost per GPU-hour", default=0, max_digits=10, decimal_places=4,
                                        validators=[MinValueValidator(0)])
    currency = models.CharField(max_length=3, default="USD", help_text="ISO 4217 code, e.g. USD, EUR, CHF.")
    depreciation_months = models.PositiveIntegerField(
        default=48, validators=[MinValueValidator(1)],
        help_text="Purchases: months over which the one-off cost is amortised in the cost per GPU-hour.",
    )
    rented_gpus = models.PositiveIntegerField(default=0, help_text="Rentals: GPUs provided by the contract.")
    rented_gpu_model = models.ForeignKey(GPUModel, on_delete=models.PROTECT, null=True, blank=True,
                                         related_name="rental_contracts")
    sites = models.ManyToManyField(Site, blank=True, related_name="contracts")
    racks = models.ManyToManyField(Rack, blank=True, related_name="contracts")
    nodes = models.ManyToManyField(Node, blank=True, related_name="contracts")
    gpus = models.ManyToManyField(GPU, blank=True, related_name="contracts")
    switches = models.ManyToManyField(Switch, blank=True, related_name="contracts")
    storage_systems = models.ManyToManyField(StorageSystem, blank=True, related_name="contracts")
    notes = models.TextField(blank=True)
    history = HistoricalRecords(
        bases=[ChangeRecord], m2m_fields=[sites, racks, nodes, gpus, switches, storage_systems]
    )

    class Meta:
        ordering = ["-start", "vendor", "reference"]
        constraints = [
            models.UniqueConstraint(fields=["vendor", "reference"], name="contract_unique_reference",
                                    violation_error_message="This vendor already has a contract with this reference."),
            models.CheckConstraint(condition=models.Q(end__isnull=True) | models.Q(end__gte=models.F("start")),
                                   name="contract_end_after_start",
                                   violation_error_message="The end date is before the start date."),
        ]

    def __str__(self):
        return f"{self.vendor} {self.reference}"

    def clean(self):
        errors = {}
        if self.end and self.start and self.end < self.start:
            errors["end"] = "The end date is before the start date."
        if self.kind in (self.Kind.RENTAL, self.Kind.SUPPORT) and not self.end:
            errors["end"] = f"A {self.get_kind_display().lower()} contract needs an end date."
        if self.currency and check_currency(self.currency):
            errors["currency"] = check_currency(self.currency)
        if self.kind == self.Kind.RENTAL and self.rented_gpus and not self.rented_gpu_model_id:
            errors["rented_gpu_model"] = "Say which GPU model the rented GPUs are."
        if errors:
            raise ValidationError(errors)
        self.currency = self.currency.upper()

    def is_active(self, day=None):
        day = day or timezone.localdate()
        return self.start <= day and (self.end is None or day <= self.end)

    @property
    def notice_deadline(self):
        """The last day to give notice (end − notice period); None for contracts without an end."""
        return self.end - timedelta(days=self.notice_days) if self.end else None


class SLATerm(models.Model):
    """A support contract's promise for one priority: first response and resolution, in hours."""

    class Priority(models.TextChoices):
        P1 = "P1", "P1 critical"
        P2 = "P2", "P2 high"
        P3 = "P3", "P3 normal"
        P4 = "P4", "P4 low"

    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="sla_terms")
    priority = models.CharField(max_length=2, choices=Priority.choices)
    response_hours = models.DecimalField(max_digits=6, decimal_places=1, validators=[MinValueValidator(0)])
    resolution_hours = models.DecimalField(max_digits=7, decimal_places=1, validators=[MinValueValidator(0)])

    class Meta:
        ordering = ["contract", "priority"]
        verbose_name = "SLA term"
        constraints = [models.UniqueConstraint(fields=["contract", "priority"], name="sla_unique_priority")]

    def __str__(self):
        return f"{self.contract} {self.priority}: respond {self.response_hours} h, resolve {self.resolution_hours} h"

    def clean(self):
        if self.response_hours is not None and self.resolution_hours is not None \
                and self.resolution_hours < self.response_hours:
            raise ValidationError({"resolution_hours": "Resolution cannot come before the first response."})


def contract_document_path(instance, filename):
    return f"contracts/{instance.contract_id}/{filename}"


class ContractDocument(models.Model):
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="documents")
    file = models.FileField(upload_to=contract_document_path)
    name = models.CharField(max_length=200)
    content_type = models.CharField(max_length=100)
    size = models.PositiveIntegerField(help_text="Bytes.")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    uploaded = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-uploaded"]

    def __str__(self):
        return self.name


class RenewalAlert(models.Model):
    """Raised once per contract and notice deadline by the daily task; shown on the dashboard until
    dismissed, and mailed to the contract's owner."""

    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="renewal_alerts")
    notice_deadline = models.DateField()
    raised = models.DateTimeField(default=timezone.now)
    emailed_to = models.EmailField(blank=True)
    dismissed = models.BooleanField(default=False)

    class Meta:
        ordering = ["notice_deadline"]
        constraints = [models.UniqueConstraint(fields=["contract", "notice_deadline"], name="renewal_alert_once")]

    def __str__(self):
        return f"{self.contract}: give notice by {self.notice_deadline}"
