"""The outbound policy through a forwarding proxy (issue 33): with ``HTTP_PROXY`` set for the worker, the proxy
resolves the name and connects, so the portal resolves and checks the name before anything is sent to it.

A real proxy (``tinyproxy``, tests/helpers/proxyserver.py) on loopback, with a stub server behind it: a name that
does not resolve (``169.254.169.254.nip.io`` where the worker has no DNS for it, any ``.invalid``) and a name that
resolves to a forbidden address are refused, and the proxy's log shows that nothing reached it; an allowed name
goes through; ``OUTBOUND_PROXY_RESOLVES=1`` lets the names of ``OUTBOUND_PROXY_ALLOWED_NAMES`` (and only those) go
to the proxy unresolved. A telemetry pull refused this way is stored as a failed pull with the portal's reason.

"The proxy resolves a name the portal cannot" is played with ``localhost``, made unresolvable for this process
only (tinyproxy, another process, still resolves it to the stub server's 127.0.0.1)."""

import socket

import pytest

from inventory.telemetry.models import PullReport, TelemetrySource
from inventory.telemetry.pull import pull
from inventory.telemetry.records import SourceError
from portal import http
from tests.helpers.httpstub import stub_server
from tests.helpers.proxyserver import tinyproxy

pytestmark = pytest.mark.django_db

METRICS = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1"} 50\n'
NOT_RESOLVED = "refused by the outbound policy: {} does not resolve, and only names in OUTBOUND_PROXY_ALLOWED_NAMES " \
               "may be resolved by the proxy"


@pytest.fixture(scope="module")
def proxy():
    with tinyproxy() as server:
        yield server


@pytest.fixture
def via_proxy(proxy, settings, monkeypatch):
    """The worker's environment sends every request through the proxy; no network allowed (production's
    default), no name resolved by the proxy."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    settings.OUTBOUND_PROXY_RESOLVES = False
    settings.OUTBOUND_PROXY_ALLOWED_NAMES = []
    return proxy


@pytest.fixture
def stub():
    with stub_server() as server:
        server.route("/metrics", (200, "text/plain", METRICS))
        yield server


@pytest.fixture
def unresolvable_here(monkeypatch):
    """``localhost`` does not resolve in this process (the worker has no DNS for a name its proxy resolves)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if str(host).rstrip(".").lower() == "localhost":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def new_requests(proxy, before):
    return proxy.requests()[len(before):]


def port_of(stub):
    return stub.base.rsplit(":", 1)[1]


@pytest.mark.parametrize("host", ["169.254.169.254.nip.io", "metadata-alias.invalid"])
def test_a_name_that_does_not_resolve_is_refused_before_anything_reaches_the_proxy(via_proxy, host):
    before = via_proxy.requests()
    with pytest.raises(http.OutboundRefused, match="refused by the outbound policy"):
        http.fetch("GET", f"http://{host}/latest/meta-data/", timeout=2)
    with pytest.raises(http.OutboundRefused, match="refused by the outbound policy"):
        http.fetch("GET", f"https://{host}/latest/meta-data/", timeout=2)  # CONNECT is not sent either
    assert new_requests(via_proxy, before) == []


def test_a_name_the_proxy_would_resolve_is_refused_and_the_server_behind_gets_nothing(via_proxy, stub,
                                                                                      unresolvable_here):
    before = via_proxy.requests()
    with pytest.raises(http.OutboundRefused) as refused:
        http.fetch("GET", f"http://localhost:{port_of(stub)}/metrics", timeout=2)
    assert str(refused.value) == NOT_RESOLVED.format("localhost")
    assert new_requests(via_proxy, before) == [] and stub.requests == []


@pytest.mark.parametrize("address, why", [
    ("127.0.0.1", "is loopback"), ("169.254.169.254", "is a cloud metadata service"),
    ("10.1.2.3", "is a private address"), ("::ffff:0:127.0.0.1", "is loopback"),
    ("::ffff:0:a9fe:a9fe", "is a cloud metadata service"), ("64:ff9b:1::a00:5", "is a local-use NAT64 address"),
])
def test_a_name_that_resolves_to_a_forbidden_address_is_refused(via_proxy, stub, monkeypatch, address, why):
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host != "prom.example":
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    before = via_proxy.requests()
    with pytest.raises(http.OutboundRefused, match=rf"prom.example \({address}\) {why}"):
        http.fetch("GET", f"http://prom.example:{port_of(stub)}/metrics", timeout=2)
    assert new_requests(via_proxy, before) == [] and stub.requests == []


def test_localhost_is_refused_through_the_proxy_unless_its_addresses_are_allowed(via_proxy, stub, settings):
    url = f"http://localhost:{port_of(stub)}/metrics"
    before = via_proxy.requests()
    with pytest.raises(http.OutboundRefused, match=r"localhost \(127.0.0.1\) is loopback"):
        http.fetch("GET", url, timeout=2)
    assert new_requests(via_proxy, before) == [] and stub.requests == []

    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32", "::1/128"]
    assert http.fetch("GET", url, timeout=5).text == METRICS
    assert new_requests(via_proxy, before) == [f"GET {url} HTTP/1.1"]  # through the proxy, not around it
    assert [path for path, _, _ in stub.requests] == ["/metrics"]


def test_a_host_in_no_proxy_goes_direct_and_is_checked_when_connecting(via_proxy, stub, settings, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "localhost")
    url = f"http://localhost:{port_of(stub)}/metrics"
    before = via_proxy.requests()
    with pytest.raises(http.OutboundRefused, match=r"localhost \(127.0.0.1\) is loopback"):
        http.fetch("GET", url, timeout=2)
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32", "::1/128"]
    assert http.fetch("GET", url, timeout=5).text == METRICS
    assert new_requests(via_proxy, before) == []  # not through the proxy


def test_literal_addresses_are_refused_through_the_proxy(via_proxy):
    before = via_proxy.requests()
    for host in ("169.254.169.254", "127.1", "[::ffff:0:127.0.0.1]", "[::ffff:169.254.169.254]"):
        with pytest.raises(http.OutboundRefused):
            http.fetch("GET", f"http://{host}/", timeout=2)
    assert new_requests(via_proxy, before) == []


def test_proxy_resolves_lets_only_the_allowed_names_go_unresolved(via_proxy, stub, settings, unresolvable_here):
    url = f"http://localhost:{port_of(stub)}/metrics"
    settings.OUTBOUND_PROXY_ALLOWED_NAMES = ["localhost", "*.corp.invalid"]
    before = via_proxy.requests()
    with pytest.raises(http.OutboundRefused):  # the allow list alone is not enough
        http.fetch("GET", url, timeout=2)
    assert new_requests(via_proxy, before) == []

    settings.OUTBOUND_PROXY_RESOLVES = True
    assert http.fetch("GET", url, timeout=5).text == METRICS  # the proxy resolved it
    # A name below an allowed domain goes to the proxy too (which cannot resolve it either, and says so).
    answer = http.fetch("GET", "http://prom.site1.corp.invalid/metrics", timeout=5)
    assert answer.status_code >= 500
    assert new_requests(via_proxy, before) == [f"GET {url} HTTP/1.1",
                                               "GET http://prom.site1.corp.invalid/metrics HTTP/1.1"]
    # Any other unresolvable name is still refused, the domain itself and look-alikes included.
    for host in ("metadata-alias.invalid", "corp.invalid", "evilcorp.invalid", "corp.invalid.evil.invalid"):
        with pytest.raises(http.OutboundRefused, match=NOT_RESOLVED.format(host).replace(".", r"\.")):
            http.fetch("GET", f"http://{host}/", timeout=2)
    assert len(new_requests(via_proxy, before)) == 2


def test_a_pull_through_the_proxy_to_a_refused_host_is_a_failed_pull_with_the_portals_reason(via_proxy, stub,
                                                                                              unresolvable_here):
    # Before the fix the proxy resolved the name, the stub answered, and the pull was stored as a success.
    source = TelemetrySource.objects.create(name="alias", kind="exporter", timeout_seconds=2,
                                            url=f"http://localhost:{port_of(stub)}/metrics")
    before = via_proxy.requests()
    with pytest.raises(SourceError):
        pull(source)
    source.refresh_from_db()
    assert source.last_error == "/metrics: " + NOT_RESOLVED.format("localhost")
    report = PullReport.objects.get(source=source)
    assert not report.ok and report.error == source.last_error
    assert new_requests(via_proxy, before) == [] and stub.requests == []
