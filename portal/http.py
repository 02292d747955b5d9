"""Outbound HTTP with a deadline for the whole answer.

``requests``' ``timeout`` bounds the connect and each socket read, not the answer: a server that sends its
headers and then one byte every few seconds keeps a plain ``requests.get`` for as long as it likes. ``fetch``
reads the body itself, a socket read at a time, and gives up once ``timeout`` has passed since the request
started, so a call ends within about twice its timeout (the last read may wait one timeout more).

The answer is also bounded in size: once its (decompressed) body passes ``OUTBOUND_MAX_ANSWER_BYTES``
(settings; 50 MB unless set) reading stops with ``AnswerTooLarge``, so a huge or endless answer, or a small
gzip bomb, cannot fill the worker's memory.
"""

import time

import requests
from django.conf import settings
from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError

CHUNK = 64 * 1024


class AnswerTimeout(requests.Timeout):
    """The server answered, but did not finish its answer within the timeout."""


class AnswerTooLarge(requests.RequestException):
    """The answer's body is larger than the limit."""


def fetch(method, url, *, timeout, max_bytes=None, **kwargs):
    """``requests.request(method, url, timeout=timeout, **kwargs)`` whose whole answer, body included, must
    arrive within ``timeout`` seconds and hold at most ``max_bytes`` (default ``OUTBOUND_MAX_ANSWER_BYTES``).
    Raises ``requests`` exceptions (``AnswerTimeout`` is a ``Timeout``, ``AnswerTooLarge`` a
    ``RequestException``)."""
    deadline = time.monotonic() + timeout
    max_bytes = max_bytes or settings.OUTBOUND_MAX_ANSWER_BYTES
    response = requests.request(method, url, timeout=timeout, stream=True, **kwargs)
    chunks, size = [], 0
    try:
        while chunk := response.raw.read1(CHUNK, decode_content=True):  # what one socket read brings
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise AnswerTooLarge(f"{url}: the answer is larger than {max_bytes:,} bytes")
            if time.monotonic() > deadline:
                raise AnswerTimeout(f"{url}: the answer did not finish within {timeout} s")
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
