"""Read-only summaries of planning for other apps and the home dashboard."""

from django.utils import timezone

from .models import RenewalAlert

ALERT_LIMIT = 10


def open_renewal_alerts(limit=ALERT_LIMIT, day=None):
    """Undismissed alerts whose notice deadline has not passed, soonest first, each with ``days_left``."""
    day = day or timezone.localdate()
    alerts = list(
        RenewalAlert.objects.filter(dismissed=False, notice_deadline__gte=day)
        .select_related("contract", "contract__owner").order_by("notice_deadline")[:limit]
    )
    for alert in alerts:
        alert.days_left = (alert.notice_deadline - day).days
    return alerts
