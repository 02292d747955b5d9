import socket

from celery import shared_task
from django.utils import timezone

from .models import WorkerHeartbeat


@shared_task
def record_heartbeat():
    """Beat schedules this every minute; the home page shows when a worker last ran it."""
    WorkerHeartbeat.objects.update_or_create(
        worker=socket.gethostname(), defaults={"last_seen": timezone.now()}
    )
