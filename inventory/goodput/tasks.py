"""Background work of goodput (Celery; beat runs ``record_interruptions`` every 10 minutes, like the Slurm polls)."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from . import recording


@shared_task(name="inventory.tasks.record_interruptions")
def record_interruptions(hours=None):
    """Record the interruptions of the jobs that ended in the last ``hours`` (``GOODPUT_LOOKBACK_HOURS``). The
    window reaches back past the restart-wait cap, so an interruption's wait is filled in once the team's next job
    starts; recording it again replaces its rows (``recording``)."""
    now = timezone.now()
    hours = settings.GOODPUT_LOOKBACK_HOURS if hours is None else hours
    return recording.record_interruptions(now - timedelta(hours=hours), now, now)
