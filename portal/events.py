"""Business events (``plan.approved``, ``delivery.received``, ``contract.expiring``): an app ``emit``s one and
whoever subscribed hears it (planning's outgoing webhooks, ``planning.webhooks.delivery``). The emitter imports no
subscriber, and a subscriber's failure never reaches the request or task that emitted the event."""

import logging

log = logging.getLogger(__name__)

_subscribers = []


def subscribe(subscriber):
    """``subscriber(event, payload)``; subscribing the same function twice is harmless."""
    if subscriber not in _subscribers:
        _subscribers.append(subscriber)
    return subscriber


def emit(event, payload):
    """Tell every subscriber; never raises."""
    for subscriber in _subscribers:
        try:
            subscriber(event, payload)
        except Exception:
            log.exception("Subscriber %s failed on event %s", subscriber, event)
