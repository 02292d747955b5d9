"""``manage.py rebuild_allocations``: the allocated GPU-hours rollup recomputed from the stored Slurm jobs
(``inventory.telemetry.allocation_rollup``): once after upgrading to the release that adds it, or after jobs were
loaded in bulk outside the portal's pulls."""

from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from inventory.telemetry import allocation_rollup


def moment(text):
    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise CommandError(f"{text!r} is not an ISO date or time, e.g. 2026-11-01 or 2026-11-01T06:00") from error
    return value if timezone.is_aware(value) else timezone.make_aware(value)


class Command(BaseCommand):
    help = "Recompute the allocated GPU-hours per node and hour (and per day) from the stored Slurm jobs."

    def add_arguments(self, parser):
        parser.add_argument("--since", type=moment, help="From this moment (default: the first job's start).")
        parser.add_argument("--until", type=moment, help="Up to this moment (default: now).")

    def handle(self, *args, since=None, until=None, **options):
        rows = allocation_rollup.rebuild(since, until)
        self.stdout.write(f"{rows} hourly rows of allocated GPU-hours written.")
