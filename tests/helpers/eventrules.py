"""Notification rules in tests: rules made in bulk (the battery), events told at once run in the test's thread, and
an XID reading through the pull's own code (``health.save_xid_events``)."""

from types import SimpleNamespace

from django.utils import timezone

from inventory.telemetry import health
from planning.webhooks import delivery as webhooks
from support.eventrules import tasks
from support.models import NotificationRule
from tests.factories import UserFactory


def make_rules(n):
    """``n`` e-mail rules of one user, each for XID errors and degraded nodes."""
    owner = UserFactory()
    return NotificationRule.objects.bulk_create(
        NotificationRule(name=f"rule-{i}", owner=owner, events=["gpu.xid", "node.degraded"]) for i in range(n))


def run_tasks_at_once(monkeypatch):
    """Celery's ``delay`` of the notification and webhook tasks runs the task here and now."""
    monkeypatch.setattr(tasks.deliver_event, "delay", tasks.deliver_event)
    monkeypatch.setattr(webhooks.send_webhook, "delay", webhooks.send_webhook)


def read_xid(gpu, code, ts=None):
    """The pull reads ``code`` on the XID gauge of ``gpu`` (an exporter sample at ``ts``): the XID events it finds."""
    sample = SimpleNamespace(ts=ts or timezone.now(), xid=code)
    return health.save_xid_events(None, [], [(gpu.pk, sample)], timezone.now())
