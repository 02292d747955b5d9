"""Capacity plans: workloads, bill of materials and the draft → submitted → approved/rejected workflow of
``planning.plans.workflow``."""

from dataclasses import MISSING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from simple_history.models import HistoricalRecords

from inventory.models import GPUModel, NodeModel, Site
from portal.history import ChangeRecord
from portal.models import PortalModel

from ..common import MONEY, CatalogLine, check_currency
from . import months
from .forecast import add_months


def next_month():
    """The first day of the month after today: a new plan's first month."""
    return add_months(timezone.localdate(), 1)


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
    first_month = models.DateField(default=next_month,
                                   help_text="The plan's first calendar month (its first day); the horizon counts "
                                             "from it.")
    horizon_months = models.PositiveIntegerField(
        default=12, validators=[MinValueValidator(1), MaxValueValidator(months.MAX_HORIZON)],
        help_text="How many months the plan covers, from its first month: its last month is first + horizon − 1.")
    # Scope: what the plan sizes. Empty: the whole fleet. A plan made from a recommendation carries the scope the
    # recommendation measured, so that its analysis reads the same telemetry.
    partition = models.CharField(max_length=100, blank=True,
                                 help_text="The Slurm partition whose demand and capacity the plan sizes. "
                                           "Empty: the whole fleet.")
    gpu_model = models.ForeignKey(GPUModel, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                  verbose_name="GPU model",
                                  help_text="Only GPUs of this model count in demand and capacity. Empty: all.")
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
    unmet_gpu_hour_cost = models.DecimalField(
        "cost of an unserved GPU-hour", max_digits=10, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(0)],
        help_text="What a GPU-hour of demand left unserved costs you (a delayed result). The options are compared "
                  "on their cost plus the GPU-hours they leave unserved at this price. Empty: the rental cost.")
    target_utilization = models.PositiveIntegerField(
        "target utilization (%)", default=80, validators=[MinValueValidator(10), MaxValueValidator(100)],
        help_text="Capacity is sized so that forecast demand fills it to this share.")
    min_utilization = models.PositiveIntegerField(
        "lowest utilization of added capacity (%)", default=30, validators=[MaxValueValidator(100)],
        help_text="Added hardware that demand would fill less than this over the horizon is flagged in the "
                  "recommendation's reasons.")
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
    # The last analysis in short, for the plan list (``planning.plans.summary``): recommended option, GPUs added,
    # cost, month demand is met. Not an input: never edited, refreshed whenever the plan or its analysis changes.
    summary = models.JSONField(default=dict, blank=True, editable=False)
    summary_at = models.DateTimeField(null=True, blank=True, editable=False)
    history = HistoricalRecords(bases=[ChangeRecord], excluded_fields=["summary", "summary_at"])
    unversioned_fields = ("summary", "summary_at")  # not in the API's ETag: a refresh is no edit (portal.locking)

    class Meta:
        ordering = ["-created", "name"]

    def __str__(self):
        return self.name

    @property
    def is_draft(self):
        return self.status == self.Status.DRAFT

    @property
    def last_month(self):
        """The first day of the plan's last month."""
        return months.last_month(self.first_month, self.horizon_months)


# What the plan sizes (empty: the whole fleet) and the assumptions of its scenarios, edited with its name and
# horizon (page and API).
SCOPE_FIELDS = ["partition", "gpu_model"]
SCENARIO_FIELDS = ["site", "node_model", "node_price", "rental_gpu_hour_cost", "unmet_gpu_hour_cost",
                   "target_utilization", "min_utilization", "build_lead_months", "expand_lead_months",
                   "rent_lead_months"]


# Sizing inputs that a plan's workload keeps in model fields, not in ``inputs``: its team is ``slurm_account`` (a
# plan states a team's factor as the number ``calibration_factor``, so its figures do not move as calibration does).
NOT_INPUTS = ("gpu_model", "team")
JOB_NAME_MAX = 200


class PlanWorkload(models.Model):
    """A planned training run, starting in one of the plan's months; ``inputs`` are the other inputs of
    ``planning.sizing.Workload`` (``params_billion``, ``tokens_billion``, ...), checked by ``sizing.validate``."""

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="workloads")
    name = models.CharField(max_length=200)
    start = models.DateField(help_text="The calendar month it starts (its first day): one of the plan's months.")
    slurm_account = models.CharField(
        "Slurm account / team", max_length=100, blank=True,
        help_text="The account its jobs run under: once it has run, its jobs' GPU-hours calibrate the estimate.")
    slurm_job_name = models.CharField(
        "Slurm job name pattern", max_length=JOB_NAME_MAX, blank=True,
        help_text="Its jobs' names, shell-style: * any text, ? one character, e.g. llama-70b-*. With an account "
                  "too, a job must match both. Its time to result counts the jobs it matches.")
    gpu_model = models.ForeignKey(GPUModel, on_delete=models.PROTECT, related_name="+")
    inputs = models.JSONField(default=dict, help_text="Sizing inputs other than the GPU model, e.g. "
                                                      '{"params_billion": 70, "tokens_billion": 2000}.')
    # What the goodput allowance was when the workload came from the sizing page (its default, not an input): the
    # value, its basis in words, whether the fleet's measured rate gave it, the GPUs and the day. A measured
    # allowance is kept in ``inputs`` too, so the plan's figures stay the sizing page's as the fleet's rate moves.
    goodput_basis = models.JSONField(default=dict, blank=True, editable=False)
    history = HistoricalRecords(bases=[ChangeRecord])  # plan edits are in the change log, line by line

    class Meta:
        ordering = ["plan", "start", "pk"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        """Its row on its plan's page."""
        return f"{self.plan.get_absolute_url()}#workload-{self.pk}"

    @property
    def search_context(self):
        """What the search page shows after its name: workloads of several plans often share one."""
        return f"in {self.plan}"

    def workload(self):
        """The ``sizing.Workload``; raises ``ValidationError`` for unknown or missing inputs."""
        from ..sizing import sizing

        if not isinstance(self.inputs, dict):
            raise ValidationError({"inputs": "Give the sizing inputs as an object."})
        allowed = set(sizing.INPUTS) - set(NOT_INPUTS)
        if unknown := sorted(set(self.inputs) - allowed):
            raise ValidationError({"inputs": f"Unknown sizing inputs: {', '.join(unknown)}."})
        required = {name for name in allowed if sizing.INPUTS[name].default is MISSING}
        if missing := sorted(required - set(self.inputs)):
            raise ValidationError({"inputs": f"Missing sizing inputs: {', '.join(missing)}."})
        return sizing.Workload(gpu_model=self.gpu_model.name, **self.inputs)

    def clean(self):
        from ..sizing import sizing

        if self.start:
            self.start = self.start.replace(day=1)  # a month: its first day
            if self.plan_id and (message := months.outside(self.plan.first_month, self.plan.last_month, self.start)):
                raise ValidationError({"start": message})
        if self.slurm_job_name:
            from ..goodput import check_job_name

            self.slurm_job_name, message = check_job_name(self.slurm_job_name, self.slurm_account)
            if message:
                raise ValidationError({"slurm_job_name": message})
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
    note = models.TextField(blank=True, help_text="How the quantity and the price were derived.")
    # A price a rule derived (a share of the node price, a cost per kW) is an estimate until someone confirms it.
    price_estimated = models.BooleanField(default=False, help_text="The unit cost is an estimate, not a quote.")
    price_confirmed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                           blank=True, related_name="+")
    price_confirmed_at = models.DateTimeField(null=True, blank=True)
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
