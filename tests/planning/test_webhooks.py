"""Outgoing webhooks: emit, the signed POST to a real local receiver, retries with backoff, failure after
the last attempt, and emit never failing the caller."""

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from planning.models import Webhook, WebhookDelivery
from planning.webhooks import delivery as webhooks
from portal import events
from tests.helpers.webhooks import SECRET, Receiver, RetryNow, make_hook, send_until_done


@pytest.fixture
def receiver():
    made = []

    def make(statuses=()):
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for r in made:
        r.close()


@pytest.fixture
def hook_on(receiver):
    def make(statuses=()):
        server = receiver(statuses)
        make_hook(server.url)
        return server

    return make


@pytest.mark.django_db
def test_emit_records_a_delivery_per_subscribed_enabled_webhook(django_capture_on_commit_callbacks, monkeypatch):
    subscribed = make_hook("http://example.invalid/a")
    make_hook("http://example.invalid/b", events=["plan.approved"])
    make_hook("http://example.invalid/c", enabled=False)
    queued = []
    monkeypatch.setattr(webhooks.send_webhook, "delay", queued.append)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        deliveries = webhooks.emit("delivery.received", {"x": 1})
    assert [d.webhook for d in deliveries] == [subscribed] and queued == []  # nothing sent before the commit
    for callback in callbacks:
        callback()
    assert queued == [deliveries[0].pk]


@pytest.mark.django_db
def test_signed_post_to_a_real_receiver(receiver):
    server = receiver()
    hook = make_hook(server.url)
    delivery = webhooks.emit("delivery.received", {"delivery": 7})[0]
    webhooks.send_webhook(delivery.pk)
    headers, body = server.requests[0]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Portal-Signature"], expected)
    assert headers["X-Portal-Event"] == "delivery.received" and headers["X-Portal-Delivery"] == str(delivery.pk)
    payload = json.loads(body)
    assert payload["event"] == "delivery.received" and payload["id"] == delivery.pk
    assert payload["data"] == {"delivery": 7} and payload["created"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("sent", 1, 200)
    attempt = delivery.attempt_log.get()
    assert attempt.status_code == 200 and attempt.error == "" and attempt.duration_ms >= 0
    assert hook.deliveries.count() == 1


@pytest.mark.django_db
def test_retries_with_backoff_then_succeeds(hook_on, retries):
    hook_on([500, 503])
    delivery = webhooks.emit("delivery.received", {})[0]
    send_until_done(delivery.pk)
    delivery.refresh_from_db()
    assert retries == [30, 60]
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("sent", 3, 200)
    assert [a.status_code for a in delivery.attempt_log.all()] == [500, 503, 200]
    assert "HTTP 500" in delivery.attempt_log.first().error


@pytest.mark.django_db
def test_marked_failed_after_the_last_attempt(hook_on, retries):
    hook_on([500] * 10)
    delivery = webhooks.emit("delivery.received", {})[0]
    send_until_done(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert delivery.attempts == webhooks.MAX_ATTEMPTS == delivery.attempt_log.count()
    assert retries == [30, 60, 120, 240, 480]
    webhooks.send_webhook(delivery.pk)  # a late duplicate task does nothing
    assert delivery.attempt_log.count() == webhooks.MAX_ATTEMPTS


@pytest.mark.django_db
def test_unreachable_receiver_is_logged_as_an_error(retries):
    make_hook("http://127.0.0.1:9/")  # discard port: connection refused
    delivery = webhooks.emit("delivery.received", {})[0]
    with pytest.raises(RetryNow):
        webhooks.send_webhook(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.next_attempt_at and delivery.last_error == "could not connect"
    assert delivery.attempt_log.get().status_code is None


@pytest.mark.django_db
def test_emit_never_raises_into_the_request(monkeypatch, django_capture_on_commit_callbacks):
    make_hook("http://example.invalid/")

    def broken(*args, **kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(WebhookDelivery.objects, "bulk_create", broken)
    assert webhooks.emit("delivery.received", {}) == []

    monkeypatch.undo()
    monkeypatch.setattr(webhooks.send_webhook, "delay", broken)  # broker down
    with django_capture_on_commit_callbacks(execute=True):
        assert len(webhooks.emit("delivery.received", {})) == 1


@pytest.mark.django_db
def test_webhook_pages_keep_the_secret_hidden(manager_client, monkeypatch, django_capture_on_commit_callbacks):
    form = {"name": "erp", "url": "https://erp.example.org/hook", "events": ["delivery.received"], "secret": SECRET,
            "enabled": "on"}
    assert manager_client.post("/planning/webhooks/add/", form).status_code == 302
    hook = Webhook.objects.get()
    assert hook.secret == SECRET
    assert SECRET not in manager_client.get(f"/planning/webhooks/{hook.pk}/edit/").content.decode()
    assert manager_client.post(f"/planning/webhooks/{hook.pk}/edit/", {**form, "secret": ""}).status_code == 302
    hook.refresh_from_db()
    assert hook.secret == SECRET
    monkeypatch.setattr(webhooks.send_webhook, "delay", lambda pk: None)
    with django_capture_on_commit_callbacks(execute=True):
        manager_client.post(f"/planning/webhooks/{hook.pk}/test/")
    page = manager_client.get(f"/planning/webhooks/{hook.pk}/").content.decode()
    assert "ping" in page and SECRET not in page


@pytest.mark.django_db
def test_webhook_edits_are_for_managers(viewer_client):
    hook = make_hook("https://erp.example.org/hook")
    assert viewer_client.get(f"/planning/webhooks/{hook.pk}/").status_code == 200
    assert viewer_client.get("/planning/webhooks/add/").status_code == 403
    assert viewer_client.post(f"/planning/webhooks/{hook.pk}/test/").status_code == 403


def lost_delivery(monkeypatch, django_capture_on_commit_callbacks, age=None):
    """A delivery whose ``send_webhook.delay`` failed (broker down): pending, never queued, ``age`` old."""
    make_hook("http://example.invalid/")

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(webhooks.send_webhook, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        delivery = webhooks.emit("delivery.received", {})[0]
    if age is not None:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(created=timezone.now() - age)
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.next_attempt_at is None
    queued = []
    monkeypatch.setattr(webhooks.send_webhook, "delay", queued.append)  # the broker is back
    return delivery, queued


def sweep(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return webhooks.requeue_pending_webhooks()


@pytest.mark.django_db
def test_sweep_queues_a_delivery_the_broker_lost_once(monkeypatch, django_capture_on_commit_callbacks):
    delivery, queued = lost_delivery(monkeypatch, django_capture_on_commit_callbacks, age=timedelta(minutes=5))
    assert sweep(django_capture_on_commit_callbacks) == 1
    assert queued == [delivery.pk]
    delivery.refresh_from_db()
    assert delivery.next_attempt_at > timezone.now()  # held while it is being sent
    assert sweep(django_capture_on_commit_callbacks) == 0  # a second sweep does not queue it again
    assert queued == [delivery.pk]


@pytest.mark.django_db
def test_sweep_leaves_recent_and_finished_deliveries(monkeypatch, django_capture_on_commit_callbacks):
    recent, queued = lost_delivery(monkeypatch, django_capture_on_commit_callbacks)
    assert sweep(django_capture_on_commit_callbacks) == 0
    old = timezone.now() - timedelta(hours=1)
    for status in ("sent", "failed"):
        WebhookDelivery.objects.create(webhook=recent.webhook, event="delivery.received", payload={}, status=status)
    # A delivery waiting for its Celery retry is not due yet either.
    WebhookDelivery.objects.create(webhook=recent.webhook, event="delivery.received", payload={},
                                   next_attempt_at=timezone.now() + timedelta(seconds=30))
    WebhookDelivery.objects.exclude(pk=recent.pk).update(created=old)
    assert sweep(django_capture_on_commit_callbacks) == 0 and queued == []


@pytest.mark.django_db
def test_sweep_queues_an_overdue_retry(monkeypatch, django_capture_on_commit_callbacks):
    delivery, queued = lost_delivery(monkeypatch, django_capture_on_commit_callbacks, age=timedelta(hours=1))
    WebhookDelivery.objects.filter(pk=delivery.pk).update(attempts=2,
                                                          next_attempt_at=timezone.now() - timedelta(minutes=10))
    assert sweep(django_capture_on_commit_callbacks) == 1 and queued == [delivery.pk]


@pytest.mark.django_db
def test_sweep_is_on_the_beat_schedule():
    from django.conf import settings

    tasks = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert tasks["planning.webhooks.requeue_pending_webhooks"] == 300


@pytest.mark.django_db
def test_a_business_event_reaches_the_webhooks_and_a_failing_subscriber_does_not_reach_the_emitter(monkeypatch):
    hook = make_hook("http://127.0.0.1:9/", events=["plan.approved"])

    def broken(event, payload):
        raise RuntimeError("subscriber down")

    monkeypatch.setattr(events, "_subscribers", [broken, webhooks.emit])
    monkeypatch.setattr(webhooks, "_queue", lambda pk: None)  # recorded, not sent
    events.emit("plan.approved", {"plan": {"id": 1}})  # no exception
    assert [(d.webhook, d.event, d.payload) for d in WebhookDelivery.objects.all()] == [
        (hook, "plan.approved", {"plan": {"id": 1}})]
