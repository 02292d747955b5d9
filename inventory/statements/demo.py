"""The demo's statements (``inventory.demo.seed_demo``, after the Slurm job history, which covers the last closed
month): a rate card in effect since January of that month's year, and that month issued, as beat does on the first
of each month (its mails are not sent: the demo has no mail server to speak of)."""

from datetime import date
from decimal import Decimal

from django.db import transaction

from inventory.models import GPUModel
from inventory.telemetry.queries import calendar_month, last_closed_month

from .issuing import issue_month
from .models import Rate, RateCard

SEEDS = "a rate card and the last closed month's statements"
# (GPU model name or None, partition or ""): price per GPU-hour
RATES = {
    (None, ""): "2.50",
    ("H100 SXM 80GB", ""): "3.20",
    ("H200 SXM 141GB", ""): "4.10",
    ("A100 80GB SXM", ""): "1.60",
    (None, "inference"): "1.40",
    ("H100 SXM 80GB", "inference"): "2.40",
}


def seed(seeder, users):
    """Returns a line for the summary: the month, its statements' GPU-hours against the fleet's."""
    month = last_closed_month()
    with transaction.atomic():
        card, created = RateCard.objects.get_or_create(
            effective_from=date(month.year, 1, 1), defaults={"note": "Demo rate card (seed_demo)"})
        if created:
            models = dict(GPUModel.objects.values_list("name", "pk"))
            Rate.objects.bulk_create(Rate(card=card, gpu_model_id=models.get(name) if name else None,
                                          partition=partition, price_per_gpu_hour=Decimal(price))
                                     for (name, partition), price in RATES.items() if name is None or name in models)
    closed, _ = issue_month(month, user=users.get("admin"))
    statements = list(closed.statements.all())
    total = sum(statement.gpu_hours for statement in statements)
    start, end = calendar_month(month)
    return (f"{month:%Y-%m}: {len(statements)} statements, {total:,.2f} GPU-hours, "
            f"{sum(s.total for s in statements):,.2f} {card.currency}; the fleet's allocated GPU-hours "
            f"{closed.fleet_gpu_hours:,.2f} ({start:%Y-%m-%d} to {end:%Y-%m-%d})")
