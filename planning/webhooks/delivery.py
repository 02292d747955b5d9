"""Outgoing webhooks: ``emit`` records one ``WebhookDelivery`` per subscribed webhook and queues
``send_webhook`` when the transaction commits, so the request that caused the event never waits for,
nor fails because of, a receiver. The task signs the body (HMAC-SHA256 with the webhook's secret), logs
every attempt and retries with exponential backoff.

Events: ``delivery.received`` (a delivery was recorded), ``contract.expiring`` (the renewal task),
``plan.approved`` (capacity plans, with the planning work)."""

import hashlib
import hmac
import json
import logging
import time
from datetime import timedelta

import requests
from celery import shared_task
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from portal import http
from portal.tasks import enqueue

from .models import Webhook, WebhookAttempt, WebhookDelivery

log = logging.getLogger(__name__)

TIMEOUT_S = 5
MAX_ATTEMPTS = 6
FIRST_RETRY_S = 30  # then 60, 120, 240, 480
TEST_EVENT = "ping"
SWEEP_GRACE = timedelta(minutes=2)  # a pending delivery this overdue was lost (broker down): queue it again
REQUEUE_HOLD = timedelta(minutes=10)  # a re-queued delivery is left alone this long by the next sweeps


def emit(event, payload, webhooks=None):
    """Queue ``event`` for every enabled webhook subscribed to it (or for ``webhooks`` given). Never raises:
    a failure to queue is logged, not passed on to the caller. Returns the deliveries recorded."""
    try:
        if webhooks is None and event not in Webhook.Event.values:
            return []  # no webhook subscribes to it (``Webhook.clean``): no query for the other apps' events
        if webhooks is None:
            # Filtered in Python: there are few webhooks, and SQLite (the demo) has no JSON "contains" lookup.
            webhooks = [w for w in Webhook.objects.filter(enabled=True) if event in (w.events or [])]
        payload = json.loads(json.dumps(payload, cls=DjangoJSONEncoder))  # dates, decimals → JSON values
        with transaction.atomic():
            deliveries = WebhookDelivery.objects.bulk_create(
                WebhookDelivery(webhook=webhook, event=event, payload=payload) for webhook in webhooks
            )
        for delivery in deliveries:
            transaction.on_commit(lambda pk=delivery.pk: _queue(pk))
        return deliveries
    except Exception:
        log.exception("Could not record webhook event %s", event)
        return []


def _queue(pk):
    # A broker outage must not fail the request that already committed: the delivery stays pending and
    # requeue_pending_webhooks queues it again.
    enqueue(send_webhook, pk)


def sign(secret, body):
    """The ``X-Portal-Signature`` header value for ``body`` (bytes)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def body_of(delivery):
    return json.dumps(
        {"event": delivery.event, "id": delivery.pk, "created": delivery.created.isoformat(), "data": delivery.payload},
        separators=(",", ":"),
    ).encode()


def attempt(delivery):
    """POST the delivery once (no transaction may be open: the receiver can take ``TIMEOUT_S`` and more).
    Returns ``(status code or None, error or "")``: the error in the portal's words, never the answer's text."""
    webhook = delivery.webhook
    body = body_of(delivery)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "cluster-portal-webhooks",
        "X-Portal-Event": delivery.event,
        "X-Portal-Delivery": str(delivery.pk),
        "X-Portal-Signature": sign(webhook.secret, body),
    }
    try:
        response = http.fetch("POST", webhook.url, data=body, headers=headers, timeout=TIMEOUT_S)
    except http.Redirected as exc:
        return exc.status_code, http.describe(exc, TIMEOUT_S)
    except requests.RequestException as exc:
        return None, http.describe(exc, TIMEOUT_S)
    if not 200 <= response.status_code < 300:
        return response.status_code, http.status_error(response.status_code)
    return response.status_code, ""


def backoff(attempts):
    """Seconds before the next try after ``attempts`` failed ones: 30, 60, 120, ..."""
    return FIRST_RETRY_S * 2 ** (attempts - 1)


def lease():
    """How long a claimed delivery is left to its sender: longer than one attempt can take (``fetch`` ends
    within about twice its timeout), so only a sender that died leaves it to a later task."""
    return timedelta(seconds=4 * TIMEOUT_S + 30)


def claim(delivery_id, now):
    """Compare-and-set: mark a pending delivery nobody is sending as being sent until ``now`` + ``lease()``.
    One short UPDATE (its own transaction), so exactly one of two tasks for the same delivery wins. Returns
    the delivery (with its webhook) when this task won, else None."""
    until = now + lease()
    won = (WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING)
           .filter(Q(sending_until__isnull=True) | Q(sending_until__lte=now)).update(sending_until=until))
    if not won:
        return None
    return WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)


def record(delivery, status_code, error, started):
    """Log one attempt and the delivery's new state, and release the claim, in one short transaction.
    Returns the seconds before the next try, or None when the delivery is done (sent or failed)."""
    now, countdown = timezone.now(), None
    delivery.attempts += 1
    delivery.last_status_code, delivery.last_error, delivery.last_attempt_at = status_code, error, now
    if not error:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.SENT, None
    elif delivery.attempts >= MAX_ATTEMPTS:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
    else:
        countdown = backoff(delivery.attempts)
        delivery.next_attempt_at = now + timedelta(seconds=countdown)
    delivery.sending_until = None
    with transaction.atomic():
        WebhookAttempt.objects.create(delivery=delivery, at=now, status_code=status_code, error=error,
                                      duration_ms=int((time.monotonic() - started) * 1000))
        delivery.save(update_fields=["attempts", "last_status_code", "last_error", "last_attempt_at", "status",
                                     "next_attempt_at", "sending_until"])
    return countdown


# Task names keep the module path of before the split of planning: queued messages and beat use them.
@shared_task(name="planning.webhooks.send_webhook", bind=True, max_retries=MAX_ATTEMPTS - 1, acks_late=True)
def send_webhook(self, delivery_id):
    """Send one webhook delivery; on failure retry with backoff, after ``MAX_ATTEMPTS`` mark it failed.

    No transaction (nor row lock) is held while the receiver is waited on: the delivery is claimed first
    (``claim``), sent, then the outcome recorded (``record``). A second task for the same delivery (queued
    again by ``requeue_pending_webhooks``) finds it claimed, or no longer pending, and sends nothing."""
    delivery = claim(delivery_id, timezone.now())
    if delivery is None:
        return
    started = time.monotonic()
    status_code, error = attempt(delivery)
    countdown = record(delivery, status_code, error, started)
    if countdown is not None:
        raise self.retry(countdown=countdown)


@shared_task(name="planning.webhooks.requeue_pending_webhooks")
def requeue_pending_webhooks():
    """Every 5 minutes (beat): queue again each pending delivery nobody is sending, e.g. one whose
    ``send_webhook.delay`` failed while the broker was down. Due means ``next_attempt_at`` passed more than
    ``SWEEP_GRACE`` ago (a Celery retry had its chance), or never set and created that long ago. Its
    ``next_attempt_at`` is pushed ``REQUEUE_HOLD`` ahead first, so the next sweep does not queue it twice.
    Returns how many were queued."""
    now = timezone.now()
    cutoff = now - SWEEP_GRACE
    with transaction.atomic():
        due = list(
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .filter(status=WebhookDelivery.Status.PENDING)
            .filter(Q(next_attempt_at__lte=cutoff) | Q(next_attempt_at__isnull=True, created__lte=cutoff))
            .order_by("pk").values_list("pk", flat=True)
        )
        WebhookDelivery.objects.filter(pk__in=due).update(next_attempt_at=now + REQUEUE_HOLD)
        for pk in due:
            transaction.on_commit(lambda pk=pk: _queue(pk))
    if due:
        log.info("Re-queued %s pending webhook deliveries", len(due))
    return len(due)
