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
