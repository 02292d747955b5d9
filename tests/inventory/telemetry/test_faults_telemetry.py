"""Faults: a telemetry source that hangs, a webhook receiver that hangs, a mail server that hangs; and a check that
every outbound HTTP call in the code base has a timeout.

Two kinds of hanging server, both real sockets: *silent* accepts the connection and never answers; *trickling*
answers ``200 OK`` with its headers at once, then sends its body one byte every 0.2 s, so no single socket read
ever waits long enough for a read timeout (``requests``' ``timeout`` alone never fires on it).
"""

import ast
import socket
import threading
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.core import mail

from inventory.telemetry import tasks
from inventory.telemetry.models import GPUHourly, TelemetrySource
from inventory.telemetry.pull import backoff_seconds
from planning.models import WebhookDelivery
from planning.webhooks import delivery as webhooks
from support import notifications
from support.models import Ticket
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user
from tests.helpers.paths import ROOT
from tests.helpers.webhooks import make_hook, send_until_done

TIMEOUT_S = 1
BOUND_S = TIMEOUT_S + 1.5  # a call against a hanging server ends at its timeout (plus slack for a loaded machine)


@contextmanager
def hanging_server(kind):
    """``silent`` or ``trickling`` (see the module's docstring), or ``refused`` (nothing listens); yields its
    base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    if kind == "refused":
        listener.close()
    stop = threading.Event()
    held = []

    def serve(conn):
        try:
            conn.recv(65536)  # the request (headers; the body if small)
            if kind == "trickling":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                while not stop.wait(0.2):
                    conn.sendall(b" ")
            else:
                stop.wait()
        except OSError:  # the client gave up and closed: what the test wants
            pass
        finally:
            conn.close()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield base
    finally:
        stop.set()
        listener.close()


def timed(call):
    began = time.monotonic()
    result = call()
    return result, time.monotonic() - began


URLS = {"prometheus": "", "exporter": "/metrics", "slurm": "/slurmdb/v0.0.40/jobs"}


@pytest.mark.django_db
@pytest.mark.parametrize("server", ["silent", "trickling"])
@pytest.mark.parametrize("kind", ["prometheus", "exporter", "slurm"])
def test_a_hanging_source_times_out_is_marked_stale_and_backs_off(kind, server):
    gpu = make_gpu(node=make_node(hostname="dgx-01"), uuid="GPU-0001")
    with hanging_server(server) as base:
        source = TelemetrySource.objects.create(name=kind, kind=kind, url=base + URLS[kind], interval_seconds=60,
                                                timeout_seconds=TIMEOUT_S)
        result, seconds = timed(lambda: tasks.pull_telemetry_source(source.pk))
        assert seconds < BOUND_S
        assert f"{TIMEOUT_S} s" in result["error"]  # "timed out after 1 s", "the answer did not finish within 1 s"
        source.refresh_from_db()
        first_stale = source.stale_since
        assert source.is_stale and first_stale and source.consecutive_failures == 1
        assert source.last_error == result["error"] and source.last_success_at is None
        assert source.next_attempt_at - source.last_attempt_at == timedelta(seconds=backoff_seconds(1, 60))
        assert not source.is_due()  # the minute poll leaves it alone until then
        assert not GPUHourly.objects.filter(gpu=gpu).exists()  # no hours at all, not hours of zero

        _, seconds = timed(lambda: tasks.pull_telemetry_source(source.pk))  # the next try, still hanging
        assert seconds < BOUND_S
        source.refresh_from_db()
        assert source.consecutive_failures == 2 and source.stale_since == first_stale
        assert source.next_attempt_at - source.last_attempt_at == timedelta(seconds=backoff_seconds(2, 60)) == \
            timedelta(minutes=2)


@pytest.mark.django_db
@pytest.mark.parametrize(("server", "error"), [
    ("refused", "could not connect"), ("silent", f"timed out after {TIMEOUT_S} s"),
    ("trickling", f"the answer did not finish within {TIMEOUT_S} s"),
])
def test_a_webhook_receiver_that_is_down_or_hangs_is_retried_then_marked_failed(server, error, retries,
                                                                                  monkeypatch):
    monkeypatch.setattr(webhooks, "TIMEOUT_S", TIMEOUT_S)
    with hanging_server(server) as base:
        make_hook(base + "/hook")
        delivery = webhooks.emit("delivery.received", {"delivery": 1})[0]
        _, seconds = timed(lambda: send_until_done(delivery.pk))
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.FAILED and delivery.next_attempt_at is None
    assert retries == [30, 60, 120, 240, 480]  # the backoff Celery waits between tries
    attempts = list(delivery.attempt_log.all())
    assert len(attempts) == webhooks.MAX_ATTEMPTS and seconds < webhooks.MAX_ATTEMPTS * BOUND_S
    for attempt in attempts:
        assert attempt.status_code is None and attempt.error == error
        assert attempt.duration_ms < BOUND_S * 1000


@pytest.mark.django_db
def test_a_hanging_mail_server_does_not_hold_a_ticket_change(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_TIMEOUT = TIMEOUT_S
    requester = make_user("rita", None)
    ticket = Ticket.objects.create(title="GPU 3 fell off the bus", requester=requester)
    with hanging_server("silent") as base:
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", int(base.rsplit(":", 1)[1])
        sent, seconds = timed(lambda: notifications.notify(ticket, notifications.COMMENTED))
    assert sent == [] and seconds < BOUND_S  # logged and given up: the change it tells about stands


def test_the_default_mail_timeout_is_set():
    from django.conf import settings

    assert 0 < settings.EMAIL_TIMEOUT <= 30
    # Django's SMTP backend (smtplib) waits forever when EMAIL_TIMEOUT is None, its default.
    assert mail.get_connection("django.core.mail.backends.smtp.EmailBackend").timeout == settings.EMAIL_TIMEOUT


HTTP_CALLS = {"get", "post", "put", "patch", "delete", "head", "options", "request", "urlopen", "fetch"}


def test_every_outbound_http_call_has_a_timeout():
    """Every ``requests.*``, ``urlopen`` and ``portal.http.fetch`` call in the portal's code passes ``timeout``."""
    missing = []
    code = [path for app in ("portal", "inventory", "planning", "support") for path in (ROOT / app).rglob("*.py")]
    for path in sorted(code):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            outbound = (owner in {"requests", "http", "urllib"} and name in HTTP_CALLS) or name in {"urlopen", "fetch"}
            if outbound and not any(keyword.arg == "timeout" for keyword in node.keywords):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert missing == []
