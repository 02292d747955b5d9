"""The outbound policy (``portal.outbound``, issue 15): telemetry source and webhook URLs may not reach loopback,
private, link-local or metadata addresses, in any spelling, at save time nor at connection time (DNS rebinding);
redirects are not followed; stored errors are the portal's words, never the answer's text, and only managers
read them; a webhook is sent with no transaction open."""

import socket
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from inventory.telemetry.models import PullReport, TelemetrySource
from inventory.telemetry.pull import pull
from inventory.telemetry.records import SourceError
from planning.models import Webhook, WebhookAttempt, WebhookDelivery
from planning.webhooks import delivery as webhooks
from portal import http
from portal.roles import MANAGER, VIEWER
from tests.helpers.accounts import make_user, token_client
from tests.helpers.httpstub import stub_server
from tests.helpers.webhooks import RetryNow

SOURCES_API = "/api/inventory/telemetry-sources/"
WEBHOOKS_API = "/api/planning/webhooks/"
DELIVERIES_API = "/api/planning/webhook-deliveries/"
SECRET_BODY = "SECRET_KEY=abc"

# Every spelling of a host the policy refuses by default (the last ones whatever the setting says).
FORBIDDEN = [
    "127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "[::1]", "[::ffff:127.0.0.1]",
    "169.254.169.254", "metadata.google.internal", "10.0.0.5", "192.168.1.1", "172.16.0.1", "[fd00::1]", "0.0.0.0",
]
NEVER = ["169.254.169.254", "metadata.google.internal", "[fd00:ec2::254]", "100.100.100.200", "0.0.0.0", "[::]",
         "[::ffff:169.254.169.254]", "[::ffff:0:169.254.169.254]", "169.254.1.1", "[fe80::1]", "224.0.0.1"]
# IPv4 inside IPv6: compatible, NAT64, 6to4, mapped, translated (RFC 2765, issue 33); the local-use NAT64 prefix.
EMBEDDED = ["[::7f00:1]", "[64:ff9b::a9fe:a9fe]", "[2002:7f00:1::]", "[::ffff:10.0.0.5]", "[::ffff:0:127.0.0.1]",
            "[::ffff:0:a9fe:a9fe]", "[0:0:0:0:ffff:0:0a00:0005]", "[64:ff9b:1::808:808]"]
LOOPBACK = ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1"]


@pytest.fixture
def strict(settings, monkeypatch):
    """Production's default: no network allowed (the test run allows loopback, tests/conftest.py)."""
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return settings


@pytest.fixture
def stub():
    with stub_server() as server:
        yield server


def source_form(url, **extra):
    return {"name": "dcgm", "kind": "exporter", "url": url, "enabled": "on", "interval_seconds": 60,
            "timeout_seconds": 2, "backfill_hours": 1, **extra}


def webhook_form(url):
    return {"name": "erp", "url": url, "events": ["delivery.received"], "secret": "s3cret", "enabled": "on"}


def field_errors(response, field="url"):
    return " ".join(response.context["form"].errors.get(field, []))


# --- Refused on save --------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("host", FORBIDDEN)
def test_forbidden_hosts_are_refused_by_the_source_form_and_api(strict, manager_client, manager_api, host):
    response = manager_client.post(reverse("inventory:telemetrysource_add"), source_form(f"http://{host}:9400/metrics"))
    assert response.status_code == 200 and "refused by the outbound policy" in field_errors(response)
    assert "refused by the outbound policy" in response.content.decode()  # the form shows it again
    answer = manager_api.post(SOURCES_API, {"name": "dcgm", "kind": "exporter", "url": f"http://{host}/metrics"})
    assert answer.status_code == 400 and "refused by the outbound policy" in " ".join(answer.json()["url"])
    assert not TelemetrySource.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("host", FORBIDDEN)
def test_forbidden_hosts_are_refused_by_the_webhook_form_and_api(strict, manager_client, manager_api, host):
    response = manager_client.post("/planning/webhooks/add/", webhook_form(f"http://{host}/hook"))
    assert response.status_code == 200 and field_errors(response)  # Django's URL check or the policy's
    answer = manager_api.post(WEBHOOKS_API, {"name": "erp", "url": f"http://{host}/hook", "secret": "s",
                                             "events": ["delivery.received"]}, format="json")
    assert answer.status_code == 400 and answer.json()["url"]
    assert not Webhook.objects.exists()


@pytest.mark.django_db
def test_webhook_form_names_the_policy(strict, manager_client):
    response = manager_client.post("/planning/webhooks/add/", webhook_form("http://169.254.169.254/latest/"))
    assert field_errors(response) == "This host is refused by the outbound policy: 169.254.169.254 is a cloud " \
                                     "metadata service."


@pytest.mark.django_db
def test_credentials_in_the_url_are_refused(strict, manager_client, manager_api):
    response = manager_client.post(reverse("inventory:telemetrysource_add"),
                                   source_form("http://user:pass@prom.example.org/metrics"))
    assert "credentials" in field_errors(response) and "token" in field_errors(response)
    answer = manager_api.post(WEBHOOKS_API, {"name": "erp", "url": "https://user:pass@erp.example.org/hook",
                                             "secret": "s", "events": []}, format="json")
    assert answer.status_code == 400 and "secret" in answer.json()["url"][0]
    assert not TelemetrySource.objects.exists() and not Webhook.objects.exists()


@pytest.mark.django_db
def test_only_http_and_https(strict, manager_api):
    for url in ("ftp://prom.example.org/", "file:///etc/passwd", "gopher://prom.example.org/"):
        answer = manager_api.post(SOURCES_API, {"name": "x", "kind": "exporter", "url": url})
        assert answer.status_code == 400 and answer.json()["url"]


@pytest.mark.django_db
def test_a_name_that_resolves_to_a_forbidden_address_is_refused_on_save(strict, manager_api, monkeypatch):
    resolves_to(monkeypatch, "prom.internal.example", ["10.1.2.3"])
    answer = manager_api.post(SOURCES_API, {"name": "x", "kind": "exporter", "url": "http://prom.internal.example/"})
    assert answer.status_code == 400
    assert answer.json()["url"] == ["This host is refused by the outbound policy: prom.internal.example (10.1.2.3) "
                                     "is a private address (not in OUTBOUND_ALLOWED_NETWORKS)."]


@pytest.mark.django_db
@pytest.mark.parametrize("host", ["127.1", "10.0.0.5", "[fd00::1]", "192.168.1.1"])
def test_allowed_networks_let_private_hosts_in(settings, manager_api, host):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8", "10.0.0.0/8", "fd00::/8", "192.168.0.0/16"]
    answer = manager_api.post(SOURCES_API, {"name": "x", "kind": "exporter", "url": f"http://{host}:9400/metrics"})
    assert answer.status_code == 201, answer.json()


@pytest.mark.django_db
@pytest.mark.parametrize("host", NEVER)
def test_link_local_metadata_unspecified_and_multicast_are_never_allowed(settings, manager_api, host):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["0.0.0.0/0", "::/0"]  # everything, on paper
    answer = manager_api.post(SOURCES_API, {"name": "x", "kind": "exporter", "url": f"http://{host}/"})
    assert answer.status_code == 400 and "outbound policy" in answer.json()["url"][0]
    with pytest.raises(http.OutboundRefused):
        http.fetch("GET", f"http://{host}/", timeout=1)


# --- Refused at fetch -------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("host", FORBIDDEN + EMBEDDED)
def test_forbidden_hosts_are_refused_at_fetch_and_nothing_is_sent(strict, stub, host):
    stub.route("/metrics", (200, "text/plain", "DCGM_FI_DEV_GPU_UTIL 1\n"))
    port = stub.base.rsplit(":", 1)[1]
    with pytest.raises(http.OutboundRefused, match="refused by the outbound policy"):
        http.fetch("GET", f"http://{host}:{port}/metrics", timeout=1)
    assert stub.requests == []


@pytest.mark.django_db
def test_a_saved_source_that_points_at_metadata_fails_its_pull_with_the_policy_reason(strict):
    source = TelemetrySource.objects.create(name="old", kind="exporter", url="http://169.254.169.254/latest/meta-data")
    with pytest.raises(SourceError):
        pull(source)
    source.refresh_from_db()
    assert source.last_error == ("/latest/meta-data: refused by the outbound policy: 169.254.169.254 is a cloud "
                                 "metadata service")
    assert PullReport.objects.get(source=source).error == source.last_error


@pytest.mark.django_db
@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_in_any_spelling_is_reached_when_allowed(settings, stub, host):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    stub.route("/metrics", (200, "text/plain", "ok"))
    port = stub.base.rsplit(":", 1)[1]
    assert http.fetch("GET", f"http://{host}:{port}/metrics", timeout=2).text == "ok"


# --- DNS rebinding: checked again when connecting -----------------------------------------------------


def resolves_to(monkeypatch, name, *answers):
    """``name`` resolves to each list of ``answers`` in turn (the last one from then on); other names as usual."""
    real = socket.getaddrinfo
    queue = list(answers)

    def getaddrinfo(host, port, *args, **kwargs):
        if host != name:
            return real(host, port, *args, **kwargs)
        addresses = queue.pop(0) if len(queue) > 1 else queue[0]
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port or 0))
                for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.django_db
def test_dns_rebinding_is_refused_at_connection_and_nothing_is_sent(strict, stub, manager_api, monkeypatch):
    stub.route("/metrics", (200, "text/plain", "DCGM_FI_DEV_GPU_UTIL 1\n"))
    port = stub.base.rsplit(":", 1)[1]
    resolves_to(monkeypatch, "rebind.example", ["93.184.216.34"], ["127.0.0.1"])  # public at save, then loopback
    answer = manager_api.post(SOURCES_API, {"name": "rebind", "kind": "exporter",
                                            "url": f"http://rebind.example:{port}/metrics", "timeout_seconds": 2})
    assert answer.status_code == 201, answer.json()
    source = TelemetrySource.objects.get(name="rebind")
    with pytest.raises(SourceError):
        pull(source)
    source.refresh_from_db()
    assert source.last_error == ("/metrics: refused by the outbound policy: rebind.example (127.0.0.1) is loopback "
                                 "(not in OUTBOUND_ALLOWED_NETWORKS)")
    assert stub.requests == []  # refused before connecting


@pytest.mark.django_db
def test_a_name_connects_to_the_checked_address_and_keeps_its_host_header(settings, stub, monkeypatch):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    stub.route("/metrics", (200, "text/plain", "ok"))
    port = stub.base.rsplit(":", 1)[1]
    resolves_to(monkeypatch, "prom.example", ["127.0.0.1"])
    assert http.fetch("GET", f"http://prom.example:{port}/metrics", timeout=2).text == "ok"
    (_, _, headers), = stub.requests
    assert headers["Host"] == f"prom.example:{port}"


@pytest.mark.django_db
@pytest.mark.parametrize("address, why", [("::ffff:0:7f00:1", "is loopback"),
                                          ("::ffff:0:169.254.169.254", "is a cloud metadata service")])
def test_a_name_resolving_to_an_ipv4_translated_address_is_refused_at_connection(strict, stub, monkeypatch,
                                                                                 address, why):
    port = stub.base.rsplit(":", 1)[1]
    resolves_to(monkeypatch, "translated.example", [address])
    with pytest.raises(http.OutboundRefused, match=rf"translated.example \({address}\) {why}"):
        http.fetch("GET", f"http://translated.example:{port}/metrics", timeout=1)
    assert stub.requests == []


@pytest.mark.django_db
def test_a_name_with_one_forbidden_address_among_others_is_refused(strict, monkeypatch):
    resolves_to(monkeypatch, "mixed.example", ["93.184.216.34", "169.254.169.254"])
    with pytest.raises(http.OutboundRefused, match=r"mixed.example \(169.254.169.254\) is a cloud metadata"):
        http.fetch("GET", "http://mixed.example/", timeout=1)


# --- Redirects ----------------------------------------------------------------------------------------


class Server:
    """A local server whose every GET or POST is answered by ``answer(handler)``; counts the requests."""

    def __init__(self, answer):
        self.hits = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def respond(self):
                server.hits += 1
                answer(self)

            do_GET = do_POST = respond

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def redirect_to(status, target):
    def answer(handler):
        handler.send_response(status)
        handler.send_header("Location", target)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


@pytest.mark.django_db
@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed(stub, status):
    stub.route("/metrics", (200, "text/plain", "DCGM_FI_DEV_GPU_UTIL 1\n"))
    redirector = Server(redirect_to(status, stub.url("/metrics")))
    try:
        source = TelemetrySource.objects.create(name="r", kind="exporter", url=redirector.url + "/metrics",
                                                timeout_seconds=2)
        with pytest.raises(SourceError):
            pull(source)
        source.refresh_from_db()
        assert source.last_error == (f"/metrics: HTTP {status}: redirected to another location; set the URL to the "
                                     "final address")
        assert redirector.hits == 1 and stub.requests == []

        hook = Webhook.objects.create(name="erp", url=redirector.url + "/hook", secret="s", events=[])
        delivery = webhooks.emit("ping", {}, webhooks=[hook])[0]
        status_code, error = webhooks.attempt(delivery)
        assert status_code == status and "redirected to another location" in error and stub.requests == []
    finally:
        redirector.close()


# --- Errors: the portal's words, for managers only ------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("kind, path, answer", [
    ("exporter", "/metrics", (500, "text/plain", SECRET_BODY)),
    ("exporter", "/metrics", (200, "text/plain", SECRET_BODY)),
    ("prometheus", "/api/v1/query_range", (500, "text/plain", SECRET_BODY)),
    ("prometheus", "/api/v1/query_range",
     (200, "application/json", '{"status": "error", "errorType": "SECRET_KEY=abc", "error": "SECRET_KEY=abc"}')),
    ("prometheus", "/api/v1/query_range", (200, "text/html", f"<html>{SECRET_BODY}</html>")),
    ("slurm", "/jobs", (500, "application/json", '{"errors": [{"description": "SECRET_KEY=abc"}]}')),
    ("slurm", "/jobs", (200, "application/json", '{"errors": [{"description": "SECRET_KEY=abc"}]}')),
    ("slurm", "/jobs", (403, "text/plain", SECRET_BODY)),
])
def test_an_answers_text_is_never_stored_nor_shown(stub, manager_client, manager_api, kind, path, answer):
    stub.route(path, answer)
    stub.route("/api/v1/targets", (500, "text/plain", SECRET_BODY))
    base = "" if kind == "prometheus" else path
    source = TelemetrySource.objects.create(name="s", kind=kind, url=stub.url(base), timeout_seconds=2)
    with pytest.raises(SourceError) as raised:
        pull(source)
    assert SECRET_BODY not in str(raised.value)
    source.refresh_from_db()
    assert source.last_error and SECRET_BODY not in source.last_error
    assert SECRET_BODY not in PullReport.objects.get(source=source).error
    for url in (source.get_absolute_url(), reverse("inventory:telemetrysource_list"),
                reverse("inventory:utilization")):
        assert SECRET_BODY not in manager_client.get(url).content.decode(), url
    assert SECRET_BODY not in manager_api.get(f"{SOURCES_API}{source.pk}/").content.decode()


def secret_answer(handler):
    """An error answer with the secret in its body and even in the status line's reason phrase."""
    body = SECRET_BODY.encode()
    handler.send_response(500, SECRET_BODY)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.mark.django_db
def test_a_receivers_answer_is_never_stored_nor_shown(manager_client, manager_api, retries):
    server = Server(secret_answer)
    try:
        hook = Webhook.objects.create(name="erp", url=server.url + "/hook", secret="s", events=[])
        delivery = webhooks.emit("ping", {}, webhooks=[hook])[0]
        with pytest.raises(RetryNow):
            webhooks.send_webhook(delivery.pk)
    finally:
        server.close()
    delivery.refresh_from_db()
    attempt = delivery.attempt_log.get()
    assert delivery.last_error == attempt.error == "HTTP 500 Internal Server Error from the server"
    assert SECRET_BODY not in manager_client.get(hook.get_absolute_url()).content.decode()
    assert SECRET_BODY not in manager_api.get(f"{DELIVERIES_API}{delivery.pk}/").content.decode()


@pytest.fixture
def failing_source(db):
    now = timezone.now()
    source = TelemetrySource.objects.create(
        name="prom", kind="prometheus", url="http://prom.example.org:9090", last_error="could not connect",
        last_error_at=now, stale_since=now - timedelta(hours=3), consecutive_failures=4)
    PullReport.objects.create(source=source, started_at=now, finished_at=now, ok=False, error="could not connect",
                              window_start=now, window_end=now, counts={}, quality={}, examples={})
    return source


@pytest.mark.django_db
def test_a_viewer_sees_that_a_source_fails_but_not_why(client, viewer, failing_source):
    client.force_login(viewer)
    page = client.get(failing_source.get_absolute_url()).content.decode()
    assert "stale since" in page and "failed" in page and "could not connect" not in page
    listing = client.get(reverse("inventory:telemetrysource_list")).content.decode()
    assert "stale since" in listing and "could not connect" not in listing
    assert "could not connect" not in client.get(reverse("inventory:utilization")).content.decode()
    api = token_client(viewer)
    data = api.get(f"{SOURCES_API}{failing_source.pk}/").json()
    assert data["last_error"] is None and data["stale_since"] and data["consecutive_failures"] == 4
    stale = api.get("/api/inventory/utilization/").json()["stale_sources"][0]
    assert stale["name"] == "prom" and stale["last_error"] is None


@pytest.mark.django_db
def test_a_manager_sees_why_a_source_fails(manager_client, manager_api, failing_source):
    page = manager_client.get(failing_source.get_absolute_url()).content.decode()
    assert page.count("could not connect") >= 2  # the status and the last pull
    assert "could not connect" in manager_client.get(reverse("inventory:utilization")).content.decode()
    assert manager_api.get(f"{SOURCES_API}{failing_source.pk}/").json()["last_error"] == "could not connect"
    assert manager_api.get("/api/inventory/utilization/").json()["stale_sources"][0]["last_error"] == \
        "could not connect"


@pytest.mark.django_db
def test_webhook_errors_are_for_managers(viewer, manager_client, manager_api):
    hook = Webhook.objects.create(name="erp", url="https://erp.example.org/hook", secret="s", events=[])
    delivery = WebhookDelivery.objects.create(webhook=hook, event="ping", payload={}, attempts=1,
                                              last_error="could not connect")
    WebhookAttempt.objects.create(delivery=delivery, error="could not connect")
    client = Client()  # not the ``client`` fixture: manager_client is that one
    client.force_login(viewer)
    assert "could not connect" not in client.get(hook.get_absolute_url()).content.decode()
    data = token_client(viewer).get(f"{DELIVERIES_API}{delivery.pk}/").json()
    assert data["last_error"] is None and data["attempt_log"][0]["error"] is None and data["attempts"] == 1
    assert "could not connect" in manager_client.get(hook.get_absolute_url()).content.decode()
    data = manager_api.get(f"{DELIVERIES_API}{delivery.pk}/").json()
    assert data["last_error"] == data["attempt_log"][0]["error"] == "could not connect"


# --- Webhooks: no transaction while the receiver is waited on ----------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_webhook_is_sent_with_no_transaction_open(monkeypatch):
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            # Another connection writes the delivery row while the sender waits for this answer: on the old
            # code the row was locked (select_for_update) for the whole POST, and this update timed out.
            try:
                with connections["default"].cursor() as cursor:
                    cursor.execute("SET lock_timeout = '2s'")
                    seen["updated"] = WebhookDelivery.objects.filter(pk=seen["pk"]).update(payload={"touched": 1})
                    # A second task for the same delivery, while this one is sending: it sends nothing.
                    webhooks.send_webhook(seen["pk"])
            except Exception as error:  # noqa: BLE001 - reported by the test below
                seen["error"] = repr(error)
            finally:
                connections["default"].close()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    posts = []
    real_fetch = http.fetch

    def fetch(*args, **kwargs):
        posts.append(connection.in_atomic_block)
        return real_fetch(*args, **kwargs)

    monkeypatch.setattr(webhooks.http, "fetch", fetch)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hook = Webhook.objects.create(name="erp", url=f"http://127.0.0.1:{server.server_port}/hook", secret="s",
                                      events=[])
        delivery = webhooks.emit("ping", {}, webhooks=[hook])[0]
        seen["pk"] = delivery.pk
        webhooks.send_webhook(delivery.pk)
    finally:
        server.shutdown()
        server.server_close()
    assert "error" not in seen, seen.get("error")
    assert posts == [False]  # one POST, with no transaction open; the second task sent nothing
    assert seen["updated"] == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.sending_until) == ("sent", 1, None)
    assert delivery.payload == {"touched": 1}


@pytest.mark.django_db
def test_https_is_checked_at_connection_too(strict, monkeypatch):
    resolves_to(monkeypatch, "rebind.example", ["127.0.0.1"])
    with pytest.raises(http.OutboundRefused, match=r"rebind.example \(127.0.0.1\) is loopback"):
        http.fetch("GET", "https://rebind.example/", timeout=1)


@pytest.fixture
def tls_server(tmp_path):
    """An HTTPS server on 127.0.0.1 whose self-signed certificate names ``prom.example`` (made with openssl)."""
    import shutil
    import ssl
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=prom.example", "-addext", "subjectAltName=DNS:prom.example", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    seen = []

    def answer(handler):
        seen.append(handler.headers["Host"])
        handler.send_response(200)
        handler.send_header("Content-Length", "2")
        handler.end_headers()
        handler.wfile.write(b"ok")

    server = Server(answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.server.socket = context.wrap_socket(server.server.socket, server_side=True)
    yield server, str(cert), seen
    server.close()


@pytest.mark.django_db
def test_tls_verifies_the_certificate_for_the_name_not_the_checked_address(settings, monkeypatch, tls_server):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    server, cert, seen = tls_server
    port = server.server.server_port
    resolves_to(monkeypatch, "prom.example", ["127.0.0.1"])
    assert http.fetch("GET", f"https://prom.example:{port}/", timeout=2, verify=cert).text == "ok"
    assert seen == [f"prom.example:{port}"]
    with pytest.raises(requests.exceptions.SSLError):  # the certificate does not name the address
        http.fetch("GET", f"https://127.0.0.1:{port}/", timeout=2, verify=cert)


@pytest.mark.django_db
def test_parse_warnings_quoting_the_answer_are_for_managers(stub):
    stub.route("/jobs", (200, "application/json", '{"jobs": [], "errors": [{"description": "SECRET_KEY=abc"}]}'))
    source = TelemetrySource.objects.create(name="s", kind="slurm", url=stub.url("/jobs"), timeout_seconds=2)
    pull(source)
    viewer_client, manager_client = Client(), Client()
    viewer_client.force_login(make_user("vic", VIEWER))
    manager_client.force_login(make_user("mia", MANAGER))
    page = viewer_client.get(source.get_absolute_url()).content.decode()
    assert "Parse warnings" in page and SECRET_BODY not in page  # counted, not quoted
    assert SECRET_BODY in manager_client.get(source.get_absolute_url()).content.decode()
