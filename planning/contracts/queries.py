"""Read-only summaries of planning for other apps and the home dashboard."""

from django.db.models import Count, Q, Sum
from django.utils import timezone

from .coverage import active_contracts
from .models import Contract, RenewalAlert

ALERT_LIMIT = 10


def renewal_alerts(day=None):
    """Undismissed alerts whose notice deadline has not passed on ``day``."""
    return RenewalAlert.objects.filter(dismissed=False, notice_deadline__gte=day or timezone.localdate())


def open_renewal_alerts(limit=ALERT_LIMIT, day=None):
    """Undismissed alerts whose notice deadline has not passed, soonest first, each with ``days_left``."""
    day = day or timezone.localdate()
    alerts = list(
        renewal_alerts(day).select_related("contract", "contract__owner").order_by("notice_deadline")[:limit]
    )
    for alert in alerts:
        alert.days_left = (alert.notice_deadline - day).days
    return alerts


def home_figures(day=None):
    """For the home dashboard, in two queries: ``renewals_due`` (contracts with an open renewal alert) and ``spend``,
    what the contracts active on ``day`` cost a month, per currency: ``[{"currency", "rentals", "other"}]`` (one-off
    purchase costs are not monthly and left out)."""
    day = day or timezone.localdate()
    rental = Q(kind=Contract.Kind.RENTAL)
    spend = list(active_contracts(day).values("currency").annotate(
        rentals=Sum("monthly_cost", filter=rental, default=0), other=Sum("monthly_cost", filter=~rental, default=0))
        .order_by("currency"))
    renewals = Contract.objects.filter(renewal_alerts__in=renewal_alerts(day)).aggregate(n=Count("pk", distinct=True))
    return {"renewals_due": renewals["n"], "spend": spend}
