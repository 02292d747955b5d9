"""Rate cards and monthly statements (issue 36). Like the other feature packages' models, inventory's models are named
by string: ``inventory/models.py`` imports this module.

A rate card prices a month from its ``effective_from`` on; once a statement was issued on it, it is frozen (a new card
with a later date changes prices). A closed month (``ClosedMonth``) holds one ``Statement`` per team whose jobs had
GPU time in it, and one without a team for the jobs of no team; each statement stores its lines as issued.
"""

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse
from simple_history.models import HistoricalRecords

from portal.history import ChangeRecord
from portal.models import PortalModel

NO_TEAM = "no team"
MONEY = {"max_digits": 14, "decimal_places": 2}
HOURS = {"max_digits": 14, "decimal_places": 4}


def default_currency():
    return settings.COST_CURRENCY


class RateCardInUse(ValidationError):
    """A rate card (or one of its rates) that priced an issued statement cannot change."""


class RateCard(PortalModel):
    """Prices per GPU-hour from a day on. A card that priced an issued month cannot change (``save`` and ``clean``
    refuse); its closed months protect it from deletion (``ProtectedError``: a 409 in the API, a message on the
    page)."""

    effective_from = models.DateField(
        unique=True, help_text="Prices every month that begins on or after this day, until a later card.")
    currency = models.CharField(max_length=3, default=default_currency, help_text="ISO 4217 code, e.g. USD.")
    note = models.TextField(blank=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-effective_from"]

    def __str__(self):
        return f"Rate card from {self.effective_from.isoformat()}"

    def save(self, *args, **kwargs):
        self.check_editable()  # the model's guard, for writes that skip the forms (the shell, a script)
        self.currency = self.currency.upper()
        super().save(*args, **kwargs)

    @property
    def in_use(self):
        """Whether a closed month was priced with this card."""
        return self.pk is not None and self.closed_months.exists()

    def check_editable(self):
        if self.in_use:
            raise RateCardInUse(f"{self} priced issued statements and cannot change; add a card with a later date.")

    def clean(self):
        self.check_editable()
        if self.currency and not (len(self.currency) == 3 and self.currency.isalpha()):
            raise ValidationError({"currency": "Enter a three-letter currency code, e.g. USD."})


ONCE = "The card already has a rate for this GPU model and partition."


class Rate(models.Model):
    """A price per GPU-hour on a card, for a GPU model and a partition; empty: any (``pricing.price``)."""

    card = models.ForeignKey(RateCard, on_delete=models.CASCADE, related_name="rates")
    gpu_model = models.ForeignKey("inventory.GPUModel", on_delete=models.PROTECT, null=True, blank=True,
                                  related_name="+", help_text="Empty: any GPU model.")
    partition = models.CharField(max_length=100, blank=True, help_text="Empty: any partition.")
    price_per_gpu_hour = models.DecimalField(max_digits=10, decimal_places=4, validators=[MinValueValidator(0)])
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["card", "gpu_model__name", "partition"]
        constraints = [
            # Two partial constraints, not ``nulls_distinct=False``: SQLite (the demo's database) has no such index.
            models.UniqueConstraint(fields=["card", "gpu_model", "partition"],
                                    condition=models.Q(gpu_model__isnull=False), name="rate_once_per_model_partition",
                                    violation_error_message=ONCE),
            models.UniqueConstraint(fields=["card", "partition"], condition=models.Q(gpu_model__isnull=True),
                                    name="rate_once_per_partition", violation_error_message=ONCE),
            models.CheckConstraint(condition=models.Q(price_per_gpu_hour__gte=0), name="rate_not_negative"),
        ]

    def __str__(self):
        return f"{self.gpu_model or 'any model'} / {self.partition or 'any partition'}: {self.price_per_gpu_hour}"

    def save(self, *args, **kwargs):
        self._check_card()
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        self._check_card()
        return super().delete(*args, **kwargs)

    def clean(self):
        if self.card_id:
            self._check_card()

    def _check_card(self):
        cards = [self.card_id]
        if self.pk:  # moved from another card: that one changes too
            cards += Rate.objects.filter(pk=self.pk).values_list("card_id", flat=True)
        for card in RateCard.objects.filter(pk__in=cards):
            card.check_editable()


class ClosedMonth(models.Model):
    """A month whose statements were issued: it never changes again (corrections are ``Adjustment`` rows)."""

    month = models.DateField(unique=True, help_text="The month's first day.")
    rate_card = models.ForeignKey(RateCard, on_delete=models.PROTECT, related_name="closed_months")
    issued_at = models.DateTimeField()
    issued_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                  related_name="+")
    fleet_gpu_hours = models.FloatField(help_text="The fleet's allocated GPU-hours in the month when issued.")

    class Meta:
        ordering = ["-month"]

    def __str__(self):
        return self.month.strftime("%Y-%m")


class StatementQuerySet(models.QuerySet):
    def visible_to(self, user):
        """The statements ``inventory.read_statement`` lets the user read (``statements.policy``), as a query."""
        if user.has_perm("inventory.read_every_statement"):
            return self
        if not user.has_perm("inventory.view_statement"):
            return self.none()
        return self.filter(team__in=user.teams.all()) if user.is_authenticated else self.none()


class Statement(PortalModel):
    """One team's month (``team`` None: the jobs of no team), as issued: its lines and totals never change."""

    closed_month = models.ForeignKey(ClosedMonth, on_delete=models.PROTECT, related_name="statements")
    month = models.DateField(help_text="The month's first day.")
    team = models.ForeignKey("inventory.Team", on_delete=models.PROTECT, null=True, blank=True,
                             related_name="statements")
    currency = models.CharField(max_length=3)
    gpu_hours = models.DecimalField(**HOURS, help_text="Allocated GPU-hours in the month.")
    charges = models.DecimalField(**MONEY, help_text="The GPU-hours priced.")
    credit_gpu_hours = models.DecimalField(**HOURS, help_text="GPU-hours lost to infrastructure interruptions.")
    credit = models.DecimalField(**MONEY, help_text="Those GPU-hours priced (subtracted).")
    adjustments = models.DecimalField(**MONEY, default=Decimal("0"), help_text="Corrections of closed months.")
    total = models.DecimalField(**MONEY, help_text="Charges − credit + adjustments.")
    mailed_at = models.DateTimeField(null=True, blank=True, help_text="When it was e-mailed to the team.")

    objects = StatementQuerySet.as_manager()

    class Meta:
        ordering = ["-month", "team__name"]
        constraints = [  # one per team and month, and one "no team" (see ``Rate``'s constraints)
            models.UniqueConstraint(fields=["month", "team"], condition=models.Q(team__isnull=False),
                                    name="statement_once_per_team_month"),
            models.UniqueConstraint(fields=["month"], condition=models.Q(team__isnull=True),
                                    name="statement_once_without_team_month"),
        ]

    def __str__(self):
        return f"{self.team_name} {self.month_label}"

    @property
    def team_name(self):
        return self.team.name if self.team_id else NO_TEAM

    @property
    def month_label(self):
        return self.month.strftime("%Y-%m")

    @property
    def rate_card(self):
        return self.closed_month.rate_card

    def download_url(self, kind):
        return reverse(f"inventory:statement_{kind}", args=[self.pk])


class StatementLine(models.Model):
    class Kind(models.TextChoices):
        USAGE = "usage", "Usage"
        CREDIT = "credit", "Infrastructure credit"

    statement = models.ForeignKey(Statement, on_delete=models.CASCADE, related_name="lines")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    partition = models.CharField(max_length=100, blank=True)
    gpu_model = models.ForeignKey("inventory.GPUModel", on_delete=models.SET_NULL, null=True, blank=True,
                                  related_name="+")
    gpu_model_name = models.CharField("GPU model", max_length=100, blank=True, help_text="As named when issued.")
    user = models.CharField(max_length=100, blank=True, help_text="The Slurm user (usage lines).")
    gpu_hours = models.DecimalField(**HOURS)
    price_per_gpu_hour = models.DecimalField(max_digits=10, decimal_places=4)
    amount = models.DecimalField(**MONEY, help_text="GPU-hours × price; negative for a credit.")

    class Meta:
        ordering = ["statement", "kind", "partition", "gpu_model_name", "user"]

    def __str__(self):
        return f"{self.get_kind_display()} {self.partition}/{self.gpu_model_name}/{self.user}"


class Adjustment(models.Model):
    """A correction of a closed month for a team: it lands on the next statement issued for the team."""

    team = models.ForeignKey("inventory.Team", on_delete=models.PROTECT, related_name="statement_adjustments")
    corrects = models.DateField(help_text="The first day of the closed month it corrects.")
    amount = models.DecimalField(**MONEY, help_text="Added to the statement's total; negative: a refund.")
    gpu_hours = models.DecimalField(**HOURS, null=True, blank=True, help_text="The GPU-hours it stands for, if any.")
    reason = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    statement = models.ForeignKey(Statement, on_delete=models.PROTECT, null=True, blank=True,
                                  related_name="adjustment_rows", help_text="The statement it landed on.")

    class Meta:
        ordering = ["created", "pk"]

    def __str__(self):
        return f"{self.team} {self.corrects:%Y-%m}: {self.amount}"

    def clean(self):
        if self.corrects and self.corrects.day != 1:
            raise ValidationError({"corrects": "Give the first day of the month it corrects."})
        if self.corrects and not ClosedMonth.objects.filter(month=self.corrects).exists():
            raise ValidationError({"corrects": "Only a closed (issued) month can be corrected."})
