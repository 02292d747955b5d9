"""The daily renewal alerts (Celery; beat schedules them)."""

import logging
from collections import defaultdict
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.utils import timezone

from portal import events

from .models import Contract, RenewalAlert

log = logging.getLogger(__name__)
EXPIRING_EVENT = "contract.expiring"


def due_for_alert(day, window_days):
    """Contracts whose notice deadline falls within ``window_days`` from ``day`` and has not passed."""
    last = day + timedelta(days=window_days)
    candidates = Contract.objects.filter(end__gte=day).select_related("owner")
    return [c for c in candidates if day <= c.notice_deadline <= last]


def expiring_payload(alert):
    contract = alert.contract
    return {
        "contract": {"id": contract.pk, "kind": contract.kind, "vendor": contract.vendor,
                     "reference": contract.reference, "title": contract.title, "end": contract.end,
                     "auto_renew": contract.auto_renew,
                     "owner": contract.owner.get_username() if contract.owner else None},
        "notice_deadline": alert.notice_deadline,
    }


def send_digests(alerts, day):
    """One e-mail per owner listing all of their newly alerted contracts; returns {owner e-mail: alerts}."""
    by_owner = defaultdict(list)
    for alert in alerts:
        owner = alert.contract.owner
        if owner is not None and owner.email:
            by_owner[owner.email].append(alert)
    for email, owned in by_owner.items():
        owned.sort(key=lambda a: a.notice_deadline)
        context = {"alerts": [(a, (a.notice_deadline - day).days) for a in owned], "day": day,
                   "portal_url": settings.PORTAL_URL}
        subject = f"Contract renewals: {len(owned)} notice deadline{'s' if len(owned) != 1 else ''} coming up"
        send_mail(subject, render_to_string("planning/renewal_digest.txt", context), None, [email])
    return by_owner


# The name keeps the module path of before the split of planning: beat and queued messages use it.
@shared_task(name="planning.tasks.raise_renewal_alerts")
def raise_renewal_alerts(day=None):
    """Daily: one ``RenewalAlert`` per contract and notice deadline within ``settings.RENEWAL_ALERT_DAYS``
    (idempotent: a deadline already alerted is skipped, so a run twice a day sends nothing twice), one
    digest e-mail per owner of the new ones, and a ``contract.expiring`` webhook event for each. Returns the
    number of alerts raised."""
    day = day or timezone.localdate()
    new = []
    for contract in due_for_alert(day, settings.RENEWAL_ALERT_DAYS):  # a handful a day: one query each is fine
        alert, created = RenewalAlert.objects.get_or_create(contract=contract, notice_deadline=contract.notice_deadline)
        if created:
            new.append(alert)
    emailed = []
    for email, owned in send_digests(new, day).items():
        for alert in owned:
            alert.emailed_to = email
            emailed.append(alert)
    RenewalAlert.objects.bulk_update(emailed, ["emailed_to"])
    for alert in new:
        events.emit(EXPIRING_EVENT, expiring_payload(alert))  # queued for the subscribed webhooks; never raises
    log.info("Raised %d renewal alerts", len(new))
    return len(new)
