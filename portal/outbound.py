"""The outbound-request policy: which hosts the portal may call (telemetry sources, webhook receivers).

A URL that users type makes the portal's workers open connections from inside the network, so the policy
decides by the address actually connected to, not by the name:

- never: link-local (169.254.0.0/16, fe80::/10; cloud metadata lives there), the metadata services'
  names and addresses (``metadata.google.internal``, 169.254.169.254, fd00:ec2::254, Alibaba's
  100.100.100.200), unspecified (0.0.0.0, ::) and multicast addresses;
- only inside ``OUTBOUND_ALLOWED_NETWORKS`` (settings: CIDRs, default none): loopback, private (10/8,
  172.16/12, 192.168/16, fc00::/7), shared CGNAT (100.64/10) and every other address that is not public;
- any other (public) address, on any port.

IPv6 addresses that carry an IPv4 address (mapped ``::ffff:127.0.0.1``, translated ``::ffff:0:127.0.0.1``,
NAT64, 6to4) are judged as that address; the local-use NAT64 prefix (64:ff9b:1::/48, where the IPv4 address may
sit in several places) only inside ``OUTBOUND_ALLOWED_NETWORKS``.

``check_url`` is for saving a URL (forms, serializers): the scheme, no credentials, and the host, whether a
literal address in any form the resolver accepts (``127.1``, ``2130706433``, ``0x7f000001``) or a name,
resolved now. Names can be re-pointed after the check (DNS rebinding), so ``PolicyAdapter`` (mounted by
``portal.http.fetch``) resolves the host itself when it connects, checks every address, and connects to a
checked one; TLS still verifies the certificate for the name.

Through a forwarding proxy (``HTTP_PROXY`` / ``HTTPS_PROXY`` in the environment) the proxy resolves and connects,
so ``PolicyAdapter`` resolves the name before the request and checks every address; a name that does not resolve
here is refused (the proxy could resolve it to anything, ``169.254.169.254.nip.io`` say), unless
``OUTBOUND_PROXY_RESOLVES`` is on and the name is in ``OUTBOUND_PROXY_ALLOWED_NAMES``: a name only the proxy can
resolve is trusted by name, explicitly. The proxy itself is the operator's choice and is not checked.
"""

import ipaddress
import socket
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings
from requests.adapters import HTTPAdapter
from requests.utils import select_proxy
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection

METADATA_NAMES = {"metadata", "metadata.google.internal", "metadata.goog", "instance-data",
                  "instance-data.ec2.internal"}
METADATA_ADDRESSES = {ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")}
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765's ::ffff:0:a.b.c.d


class PolicyError(Exception):
    """The outbound policy refuses this host or address. Deliberately not an ``OSError``: urllib3 would
    wrap one as a connection failure and retry; this one goes straight up to ``portal.http.fetch``."""

    def __init__(self, host, why):
        super().__init__(f"refused by the outbound policy: {host} {why}")


@lru_cache(maxsize=8)
def _networks(cidrs):
    return tuple(ipaddress.ip_network(cidr.strip(), strict=False) for cidr in cidrs if cidr.strip())


def allowed_networks():
    return _networks(tuple(settings.OUTBOUND_ALLOWED_NETWORKS))


def refusal(address):
    """Why the policy refuses to connect to ``address`` (a string or ``ipaddress`` object), or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    if ip.version == 6 and ip in NAT64_LOCAL and not in_allowed_networks(ip):
        return "is a local-use NAT64 address (not in OUTBOUND_ALLOWED_NETWORKS)"
    ip = embedded_ipv4(ip) or ip
    if ip in METADATA_ADDRESSES:
        return "is a cloud metadata service"
    if ip.is_link_local:
        return "is link-local"
    if ip.is_unspecified:
        return "is an unspecified address"
    if ip.is_multicast:
        return "is a multicast address"
    if in_allowed_networks(ip):
        return None
    if ip.is_loopback:
        return "is loopback (not in OUTBOUND_ALLOWED_NETWORKS)"
    if ip.version == 4 and ip in CGNAT:
        return "is shared (CGNAT) address space (not in OUTBOUND_ALLOWED_NETWORKS)"
    if ip.is_private:
        return "is a private address (not in OUTBOUND_ALLOWED_NETWORKS)"
    if not ip.is_global:
        return "is not a public address (not in OUTBOUND_ALLOWED_NETWORKS)"
    return None


def in_allowed_networks(ip):
    return any(ip in network for network in allowed_networks() if network.version == ip.version)


def embedded_ipv4(ip):
    """The IPv4 address an IPv6 address carries (mapped ``::ffff:a.b.c.d``, translated ``::ffff:0:a.b.c.d``,
    compatible ``::a.b.c.d``, NAT64 ``64:ff9b::a.b.c.d``, 6to4 ``2002:aabb:ccdd::``), which is where it leads;
    None for any other."""
    if ip.version != 6 or ip.is_loopback or ip.is_unspecified:
        return None
    if ip.ipv4_mapped or ip.sixtofour:
        return ip.ipv4_mapped or ip.sixtofour
    if ip in NAT64 or ip in IPV4_COMPATIBLE or ip in IPV4_TRANSLATED:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def literal_address(host):
    """The address a host written as an IP literal stands for, in any form the resolver accepts (``127.1``,
    ``2130706433``, ``0x7f000001``, ``0177.0.0.1``); None for a name."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))  # the classic forms getaddrinfo also takes
    except (OSError, ValueError):
        return None


def is_metadata_name(host):
    return host.rstrip(".").lower() in METADATA_NAMES


def resolve(host, port):
    """Every address ``host`` resolves to (``socket.gaierror`` when it does not)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def check_addresses(host, addresses):
    for address in addresses:
        why = refusal(address)
        if why:
            raise PolicyError(host if host == address else f"{host} ({address})", why)


def checked_without_resolving(host):
    """Refuses a metadata name, and checks a literal address (in any form); True when that settled it."""
    if is_metadata_name(host):
        raise PolicyError(host, "is a cloud metadata service")
    literal = literal_address(host)
    if literal is not None:
        check_addresses(host, [str(literal)])
    return literal is not None


def check_host(host, port, resolve_names=True):
    """Raises ``PolicyError`` if the policy refuses ``host``. A name is refused by name (metadata) or by
    any address it resolves to now; a name that does not resolve passes (the connection checks again)."""
    if checked_without_resolving(host):
        return
    if resolve_names:
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError):
            return
        check_addresses(host, addresses)


def proxy_may_resolve(host):
    """Whether a name that does not resolve here may go to the proxy: ``OUTBOUND_PROXY_RESOLVES`` on and the name in
    ``OUTBOUND_PROXY_ALLOWED_NAMES`` (exact names, or ``*.suffix`` for the names below a domain)."""
    if not settings.OUTBOUND_PROXY_RESOLVES:
        return False
    name = host.rstrip(".").lower()
    for pattern in settings.OUTBOUND_PROXY_ALLOWED_NAMES:
        pattern = pattern.rstrip(".").lower()
        if name == pattern or (pattern.startswith("*.") and name.endswith(pattern[1:])):
            return True
    return False


def check_proxied_host(host, port):
    """Raises ``PolicyError`` unless a request for ``host`` may go to a forwarding proxy, which will resolve the
    name and connect on its own: every address the name resolves to here must be allowed, and a name that does
    not resolve here is refused unless ``proxy_may_resolve`` says otherwise."""
    if checked_without_resolving(host):
        return
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        if proxy_may_resolve(host):
            return
        raise PolicyError(host, "does not resolve, and only names in OUTBOUND_PROXY_ALLOWED_NAMES may be resolved "
                                "by the proxy") from None
    check_addresses(host, addresses)


def url_problem(url, credentials_hint):
    """What is wrong with ``url`` as an outbound target, in words for a field error; "" when nothing."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "Enter an http:// or https:// URL with a host name."
    if parts.username is not None or parts.password is not None:
        return f"Do not put credentials in the URL; {credentials_hint}"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "The port in this URL is not a number between 0 and 65535."
    try:
        check_host(parts.hostname, port)
    except PolicyError as error:
        return f"This host is {error}."
    return ""


# --- Connection time: resolve, check, connect to the checked address --------------------------------


def connect_checked(conn):
    """``_new_conn`` for the policy's connections: the resolution urllib3 would do, but every address is
    checked before any is connected to (so a name re-pointed after it was saved cannot reach a refused one)."""
    host, port = conn._dns_host, conn.port
    if is_metadata_name(host):
        raise PolicyError(host, "is a cloud metadata service")
    try:
        addresses = resolve(host, port)
    except socket.gaierror as error:
        raise NameResolutionError(conn.host, conn, error) from error
    check_addresses(host, addresses)
    last = None
    for address in addresses:
        try:
            return connection.create_connection((address, port), conn.timeout, source_address=conn.source_address,
                                                socket_options=conn.socket_options)
        except TimeoutError as error:
            raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out.") from error
        except OSError as error:
            last = error
    raise NewConnectionError(conn, f"Failed to establish a new connection: {last}")


class PolicyHTTPConnection(HTTPConnection):
    def _new_conn(self):
        return connect_checked(self)


class PolicyHTTPSConnection(HTTPSConnection):
    def _new_conn(self):  # TLS is set up on this socket by connect(), for the name (SNI, certificate check)
        return connect_checked(self)


class PolicyHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = PolicyHTTPConnection


class PolicyHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = PolicyHTTPSConnection


class PolicyAdapter(HTTPAdapter):
    """A ``requests`` adapter that obeys the policy: direct connections check every address when they connect;
    a request that goes through a proxy (the one ``requests`` picked, from the environment or the call, after
    ``NO_PROXY``) has its host checked here, before anything is sent to the proxy."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": PolicyHTTPConnectionPool,
                                                   "https": PolicyHTTPSConnectionPool}

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        if select_proxy(request.url, proxies):
            parts = urlsplit(request.url)
            check_proxied_host(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        return super().send(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
