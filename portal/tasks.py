import logging
import socket

from celery import shared_task
from celery.signals import worker_ready
from django.utils import timezone

from .models import WorkerHeartbeat

log = logging.getLogger(__name__)


@shared_task
def record_heartbeat():
    """Beat schedules this every minute; the home page shows when a worker last ran it."""
    WorkerHeartbeat.objects.update_or_create(
        worker=socket.gethostname(), defaults={"last_seen": timezone.now()}
    )


@worker_ready.connect
def report_at_start(**kwargs):
    """A worker reports as soon as it is ready, not only at beat's first heartbeat a minute later: the home page's
    badge says a worker runs from the first second (issue 37), never "no background worker has reported yet"
    while one does. A database that is not there yet is logged, and the worker starts all the same."""
    try:
        record_heartbeat()
    except Exception as error:  # the worker must not fail to start for its badge
        log.warning("Could not record the worker's start: %s", error)


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
    """A large CSV import or preview (``portal.imports.run_job``); a failure is recorded on the job for its page.
    Runs the job only if it is queued, or stalled (its worker died: ``claim_job``); a second delivery of the task
    while a run is alive does nothing."""
    from django.conf import settings

    from .imports import TakenOver, claim_job, run_job
    from .models import ImportJob

    job = claim_job(job_id)
    if job is None:
        return
    try:
        run_job(job, settings.IMPORT_BATCH_ROWS)
    except TakenOver as stopped:
        log.warning("%s: this run stops, the other goes on", stopped)
    except Exception as error:
        log.exception("Import %s failed", job_id)
        ImportJob.objects.filter(pk=job_id, attempts=job.attempts).update(
            state=ImportJob.State.FAILED, errors=[f"The import failed: {error}"], finished=timezone.now())
        raise


@shared_task
def resume_stalled_imports():
    """Beat runs this every few minutes: each import whose run stopped moving (its worker died or hung for longer
    than ``IMPORT_STALL_SECONDS``) is queued again; ``run_import_job`` takes it over (or gives it up after
    ``IMPORT_MAX_ATTEMPTS`` runs). Returns the jobs queued."""
    from datetime import timedelta

    from django.conf import settings

    from .models import ImportJob

    cutoff = timezone.now() - timedelta(seconds=settings.IMPORT_STALL_SECONDS)
    running = [ImportJob.State.CHECKING, ImportJob.State.WRITING]
    stalled = ImportJob.objects.filter(state__in=running, progressed__lt=cutoff).values_list("pk", flat=True)
    return [job_id for job_id in stalled if enqueue(run_import_job, job_id)]
