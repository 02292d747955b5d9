"""Celery tasks of the notification rules: one event told at once, and the digests (beat: hourly and daily, see
``CELERY_BEAT_SCHEDULE``). Both claim what they send first, so a retried or duplicated task sends nothing twice."""

from celery import shared_task

from . import delivery


@shared_task(name="support.eventrules.deliver_event", acks_late=True)
def deliver_event(notice_id):
    """Send one recorded event of a rule that tells at once."""
    return delivery.deliver(notice_id)


@shared_task(name="support.eventrules.send_digests", acks_late=True)
def send_digests(frequency):
    """Every hour (``hourly``) or day (``daily``): one message per subscriber with the events since the last one;
    the hourly run also queues again the events to tell at once whose task was lost."""
    if frequency == "hourly":
        delivery.sweep()
    return delivery.send_digests(frequency)
