"""Waiting for servers a test starts (gunicorn, Prometheus, the simulator) without failing on a loaded machine.

A server that is starting, or a machine busy with other tests, can take many seconds to answer the first request.
So the wait retries on any request error (refused, reset, read timed out) until a generous deadline, and each try
waits long enough for a slow first answer; it fails early only when the server's process has died."""

import time

import requests

START_DEADLINE_S = 180  # far above a normal start (about a second), for machines under load
TRY_TIMEOUT_S = 30


def wait_until_answering(url, process=None, log=None, seconds=START_DEADLINE_S):
    """Return the first answer of ``url``; fail if ``process`` (a ``Popen``) exits or ``seconds`` pass.
    ``log``: a callable returning the server's log for the failure message."""
    deadline = time.monotonic() + seconds
    while True:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {log() if log else ''}")
        try:
            return requests.get(url, timeout=TRY_TIMEOUT_S)
        except requests.RequestException as error:
            if time.monotonic() > deadline:
                message = f"{url} did not answer within {seconds} s ({error}): {log() if log else ''}"
                raise AssertionError(message) from error
            time.sleep(0.3)


def wait_until(condition, seconds=60, interval=0.1):
    """The first truthy value of ``condition()``; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(interval)
    raise AssertionError(f"timed out after {seconds} s waiting")
