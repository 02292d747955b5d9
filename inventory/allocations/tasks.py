"""Beat's looks at the allocations: their use against the warning levels every hour (``alerts.send_alerts``), and
Slurm against them once a day (``sync.propose``), so that drift shows on the sync page without anyone asking."""

from celery import shared_task
from django.utils import timezone

from . import alerts, sync
from .models import TeamAllocation


@shared_task(name="inventory.tasks.alert_allocations")
def alert_allocations():
    return len(alerts.send_alerts())


@shared_task(name="inventory.tasks.look_at_slurm")
def look_at_slurm():
    """A look at Slurm when some allocation is in force (a portal without allocations manages nothing in Slurm)."""
    today = timezone.localdate()
    if not TeamAllocation.objects.filter(start__lte=today, end__gte=today).exists():
        return None
    return sync.propose(None).pk
