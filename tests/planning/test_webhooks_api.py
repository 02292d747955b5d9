"""Webhooks over the API: CRUD with a write-only secret, event validation, manager-only writes, and the
read-only delivery log with its attempts (its query count: tests/portal/test_battery.py)."""

import pytest
from django.utils import timezone

from planning.models import Webhook, WebhookAttempt, WebhookDelivery

URL = "/api/planning/webhooks/"
DELIVERIES = "/api/planning/webhook-deliveries/"
SECRET = "s3cret-value"
BODY = {"name": "erp", "url": "https://erp.example.org/hook", "secret": SECRET, "events": ["delivery.received"]}


@pytest.mark.django_db
def test_create_and_update_never_echo_the_secret(manager_api):
    response = manager_api.post(URL, BODY, format="json")
    assert response.status_code == 201, response.data
    assert "secret" not in response.data and SECRET not in response.content.decode()
    assert response.data["events"] == ["delivery.received"] and response.data["enabled"] is True
    hook = Webhook.objects.get()
    assert hook.secret == SECRET

    response = manager_api.patch(f"{URL}{hook.pk}/", {"events": ["plan.approved", "contract.expiring"]},
                                 format="json")
    assert response.status_code == 200, response.data
    assert "secret" not in response.data
    hook.refresh_from_db()
    assert hook.secret == SECRET and hook.events == ["plan.approved", "contract.expiring"]

    response = manager_api.put(f"{URL}{hook.pk}/", {**BODY, "secret": "rotated"}, format="json")
    assert response.status_code == 200 and "rotated" not in response.content.decode()
    hook.refresh_from_db()
    assert hook.secret == "rotated"
    assert SECRET not in manager_api.get(f"{URL}{hook.pk}/").content.decode()
    assert manager_api.delete(f"{URL}{hook.pk}/").status_code == 204


@pytest.mark.django_db
def test_secret_required_on_create(manager_api):
    for body in ({k: v for k, v in BODY.items() if k != "secret"}, {**BODY, "secret": ""}):
        response = manager_api.post(URL, body, format="json")
        assert response.status_code == 400 and "secret" in response.data
    assert not Webhook.objects.exists()


@pytest.mark.django_db
def test_unknown_event_is_refused(manager_api):
    response = manager_api.post(URL, {**BODY, "events": ["delivery.received", "server.exploded"]}, format="json")
    assert response.status_code == 400 and "events" in response.data
    assert not Webhook.objects.exists()


@pytest.mark.django_db
def test_viewers_read_but_cannot_write(viewer_api):
    hook = Webhook.objects.create(name="erp", url="https://erp.example.org/hook", secret=SECRET, events=[])
    response = viewer_api.get(URL)
    assert response.status_code == 200 and SECRET not in response.content.decode()
    assert viewer_api.post(URL, BODY, format="json").status_code == 403
    assert viewer_api.patch(f"{URL}{hook.pk}/", {"enabled": False}, format="json").status_code == 403
    assert viewer_api.delete(f"{URL}{hook.pk}/").status_code == 403
    assert viewer_api.get(DELIVERIES).status_code == 200


def make_deliveries(n, hook, event="delivery.received", status="pending"):
    for i in range(n):
        delivery = WebhookDelivery.objects.create(webhook=hook, event=event, payload={"i": i}, status=status)
        for code in (500, 200):
            WebhookAttempt.objects.create(delivery=delivery, at=timezone.now(), status_code=code)


@pytest.mark.django_db
def test_delivery_log_with_attempts_and_filters(viewer_api):
    hook = Webhook.objects.create(name="erp", url="https://erp.example.org/hook", secret=SECRET, events=[])
    other = Webhook.objects.create(name="crm", url="https://crm.example.org/hook", secret=SECRET, events=[])
    make_deliveries(2, hook, status="sent")
    make_deliveries(1, hook, event="ping")
    make_deliveries(1, other, event="plan.approved", status="failed")
    data = viewer_api.get(DELIVERIES).json()
    assert data["count"] == 4
    first = data["results"][0]
    assert [a["status_code"] for a in first["attempt_log"]] == [500, 200]
    assert first["webhook_name"] in {"erp", "crm"} and "secret" not in str(data)
    assert viewer_api.get(DELIVERIES, {"webhook": hook.pk}).json()["count"] == 3
    assert viewer_api.get(DELIVERIES, {"event": "ping"}).json()["count"] == 1
    assert viewer_api.get(DELIVERIES, {"status": "failed"}).json()["results"][0]["webhook"] == other.pk
    assert viewer_api.get(DELIVERIES, {"status": "sent", "webhook": hook.pk}).json()["count"] == 2
    delivery = WebhookDelivery.objects.first()
    assert viewer_api.get(f"{DELIVERIES}{delivery.pk}/").json()["id"] == delivery.pk


@pytest.mark.django_db
def test_delivery_log_is_read_only(manager_api):
    hook = Webhook.objects.create(name="erp", url="https://erp.example.org/hook", secret=SECRET, events=[])
    make_deliveries(1, hook)
    pk = WebhookDelivery.objects.get().pk
    assert manager_api.post(DELIVERIES, {}, format="json").status_code == 405
    assert manager_api.delete(f"{DELIVERIES}{pk}/").status_code == 405
