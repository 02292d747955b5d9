"""Webhooks in tests: one subscribed to events, a delivery sent to the end with its retries run at once (the
``retries`` fixture of conftest.py raises ``RetryNow`` in place of Celery's Retry), a local receiver and the check
of a signature as a receiver makes it."""

import hashlib
import hmac
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from planning.models import Webhook
from planning.webhooks import delivery as webhooks

SECRET = "s3cret"


class RetryNow(Exception):
    """Raised by the ``retries`` fixture in place of Celery's Retry."""


def send_until_done(pk):
    while True:
        try:
            webhooks.send_webhook(pk)
            return
        except RetryNow:
            continue


def make_hook(url, events=("delivery.received",), **kw):
    return Webhook.objects.create(name=f"hook-{Webhook.objects.count()}", url=url, secret=SECRET, events=list(events),
                                  **kw)


class Receiver:
    """A local HTTP server answering with the queued status codes (then 200), recording each request as
    ``(headers, body)``; ``close()`` when done."""

    def __init__(self, statuses=()):
        self.statuses = list(statuses)
        self.requests = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                code = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"ok" if code < 300 else b"boom")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def signature_ok(headers, body, secret=SECRET):
    """Whether ``X-Portal-Signature`` is the HMAC-SHA256 of ``body`` with ``secret``, as a receiver checks it."""
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers.get("X-Portal-Signature", ""), expected)
