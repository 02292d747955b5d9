"""Background work for the inventory: telemetry pulls and retention (Celery; beat schedules them)."""

import logging
from datetime import timedelta

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from .telemetry import pull as telemetry_pull
from .telemetry.models import TelemetrySource
from .telemetry.records import SourceError
from .telemetry.rollups import enforce_retention

log = logging.getLogger(__name__)


@shared_task
def poll_telemetry_sources():
    """Every minute (beat): queue a pull for each enabled source that is due (interval or backoff)."""
    now = timezone.now()
    due = [s.pk for s in TelemetrySource.objects.filter(enabled=True) if s.is_due(now)]
    for pk in due:
        # Push the next attempt forward now so the next poll does not queue the same pull twice.
        TelemetrySource.objects.filter(pk=pk).update(next_attempt_at=now + timedelta(minutes=10))
        transaction.on_commit(lambda pk=pk: pull_telemetry_source.delay(pk))
    return len(due)


@shared_task
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


@shared_task
def enforce_telemetry_retention():
    """Daily (beat): drop rollups older than the configured retention."""
    deleted = enforce_retention()
    log.info("telemetry retention: %s", deleted)
    return deleted
