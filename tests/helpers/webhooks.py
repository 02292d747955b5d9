"""Webhooks in tests: one subscribed to events, and a delivery sent to the end with its retries run at once (the
``retries`` fixture of conftest.py raises ``RetryNow`` in place of Celery's Retry)."""

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
