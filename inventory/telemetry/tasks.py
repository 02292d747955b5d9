"""Background work of telemetry: pulls and retention (Celery; beat schedules them).

The tasks keep the names they had in ``inventory.tasks`` (beat schedules and queued messages use the name)."""

import logging
from datetime import timedelta

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from portal.tasks import enqueue

from . import pull as telemetry_pull
from .models import TelemetrySource
from .records import SourceError
from .rollups import enforce_retention

log = logging.getLogger(__name__)


@shared_task(name="inventory.tasks.poll_telemetry_sources")
def poll_telemetry_sources():
    """Every minute (beat): queue a pull for each enabled source that is due (interval or backoff)."""
    now = timezone.now()
    due = [(s.pk, s.next_attempt_at) for s in TelemetrySource.objects.filter(enabled=True) if s.is_due(now)]
    queued = 0
    for pk, was_due in due:
        # Claim the pull by pushing the next attempt forward, only where it is still what this poll read: of two
        # polls running at once (two workers took beat's messages together), one queues it, not both.
        if TelemetrySource.objects.filter(pk=pk, next_attempt_at=was_due).update(
                next_attempt_at=now + timedelta(minutes=10)):
            transaction.on_commit(lambda pk=pk, was_due=was_due: _queue_polled(pk, was_due))
            queued += 1
    return queued


def _queue_polled(pk, was_due):
    if not enqueue(pull_telemetry_source, pk):
        # Not queued (broker down): due again as before, so the next poll tries, not one 10 minutes later.
        TelemetrySource.objects.filter(pk=pk).update(next_attempt_at=was_due)


def queue_pull_now(source_id):
    """"Pull now" (page and API): queue a pull of the source whatever its schedule or backoff. When the
    broker cannot take it the source is made due now instead, so the first poll once the broker is back
    queues it: the request is never lost. Returns whether it was queued now."""
    if enqueue(pull_telemetry_source, source_id):
        return True
    TelemetrySource.objects.filter(pk=source_id).update(next_attempt_at=timezone.now())
    return False


PULL_NOT_QUEUED = ("The task queue (Celery broker) is not reachable, so the pull could not start now; "
                   "it is recorded as due and the scheduled poll runs it once the queue is back.")


@shared_task(name="inventory.tasks.pull_telemetry_source")
def pull_telemetry_source(source_id):
    """Pull one source. A failure is recorded on the source (error, stale since, backoff) and retried
    by the next poll once the backoff delay has passed; it is not raised into Celery."""
    source = TelemetrySource.objects.filter(pk=source_id, enabled=True).first()
    if source is None:
        return None
    try:
        return telemetry_pull.pull(source)
    except SourceError as error:
        return {"error": str(error)}


@shared_task(name="inventory.tasks.enforce_telemetry_retention")
def enforce_telemetry_retention():
    """Daily (beat): drop rollups older than the configured retention; create the coming months' partitions."""
    deleted = enforce_retention()
    log.info("telemetry retention: %s", deleted)
    return deleted
