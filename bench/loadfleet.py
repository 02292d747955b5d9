"""The benchmark fleet for the load test: ``bench/loadtest.py --fleet bench [--gpus 10000] [--days 30]``, or built once
into a PostgreSQL database of one's own for several runs (before and after a change, on the same rows):

    .venv/bin/python bench/loadfleet.py postgres://USER@HOST:PORT/DB [--gpus 10000] [--days 30]
    .venv/bin/python bench/loadtest.py --fleet bench --database-url postgres://USER@HOST:PORT/DB --users 20

Instead of the demo (``seed_demo``: 336 GPUs), ``bench/telemetry.py``'s fleet (``build_fleet``: 8 GPUs a node, 4
sites, 8 partitions, 5 teams, every node ``bench-NNNNN``), its ``--days`` of hourly telemetry rolled up into node hours
and daily rows (``history``) and daily rows for the rest of the year (``earlier_days``), the Slurm job history of
``bench/jobhistory.py`` (about 10 runs per GPU a month, their per-node rows and interruptions), then ``VACUUM ANALYZE``
(``settle``); and the demo's accounts (``inventory.demo.sync_accounts``), for the users to log in. It has no contracts,
plans or tickets: the users skip the pages of one.

Nothing is pulled while the users browse (the load test expects no pull): the simulator draws the exporter page of
10,000 GPUs in 30-60 s of CPU (its caches hold fewer GPU-hours than such a fleet needs), longer than a pull waits,
and it would take that CPU from the portal on a machine where, in production, the exporters run on the GPU nodes.
``bench/workers.py`` and ``bench/pull_store.py`` measure pulls at fleet scale. The demo's exporter source is there,
disabled: the job history's XID events name it.
"""

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")


def build(gpus, days, report=print):
    """The fleet of ``gpus`` GPUs with ``days`` of history, in the database Django is set up with."""
    from bench import jobhistory
    from bench.telemetry import build_fleet, earlier_days, history, settle, timed
    from inventory.demo import Seeder, sync_accounts, telemetry_sources
    from inventory.models import TelemetrySource
    from inventory.telemetry.rollups import floor_hour

    now = floor_hour(datetime.now(UTC))
    sync_accounts(Seeder())
    # Created first: the job history's XID events name the first telemetry source that is not its own.
    TelemetrySource.objects.create(**{**telemetry_sources()[0], "enabled": False, "synced_until": now,
                                      "last_success_at": now})
    report(f"fleet: {len(build_fleet(gpus)):,} GPUs in {gpus // 8:,} nodes")
    rows, seconds = history(days, now)
    report(f"history: {rows:,} hourly rows ({sum(seconds.values()):.0f} s); daily rows for the rest of the year: "
           f"{earlier_days(days, now):,}")
    report(jobhistory.describe(jobhistory.generate(days, now)))
    # Generated, not pulled: its source's URL answers nothing. Disabled, it is not pulled (and not stale); its jobs
    # are still shown.
    TelemetrySource.objects.filter(name=jobhistory.SOURCE_NAME).update(enabled=False)
    report(f"VACUUM ANALYZE: {timed(settle)[0]:.0f} s")


def main():
    parser = argparse.ArgumentParser(description="Build the load test's bench fleet into a migrated database.")
    parser.add_argument("database_url", help="an empty PostgreSQL database (migrated here)")
    parser.add_argument("--gpus", type=int, default=10000)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DEBUG", "1")  # a benchmark's database: the demo's settings, no SECRET_KEY needed
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    build(args.gpus, args.days)


if __name__ == "__main__":
    main()
