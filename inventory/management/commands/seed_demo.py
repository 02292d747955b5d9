"""``manage.py seed_demo``: the demo fleet, accounts and every app's demo data (``inventory.demo``)."""

from django.core.management.base import BaseCommand

from inventory.demo import seed_demo


class Command(BaseCommand):
    help = "Create (or bring back) the demo fleet: 2 sites, 40 GPU nodes, fabrics, storage and demo accounts."

    def handle(self, *args, **options):
        self.stdout.write(seed_demo())
