"""Beat's hourly look at the allocations' use (``alerts.send_alerts``)."""

from celery import shared_task

from . import alerts


@shared_task(name="inventory.tasks.alert_allocations")
def alert_allocations():
    return len(alerts.send_alerts())
