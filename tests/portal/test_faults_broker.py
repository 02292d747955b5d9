"""Fault: the Celery broker is unreachable.

The portal's Celery app is pointed at an AMQP address where nothing listens (connection refused) or where a
socket accepts but never speaks AMQP (a hung broker), through the real kombu / py-amqp client. Pages are still
served; the actions that queue work ("Pull now" on the page and in the API, the beat poll of telemetry sources,
the ``plan.approved`` webhook of a plan approval) answer within seconds, never a 500; the work stays recorded
(the source due, the webhook delivery pending) and is queued once the broker is back: here the broker comes
back as kombu's filesystem transport, and the message is read from its queue folder.
"""

import json
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from inventory.telemetry import tasks
from inventory.telemetry.models import TelemetrySource
from planning.models import Webhook, WebhookDelivery
from planning.webhooks import delivery as webhooks
from portal.celery import app
from tests.helpers.pgserver import free_port
from tests.helpers.plans import act, create_plan

QUICK_S = 5  # a request that tries to queue work answers within this while the broker is down


def use_broker(url, transport_options):
    """Point the Celery app at another broker, dropping the connections and producers made for the old one."""
    app.conf.broker_url = url
    app.conf.broker_transport_options = transport_options
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(autouse=True)
def restore_broker():
    url, options = app.conf.broker_url, app.conf.broker_transport_options
    yield
    use_broker(url, options)


@pytest.fixture(params=["refused", "silent"])
def broker_down(request):
    """An AMQP broker address that refuses connections, or one that accepts them and never answers."""
    port = free_port()
    listener = None
    if request.param == "silent":
        listener = socket.create_server(("127.0.0.1", port))
        accepted = []
        threading.Thread(target=lambda: accepted.extend(listener.accept() for _ in range(50)), daemon=True).start()
    use_broker(f"amqp://guest:guest@127.0.0.1:{port}//", {})
    yield request.param
    if listener is not None:
        listener.close()


@pytest.fixture
def broker_back(tmp_path):
    """Call it when the broker is back: a filesystem broker; returns a function listing the queued tasks."""
    queue = tmp_path / "queue"

    def back():
        for folder in ("queue", "control"):
            (tmp_path / folder).mkdir(exist_ok=True)
        use_broker("filesystem://", {"data_folder_in": str(queue), "data_folder_out": str(queue),
                                     "control_folder": str(tmp_path / "control"), "store_processed": False})

        def queued():
            messages = [json.loads(path.read_text()) for path in sorted(queue.glob("*.msg"))]
            return [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in messages]
        return queued

    return back


def timed(call):
    began = time.monotonic()
    result = call()
    return result, time.monotonic() - began


def test_pages_are_served_and_pull_now_is_kept_for_later(manager_client, manager_api, broker_down, broker_back,
                                                          django_capture_on_commit_callbacks):
    source = TelemetrySource.objects.create(
        name="prom", kind="prometheus", url="http://prom:9090", consecutive_failures=3,
        next_attempt_at=timezone.now() + timedelta(minutes=30))  # backing off: Pull now skips that
    for url in ("/", reverse("inventory:telemetrysource_list"), source.get_absolute_url()):
        page, seconds = timed(lambda url=url: manager_client.get(url))
        assert page.status_code == 200 and seconds < QUICK_S

    page, seconds = timed(lambda: manager_client.post(reverse("inventory:telemetrysource_pull", args=[source.pk]),
                                                      follow=True))
    assert page.status_code == 200 and seconds < QUICK_S
    assert "could not start now" in page.content.decode()
    source.refresh_from_db()
    assert source.is_due()  # recorded: due now, whatever the backoff said

    TelemetrySource.objects.filter(pk=source.pk).update(next_attempt_at=timezone.now() + timedelta(minutes=30))
    answer, seconds = timed(lambda: manager_api.post(f"/api/inventory/telemetry-sources/{source.pk}/pull/"))
    assert answer.status_code == 202 and seconds < QUICK_S
    assert answer.json()["detail"] == tasks.PULL_NOT_QUEUED
    source.refresh_from_db()
    assert source.is_due()

    queued = broker_back()
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.poll_telemetry_sources() == 1  # beat's next poll, once the broker is back
    assert queued() == [("inventory.tasks.pull_telemetry_source", f"({source.pk},)")]


def test_the_poll_leaves_a_source_due_when_it_cannot_queue_it(db, broker_down, broker_back,
                                                              django_capture_on_commit_callbacks):
    was_due = timezone.now() - timedelta(minutes=1)
    source = TelemetrySource.objects.create(name="dcgm", kind="exporter", url="http://dcgm:9400/metrics",
                                            next_attempt_at=was_due)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.poll_telemetry_sources() == 1
    source.refresh_from_db()
    assert source.next_attempt_at == was_due  # not pushed 10 minutes ahead: the next poll tries again

    queued = broker_back()
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.poll_telemetry_sources() == 1
    assert queued() == [("inventory.tasks.pull_telemetry_source", f"({source.pk},)")]
    source.refresh_from_db()
    assert source.next_attempt_at > timezone.now()  # queued once: the poll after does not queue it again


def test_a_plan_approval_answers_and_its_webhook_is_sent_later(manager_api, broker_down, broker_back,
                                                               django_capture_on_commit_callbacks):
    from tests.factories import make_gpu_model, make_node_model
    from tests.helpers.accounts import make_user, token_client

    hook = Webhook.objects.create(name="erp", url="http://127.0.0.1:9/hook", secret="s", events=["plan.approved"])
    catalog = {"node_model": make_node_model(gpu_slots=8), "gpu_model": make_gpu_model()}
    plan = create_plan(manager_api, catalog)
    assert act(manager_api, plan["id"], "submit").status_code == 200
    second = token_client(make_user("mia", "manager"))
    with django_capture_on_commit_callbacks(execute=True):  # the queueing runs when the approval commits
        approved, seconds = timed(lambda: act(second, plan["id"], "approve", "go"))
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    assert seconds < QUICK_S
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert (delivery.event, delivery.status, delivery.attempts) == ("plan.approved", "pending", 0)

    queued = broker_back()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(created=timezone.now() - timedelta(minutes=3))
    with django_capture_on_commit_callbacks(execute=True):
        assert webhooks.requeue_pending_webhooks() == 1  # beat's sweep, every 5 minutes
    assert queued() == [("planning.webhooks.send_webhook", f"({delivery.pk},)")]
