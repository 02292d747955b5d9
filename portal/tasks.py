import logging
import socket

from celery import shared_task
from django.utils import timezone

from .models import WorkerHeartbeat

log = logging.getLogger(__name__)


@shared_task
def record_heartbeat():
    """Beat schedules this every minute; the home page shows when a worker last ran it."""
    WorkerHeartbeat.objects.update_or_create(
        worker=socket.gethostname(), defaults={"last_seen": timezone.now()}
    )


def enqueue(task, *args):
    """``task.delay(*args)`` that never raises: True when the broker took the message, False (logged) when it
    could not, e.g. while the broker is down. How long a publish may try is bounded by the settings
    (``CELERY_BROKER_CONNECTION_TIMEOUT``, ``CELERY_TASK_PUBLISH_RETRY_POLICY``), so a request never waits
    long on a dead broker. The caller keeps a record that makes a later sweep or poll queue the work again."""
    try:
        task.delay(*args)
    except Exception as error:  # kombu's OperationalError, socket and DNS errors: whatever the transport raises
        log.warning("Could not queue %s%s: %s", task.name, args, error)
        return False
    return True


@shared_task
def run_import_job(job_id):
    """A large CSV import or preview (``portal.imports.run_job``); a failure is recorded on the job for its page."""
    from django.conf import settings

    from .imports import run_job
    from .models import ImportJob

    job = ImportJob.objects.filter(pk=job_id).first()
    if job is None or job.state != ImportJob.State.QUEUED:
        return  # gone, or already run (the broker delivered it twice)
    try:
        run_job(job, settings.IMPORT_BATCH_ROWS)
    except Exception as error:
        log.exception("Import %s failed", job_id)
        ImportJob.objects.filter(pk=job_id).update(
            state=ImportJob.State.FAILED, errors=[f"The import failed: {error}"], finished=timezone.now())
        raise
