"""Contracts (purchase, rental, expansion, support), procurement (purchase orders, deliveries, webhooks)
and capacity plans (workloads, bill of materials, the draft → submitted → approved/rejected workflow of
``planning.plans``). A purchase order refers to an approved plan or a purchase/expansion contract."""

from dataclasses import MISSING
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from simple_history.models import HistoricalRecords

from inventory.models import GPU, GPUModel, Node, NodeModel, Rack, Site, StorageSystem, Switch
from portal import outbound
from portal.history import ChangeRecord
from portal.models import PortalModel

MONEY = {"max_digits": 14, "decimal_places": 2, "validators": [MinValueValidator(0)]}


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


# --- Procurement ----------------------------------------------------------------------------------


class PurchaseOrder(PortalModel):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PARTIAL = "partial", "Partly delivered"
        DELIVERED = "delivered", "Delivered"
        CANCELLED = "cancelled", "Cancelled"

    contract = models.ForeignKey(Contract, on_delete=models.PROTECT, related_name="purchase_orders", null=True,
                                 blank=True, help_text="The purchase or expansion contract the order belongs to.")
    plan = models.ForeignKey("CapacityPlan", on_delete=models.PROTECT, related_name="purchase_orders", null=True,
                             blank=True, help_text="The approved capacity plan the order carries out.")
    vendor = models.CharField(max_length=100)
    reference = models.CharField(max_length=100, help_text="The order number in the procurement system.")
    external_id = models.CharField(max_length=100, blank=True, help_text="Unique per client: makes retries safe.")
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="purchase_orders",
                             help_text="Where the delivered hardware goes.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN, db_index=True)
    currency = models.CharField(max_length=3, default="USD")
    ordered_on = models.DateField(default=timezone.localdate)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-ordered_on", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["vendor", "reference"], name="po_unique_reference",
                                    violation_error_message="This vendor already has an order with this reference."),
            models.UniqueConstraint(fields=["created_by", "external_id"], condition=~models.Q(external_id=""),
                                    name="po_unique_external_id",
                                    violation_error_message="You already sent an order with this external id."),
        ]

    def __str__(self):
        return f"PO {self.reference}"


class CatalogLine(models.Model):
    """So many of one catalog model. Exactly one of node model, GPU model, or a free description (switches,
    storage, cables) is set."""

    node_model = models.ForeignKey(NodeModel, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    gpu_model = models.ForeignKey(GPUModel, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    description = models.CharField(max_length=200, blank=True)
    quantity = models.PositiveIntegerField(validators=[MinValueValidator(1)])

    class Meta:
        abstract = True

    def __str__(self):
        return f"{self.quantity} × {self.what}"

    @property
    def what(self):
        return str(self.node_model or self.gpu_model or self.description)

    def clean(self):
        chosen = [x for x in (self.node_model_id, self.gpu_model_id) if x]
        if len(chosen) > 1:
            raise ValidationError("A line is for a node model or a GPU model, not both.")
        if not chosen and not self.description:
            raise ValidationError("Say what the line is for: a node model, a GPU model or a description.")


class OrderLine(CatalogLine):
    """An order's line: so many of one catalog model at a unit price."""

    order = models.ForeignKey(PurchaseOrder, on_delete=models.CASCADE, related_name="lines")
    unit_price = models.DecimalField(**MONEY)

    class Meta:
        ordering = ["order", "pk"]


class Delivery(PortalModel):
    order = models.ForeignKey(PurchaseOrder, on_delete=models.PROTECT, related_name="deliveries")
    external_id = models.CharField(max_length=100, blank=True)
    delivered_on = models.DateField(default=timezone.localdate)
    note = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-delivered_on", "-pk"]
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(fields=["created_by", "external_id"], condition=~models.Q(external_id=""),
                                    name="delivery_unique_external_id",
                                    violation_error_message="You already sent a delivery with this external id."),
        ]

    def __str__(self):
        return f"Delivery {self.pk} of {self.order}"


class DeliveryItem(models.Model):
    """One delivered unit of an order line; the node or GPU the portal created for it."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="items")
    line = models.ForeignKey(OrderLine, on_delete=models.PROTECT, related_name="delivered_items")
    serial = models.CharField(max_length=100)
    node = models.OneToOneField(Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="delivery_item")
    gpu = models.OneToOneField(GPU, on_delete=models.SET_NULL, null=True, blank=True, related_name="delivery_item")

    class Meta:
        ordering = ["delivery", "pk"]

    def __str__(self):
        return self.serial


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


# --- Capacity plans -------------------------------------------------------------------------------


def check_currency(currency):
    """The error message for a currency that is not a three-letter ISO 4217 code; "" when it is one."""
    if currency and len(currency) == 3 and currency.isalpha():
        return ""
    return "Use a three-letter ISO 4217 code, e.g. USD."


class PlanStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class CapacityPlan(PortalModel):
    """What to buy over a horizon: planned workloads and the bill of materials. Edited while draft; the
    workflow (``planning.plans``) moves it draft → submitted → approved / rejected, rejected → draft."""

    Status = PlanStatus  # named apart from PurchaseOrder.Status: the API schema names enums after the class

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    horizon_months = models.PositiveIntegerField(default=12, validators=[MinValueValidator(1), MaxValueValidator(120)])
    # Scenario assumptions (``planning.scenarios``); empty ones fall back to the fleet's data and the settings.
    site = models.ForeignKey(Site, on_delete=models.SET_NULL, null=True, blank=True, related_name="capacity_plans",
                             help_text="The site to expand (its PUE, energy price and power headroom). "
                                       "Empty: the site with the most GPUs.")
    node_model = models.ForeignKey(NodeModel, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                   help_text="The node to buy. Empty: the most common node model in service.")
    node_price = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True, validators=[MinValueValidator(0)],
        help_text="Price of one node. Empty: the last order's unit price for the model, else its list price.")
    rental_gpu_hour_cost = models.DecimalField(
        "rental cost per GPU-hour", max_digits=10, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(0)],
        help_text="Empty: the rate of the active rental contracts, else the portal's default.")
    target_utilization = models.PositiveIntegerField(
        "target utilization (%)", default=80, validators=[MinValueValidator(10), MaxValueValidator(100)],
        help_text="Capacity is sized so that forecast demand fills it to this share.")
    build_lead_months = models.PositiveIntegerField(
        "lead time to build (months)", default=9, validators=[MaxValueValidator(60)],
        help_text="A new cluster: site, power, cooling, delivery and burn-in.")
    expand_lead_months = models.PositiveIntegerField(
        "lead time to expand (months)", default=4, validators=[MaxValueValidator(60)],
        help_text="Nodes added to an existing site: order, delivery and burn-in.")
    rent_lead_months = models.PositiveIntegerField(
        "lead time to rent (months)", default=1, validators=[MaxValueValidator(60)])
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="capacity_plans")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT, db_index=True,
                              editable=False)
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                     related_name="+", editable=False)
    submitted_at = models.DateTimeField(null=True, blank=True, editable=False)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+", editable=False, help_text="Who approved or rejected it.")
    decided_at = models.DateTimeField(null=True, blank=True, editable=False)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-created", "name"]

    def __str__(self):
        return self.name

    @property
    def is_draft(self):
        return self.status == self.Status.DRAFT


# The assumptions of a plan's scenarios, edited with its name and horizon (page and API).
SCENARIO_FIELDS = ["site", "node_model", "node_price", "rental_gpu_hour_cost", "target_utilization",
                   "build_lead_months", "expand_lead_months", "rent_lead_months"]


class PlanWorkload(models.Model):
    """A planned training run, starting in a month of the plan's horizon; ``inputs`` are the other inputs of
    ``planning.sizing.Workload`` (``params_billion``, ``tokens_billion``, ...), checked by ``sizing.validate``."""

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="workloads")
    name = models.CharField(max_length=200)
    start_month = models.PositiveIntegerField(validators=[MinValueValidator(1)],
                                              help_text="1 = the plan's first month.")
    gpu_model = models.ForeignKey(GPUModel, on_delete=models.PROTECT, related_name="+")
    inputs = models.JSONField(default=dict, help_text="Sizing inputs other than the GPU model, e.g. "
                                                      '{"params_billion": 70, "tokens_billion": 2000}.')
    history = HistoricalRecords(bases=[ChangeRecord])  # plan edits are in the change log, line by line

    class Meta:
        ordering = ["plan", "start_month", "pk"]

    def __str__(self):
        return self.name

    def workload(self):
        """The ``sizing.Workload``; raises ``ValidationError`` for unknown or missing inputs."""
        from . import sizing

        if not isinstance(self.inputs, dict):
            raise ValidationError({"inputs": "Give the sizing inputs as an object."})
        allowed = set(sizing.INPUTS) - {"gpu_model"}
        if unknown := sorted(set(self.inputs) - allowed):
            raise ValidationError({"inputs": f"Unknown sizing inputs: {', '.join(unknown)}."})
        required = {name for name in allowed if sizing.INPUTS[name].default is MISSING}
        if missing := sorted(required - set(self.inputs)):
            raise ValidationError({"inputs": f"Missing sizing inputs: {', '.join(missing)}."})
        return sizing.Workload(gpu_model=self.gpu_model.name, **self.inputs)

    def clean(self):
        from . import sizing

        if self.plan_id and self.start_month and self.start_month > self.plan.horizon_months:
            horizon = self.plan.horizon_months
            raise ValidationError({"start_month": f"Month {self.start_month} is past the plan's horizon of {horizon} "
                                                  f"months: choose 1 to {horizon}, or lengthen the plan's horizon."})
        if self.gpu_model_id:
            try:
                errors = sizing.validate(self.workload(), sizing.catalog_gpus())
            except TypeError as error:  # a text where a number belongs
                raise ValidationError({"inputs": "Sizing inputs are numbers (precision: a name)."}) from error
            if errors:
                raise ValidationError({"inputs": [f"{name}: {' '.join(msgs)}" for name, msgs in errors.items()]})


class PlanItem(CatalogLine):
    """A line of a plan's bill of materials: so many of a node model, GPU model, or switches/storage
    (description) at a unit cost."""

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="items")
    unit_cost = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3, default="USD", help_text="ISO 4217 code, e.g. USD, EUR, CHF.")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["plan", "pk"]

    @property
    def total(self):
        return self.quantity * self.unit_cost

    def clean(self):
        super().clean()
        if message := check_currency(self.currency):
            raise ValidationError({"currency": message})
        self.currency = self.currency.upper()


class PlanEvent(models.Model):
    """One step of a plan's workflow: who, when, from and to which status, and the comment."""

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="events")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="+")
    username = models.CharField(max_length=150, help_text="Kept when the user is deleted.")
    at = models.DateTimeField(default=timezone.now)
    from_status = models.CharField(max_length=20, choices=CapacityPlan.Status.choices)
    to_status = models.CharField(max_length=20, choices=CapacityPlan.Status.choices)
    comment = models.TextField(blank=True)

    class Meta:
        ordering = ["plan", "at", "pk"]

    def __str__(self):
        return f"{self.plan}: {self.from_status} → {self.to_status} by {self.username}"


# --- Expansion recommendations --------------------------------------------------------------------------


class RecommendationKind(models.TextChoices):
    CAPACITY = "capacity_bound", "Capacity-bound"
    SCHEDULING = "scheduling_bound", "Scheduling-bound"
    STORAGE = "storage_bound", "Storage-bound"
    NETWORK = "network_bound", "Network-bound"
    MEMORY = "memory_bound", "Memory-bound"
    AGEING = "ageing", "Ageing hardware"


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
