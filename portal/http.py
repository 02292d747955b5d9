"""Outbound HTTP with a deadline for the whole answer.

``requests``' ``timeout`` bounds the connect and each socket read, not the answer: a server that sends its
headers and then one byte every few seconds keeps a plain ``requests.get`` for as long as it likes. ``fetch``
reads the body itself, a socket read at a time, and gives up once ``timeout`` has passed since the request
started, so a call ends within about twice its timeout (the last read may wait one timeout more).

The answer is also bounded in size: once its (decompressed) body passes ``OUTBOUND_MAX_ANSWER_BYTES``
(settings; 50 MB unless set) reading stops with ``AnswerTooLarge``, so a huge or endless answer, or a small
gzip bomb, cannot fill the worker's memory.

Every call obeys the outbound policy (``portal.outbound``): the host is checked before the request and every
address again when it is connected to; through a forwarding proxy, the name is resolved and its addresses checked
before anything goes to the proxy (a name that does not resolve is refused unless allowed by name). Redirects
are not followed: a 3xx raises ``Redirected``, so a receiver cannot send the portal on to a host the policy would
refuse.

``describe`` turns a failure into the short reason the portal stores and shows: written by the portal, never
text from the answer (a hostile server could put anything there) nor the URL (it may hold credentials).
"""

import time
from http import HTTPStatus
from urllib.parse import urlsplit

import requests
from django.conf import settings
from urllib3.exceptions import DecodeError, NameResolutionError, NewConnectionError, ProtocolError, ReadTimeoutError

from . import outbound

CHUNK = 64 * 1024


class AnswerTimeout(requests.Timeout):
    """The server answered, but did not finish its answer within the timeout."""


class AnswerTooLarge(requests.RequestException):
    """The answer's body is larger than the limit."""


class OutboundRefused(requests.RequestException):
    """The outbound policy refuses the host or an address it resolves to; nothing was sent."""


class Redirected(requests.RequestException):
    """The server answered with a redirect, which is not followed."""

    def __init__(self, status_code):
        super().__init__(f"HTTP {status_code}: redirected to another location; set the URL to the final address")
        self.status_code = status_code


def session():
    """A ``requests`` session whose connections obey the outbound policy."""
    policy_session = requests.Session()
    for prefix in ("http://", "https://"):
        policy_session.mount(prefix, outbound.PolicyAdapter())
    return policy_session


def fetch(method, url, *, timeout, max_bytes=None, **kwargs):
    """``requests.request(method, url, timeout=timeout, **kwargs)`` whose whole answer, body included, must
    arrive within ``timeout`` seconds and hold at most ``max_bytes`` (default ``OUTBOUND_MAX_ANSWER_BYTES``).
    Raises ``requests`` exceptions (``AnswerTimeout`` is a ``Timeout``, ``AnswerTooLarge`` a
    ``RequestException``; ``OutboundRefused`` when the policy refuses the host, ``Redirected`` on a 3xx)."""
    deadline = time.monotonic() + timeout
    max_bytes = max_bytes or settings.OUTBOUND_MAX_ANSWER_BYTES
    with session() as policy_session:
        try:
            check_url_host(url)
            response = policy_session.request(method, url, timeout=timeout, stream=True, allow_redirects=False,
                                              **kwargs)
        except outbound.PolicyError as error:
            raise OutboundRefused(str(error)) from None
        return read_answer(response, timeout, deadline, max_bytes)


def check_url_host(url):
    """Before any request: literal addresses (in any form) and metadata names. Names are checked by the policy's
    adapter: when it connects directly, or before the request when it goes through a proxy (``PolicyAdapter``)."""
    parts = urlsplit(url)
    if parts.hostname:
        outbound.check_host(parts.hostname, None, resolve_names=False)


def read_answer(response, timeout, deadline, max_bytes):
    if response.is_redirect or 300 <= response.status_code < 400:
        response.close()
        raise Redirected(response.status_code)
    chunks, size = [], 0
    try:
        while chunk := response.raw.read1(CHUNK, decode_content=True):  # what one socket read brings
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise AnswerTooLarge(f"the answer is larger than {max_bytes:,} bytes")
            if time.monotonic() > deadline:
                raise AnswerTimeout(f"the answer did not finish within {timeout} s")
    except ReadTimeoutError as error:
        raise requests.ReadTimeout(error) from error
    except ProtocolError as error:
        raise requests.ConnectionError(error) from error
    except DecodeError as error:
        raise requests.exceptions.ContentDecodingError(error) from error
    finally:
        response.close()
    response._content = b"".join(chunks)  # as requests does when it reads the body: .text and .json() use it
    return response


def status_error(status_code):
    """An HTTP error answer in the portal's words (the status line's reason phrase comes from the server)."""
    try:
        return f"HTTP {status_code} {HTTPStatus(status_code).phrase} from the server"
    except ValueError:
        return f"HTTP {status_code} from the server"


def describe(error, timeout):
    """The short reason for a failed ``fetch`` (a ``requests`` exception): no remote text, no URL. A port
    that refuses and one that drops the connection attempt read the same ("could not connect")."""
    if isinstance(error, OutboundRefused | Redirected | AnswerTooLarge | AnswerTimeout):
        return str(error)
    if isinstance(error, requests.ConnectTimeout):
        return "could not connect"
    if isinstance(error, requests.Timeout):
        return f"timed out after {timeout} s"
    if isinstance(error, requests.exceptions.SSLError):
        return "the TLS handshake failed (certificate not trusted, or not a TLS server)"
    if isinstance(error, requests.ConnectionError):
        causes = _causes(error)
        if any(isinstance(cause, NameResolutionError) for cause in causes):
            return "could not resolve the host name"
        if any(isinstance(cause, NewConnectionError) for cause in causes):
            return "could not connect"
        return "the connection broke off before the answer was complete"
    if isinstance(error, requests.exceptions.ContentDecodingError | requests.exceptions.ChunkedEncodingError):
        return "the answer could not be read (bad encoding, or cut off)"
    if isinstance(error, requests.exceptions.InvalidURL | requests.exceptions.MissingSchema
                  | requests.exceptions.InvalidSchema):
        return "the URL is not valid"
    return f"the request failed ({type(error).__name__})"


def _causes(error):
    """The exceptions an error wraps (``__cause__``, ``__context__``, arguments, urllib3's ``reason``)."""
    seen, todo = [], [error]
    while todo and len(seen) < 20:
        current = todo.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [current.__cause__, current.__context__, getattr(current, "reason", None)]
        todo += [arg for arg in getattr(current, "args", ()) if isinstance(arg, BaseException)]
    return seen
