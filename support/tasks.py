"""Celery tasks of the support app (scheduled in ``CELERY_BEAT_SCHEDULE``)."""

from celery import shared_task

from . import faults


@shared_task
def open_fault_tickets():
    """Open tickets for the telemetry faults seen now (one per asset and fault while open)."""
    return [ticket.pk for ticket in faults.open_tickets(faults.detect())]
