"""Outbound HTTP with a deadline for the whole answer.

``requests``' ``timeout`` bounds the connect and each socket read, not the answer: a server that sends its
headers and then one byte every few seconds keeps a plain ``requests.get`` for as long as it likes. ``fetch``
reads the body itself, a socket read at a time, and gives up once ``timeout`` has passed since the request
started, so a call ends within about twice its timeout (the last read may wait one timeout more).
"""

import time

import requests
from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError

CHUNK = 64 * 1024


class AnswerTimeout(requests.Timeout):
    """The server answered, but did not finish its answer within the timeout."""


def fetch(method, url, *, timeout, **kwargs):
    """``requests.request(method, url, timeout=timeout, **kwargs)`` whose whole answer, body included, must
    arrive within ``timeout`` seconds. Raises ``requests`` exceptions (``AnswerTimeout`` is a ``Timeout``)."""
    deadline = time.monotonic() + timeout
    response = requests.request(method, url, timeout=timeout, stream=True, **kwargs)
    chunks = []
    try:
        while chunk := response.raw.read1(CHUNK, decode_content=True):  # what one socket read brings
            chunks.append(chunk)
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
