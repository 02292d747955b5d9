"""Celery tasks of the support app (scheduled in ``CELERY_BEAT_SCHEDULE``), and its features' (the notification
rules' ``eventrules/tasks.py``, imported here for autodiscovery)."""

from celery import shared_task

from . import faults, sla
from .eventrules import tasks as eventrules_tasks  # noqa: F401


@shared_task
def open_fault_tickets():
    """Open tickets for the telemetry faults seen now (one per asset and fault while open)."""
    return [ticket.pk for ticket in faults.open_tickets(faults.detect())]


@shared_task
def announce_sla_breaches():
    """Tell the notification rules of the SLA clocks that ran out (``sla.announce_breaches``)."""
    return sla.announce_breaches()
