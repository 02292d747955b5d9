"""``manage.py seed_demo``: the demo fleet, accounts and every app's demo data (``inventory.demo``)."""

from django.core.management.base import BaseCommand

from inventory.demo import SIMULATOR_PORT, seed_demo


class Command(BaseCommand):
    help = "Create (or bring back) the demo fleet: 2 sites, 40 GPU nodes, fabrics, storage and demo accounts."

    def add_arguments(self, parser):
        parser.add_argument(
            "--simulator-port",
            type=int,
            default=SIMULATOR_PORT,
            help="Port of the telemetry simulator the demo's sources pull (make demo's SIM_PORT).",
        )

    def handle(self, *args, **options):
        def report(line):
            if options["verbosity"]:
                self.stdout.write(line)
                self.stdout.flush()  # each step's line shows as it finishes, not with the summary

        if options["verbosity"]:
            self.stdout.write("Seeding the demo data (under a minute on a first run; a line per step as it is done):")
        self.stdout.write(seed_demo(report, options["simulator_port"]))
