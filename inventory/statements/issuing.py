"""Issuing a month: the one service that closes a month and stores its statements (pages, API and the monthly task
call it).

``issue_month(month, user=None, now=None)`` closes the month that begins on ``month`` once it has ended: it claims the
month's ``ClosedMonth`` row first (a unique row: a second caller waits on the first's insert and then finds the month
closed), builds the statements (``build``) and stores them with their lines, and lands the pending adjustments on
them. Issuing a closed month again returns it as it is: a retried task or a double click adds nothing.

``adjust(team, corrects, amount, reason, user, gpu_hours=None)`` records a correction of a closed month; it lands
on the team's next statement.
"""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from inventory.telemetry import allocation_rollup
from inventory.telemetry.queries import calendar_month

from . import build as builder
from .models import Adjustment, ClosedMonth, Statement, StatementLine
from .pricing import NoRate, card_for


class CannotIssue(ValidationError):
    """The month has not ended, or no rate prices it."""


def issue_month(month, user=None, now=None):
    """Close ``month`` (any day of it) and issue its statements (module docstring); returns ``(closed month, whether
    this call issued it)``."""
    now = now or timezone.now()
    month = month.replace(day=1)
    start, end = calendar_month(month)
    if end > now:
        raise CannotIssue({"month": f"{month:%Y-%m} can be issued once it has ended ({end.isoformat()})."})
    closed = ClosedMonth.objects.filter(month=month).first()
    if closed is not None:
        return closed, False
    try:
        card = card_for(month)
    except NoRate as error:
        raise CannotIssue({"month": str(error)}) from None
    with transaction.atomic():
        closed, created = ClosedMonth.objects.get_or_create(
            month=month, defaults={"rate_card": card, "issued_at": now, "issued_by": user, "fleet_gpu_hours": 0.0})
        if not created:  # another caller issued it while this one waited on its insert
            return closed, False
        try:
            card, drafts, _ = builder.build(month, now)
        except NoRate as error:
            raise CannotIssue({"month": str(error)}) from None
        for draft in drafts.values():
            store(closed, draft)
        # The rollup's figure for the fleet, kept beside the statements that must add up to it.
        closed.fleet_gpu_hours = allocation_rollup.allocated(start, end, now, None).get(None, {}).get("gpu_hours", 0.0)
        closed.rate_card = card
        closed.save(update_fields=["fleet_gpu_hours", "rate_card"])
    return closed, True


def store(closed, draft):
    statement = Statement.objects.create(
        closed_month=closed, month=closed.month, team=draft.team, currency=closed.rate_card.currency,
        gpu_hours=draft.gpu_hours, charges=draft.charges, credit_gpu_hours=draft.credit_gpu_hours,
        credit=draft.credit, adjustments=draft.adjustment_total, total=draft.total)
    StatementLine.objects.bulk_create([
        StatementLine(statement=statement, kind=line.kind, partition=line.partition, gpu_model_id=line.gpu_model_id,
                      gpu_model_name=line.gpu_model_name, user=line.user, gpu_hours=line.gpu_hours,
                      price_per_gpu_hour=line.price_per_gpu_hour, amount=line.amount)
        for line in draft.lines])
    Adjustment.objects.filter(pk__in=[row.pk for row in draft.adjustments], statement__isnull=True).update(
        statement=statement)
    return statement


def adjust(team, corrects, amount, reason, user=None, gpu_hours=None):
    """Record a correction of the closed month ``corrects`` for ``team`` (validated: a closed month, a reason)."""
    row = Adjustment(team=team, corrects=corrects.replace(day=1), amount=Decimal(amount), reason=reason,
                     created_by=user, gpu_hours=gpu_hours)
    row.full_clean(exclude=["statement"])
    row.save()
    return row
