"""``manage.py seed_demo``: the demo fleet, accounts and every app's demo data (``inventory.demo``)."""

from django.core.management.base import BaseCommand

from inventory.demo import SIMULATOR_PORT, seed_demo


class Command(BaseCommand):
    help = "Create (or bring back) the demo fleet: 2 sites, 40 GPU nodes, fabrics, storage and demo accounts."

    def add_arguments(self, parser):
        parser.add_argument("--simulator-port", type=int, default=SIMULATOR_PORT,
                            help="Port of the telemetry simulator the demo's sources pull (make demo's SIM_PORT).")

    def handle(self, *args, **options):
        def report(text, end):
            if options["verbosity"]:
                self.stdout.write(text, ending=end)
                self.stdout.flush()  # a step's text shows while it runs, not once it is done

        self.stdout.write(seed_demo(report, options["simulator_port"]))
