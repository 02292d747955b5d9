"""One hourly pull's ``store()`` against a bare COPY of the same rows (issue 35).

    .venv/bin/python bench/pull_store.py [--gpus 10000] [--pull-gpus N] [--hours-before 23] [--repeat 5]

1. Builds a fleet of ``--gpus`` GPUs (8 per node: ``bench/telemetry.py``'s fleet) in a throwaway PostgreSQL, with
   ``--hours-before`` hours of the same day already stored and rolled up (23: the pulled hour is the day's last,
   so the daily rollups read a whole day of hours, the worst case).
2. A Prometheus pull of one hour of every GPU (or of the first ``--pull-gpus``, 8 per node: one site's source of a
   fleet split over several) as its collector returns it (utilization, memory, power, energy,
   health, the XID and row-remap gauges at 0), after two of the hour before (untimed: the gauges' last readings
   are stored and rewritten, as in a running portal): ``pull.store()`` timed inside the pull's transaction, the
   first time (the hour's rows are new) and then ``--repeat`` times (a re-pull of the current hour: every row
   updated; the median is reported), each stage of it timed apart.
3. The same rows written by a bare ``COPY`` into an empty copy of the hourly table (``--repeat`` times, median);
   the ratio store / COPY is the figure of issue 35 (goal ≤ 2×).
"""

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH.parent), str(BENCH)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

# What store() calls, timed apart: (module attribute path, label).
STAGES = ["pull.GPUMatcher", "pull.upsert_gpu_hours", "health.save_xid_events", "health.save_remap_events",
          "health.count_xid_events", "pull.rollup_samples", "pull.refresh", "health.save_mig_instances",
          "pull.save_jobs", "pull.save_unknown"]


class StageTimer:
    """Wraps the functions ``store()`` calls and adds up the seconds each took."""

    def __init__(self):
        from inventory.telemetry import health, pull

        self.seconds = defaultdict(float)
        modules = {"pull": pull, "health": health}
        for stage in STAGES:
            module_name, name = stage.split(".")
            self._wrap(modules[module_name], name, stage)

    def _wrap(self, module, name, stage):
        function = getattr(module, name, None)
        if function is None:
            return

        def timed_call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - start

        setattr(module, name, timed_call)

    def take(self):
        seconds, self.seconds = dict(self.seconds), defaultdict(float)
        return seconds


def hour_records(gpus, hour, round_):
    """One ``HourRecord`` per GPU of ``gpus`` ((id, uuid) pairs) for ``hour``, as the Prometheus collector gives."""
    from inventory.telemetry.records import HourRecord, SeriesKey

    return [HourRecord(series=SeriesKey(uuid=uuid, model_name="NVIDIA H100 80GB HBM3"), hour=hour,
                       util_mean=float((pk * 7 + round_) % 100), util_max=100.0, mem_used_mean_gb=40.0,
                       power_mean_w=450.0, energy_wh=450.0, gr_engine_active_mean=0.5, tensor_active_mean=0.3,
                       samples=60, xid_last=0, xid_max=0, xid_min=0, gpu_temp_max_c=70.0, memory_temp_max_c=80.0,
                       sm_clock_mean_mhz=1980.0, ecc_sbe_errors=0, ecc_dbe_errors=0, nvlink_errors=0, pcie_replays=0,
                       retired_pages=0, remapped_rows=0, row_remap_failure_last=0, row_remap_failure_max=0,
                       row_remap_pending_last=0, row_remap_pending_max=0)
            for pk, uuid in gpus]


def store_once(source, records, now, timer):
    from django.db import transaction

    from inventory.telemetry.pull import store
    from inventory.telemetry.records import Collected

    collected = Collected(hours=list(records), synced_until=now)
    start = time.perf_counter()
    with transaction.atomic():
        store(source, collected, now)
    return time.perf_counter() - start, timer.take()


def bare_copy(records):
    """The same rows by a bare COPY into an empty copy of the hourly table (created and dropped outside the timing)."""
    from django.db import connection

    from inventory.telemetry.rollups import ROLLUP_FIELDS

    columns = ", ".join(["gpu_id", "hour", *ROLLUP_FIELDS])
    rows = [(pk, r.hour, *(getattr(r, f) for f in ROLLUP_FIELDS)) for pk, r in records]
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE bare_copy (LIKE inventory_gpuhourly INCLUDING ALL)")
        start = time.perf_counter()
        with cursor.cursor.copy(f"COPY bare_copy ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        seconds = time.perf_counter() - start
        cursor.execute("DROP TABLE bare_copy")
    return seconds


def prepare(gpus, hours_before):
    """The fleet, a Prometheus source and the day's earlier hours, rolled up; returns (source, GPUs, the hour)."""
    from datetime import UTC, datetime

    import telemetry as fleet_bench
    from django.utils import timezone

    from inventory.models import GPU, TelemetrySource
    from inventory.telemetry.rollups import day_start, floor_hour, refresh

    fleet_bench.build_fleet(gpus)
    source = TelemetrySource.objects.create(name="bench", kind="prometheus", url="http://prometheus:9090")
    hour = day_start(timezone.localdate(datetime.now(UTC)) - timedelta(days=1)) + timedelta(hours=hours_before)
    if hours_before:
        fleet_bench.generate_month(hour - timedelta(hours=hours_before), hour)
        refresh({hour - timedelta(hours=k + 1) for k in range(hours_before)})
    fleet_bench.settle()
    return source, list(GPU.objects.order_by("pk").values_list("pk", "uuid")), floor_hour(hour)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10000)
    parser.add_argument("--pull-gpus", type=int, help="GPUs the pull brings (default: every GPU)")
    parser.add_argument("--hours-before", type=int, default=23, help="hours of the pulled hour's day already stored")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from tests.helpers.pgserver import throwaway_postgres

    with throwaway_postgres() as (host, port, user):
        os.environ["DATABASE_URL"] = f"postgres://{user}@{host}:{port}/postgres"
        os.environ.setdefault("DEBUG", "1")  # the settings' defaults; timed with DEBUG off, as production runs
        import django

        django.setup()
        from django.core.management import call_command
        from django.test import override_settings

        override_settings(DEBUG=False).enable()

        call_command("migrate", verbosity=0)
        source, fleet, hour = prepare(args.gpus, args.hours_before)
        gpus = fleet[:args.pull_gpus or len(fleet)]
        now = hour + timedelta(minutes=59)
        timer = StageTimer()
        # Two pulls of the hour before, untimed: the gauges' last readings are stored and rewritten once, as in a
        # running portal.
        for minutes in (30, 59):  # pulled at hour - 30 min and hour - 1 min: every gauge read again, a newer time
            before = hour_records(gpus, hour - timedelta(hours=1), minutes)
            store_once(source, before, hour - timedelta(minutes=60 - minutes), timer)
        print(f"fleet: {len(fleet)} GPUs, {len(gpus)} in the pull; the pulled hour {hour:%Y-%m-%d %H:%M} with "
              f"{args.hours_before} hours of its day stored")
        first, first_stages = store_once(source, hour_records(gpus, hour, 0), now, timer)
        runs = [store_once(source, hour_records(gpus, hour, k + 1), now, timer) for k in range(args.repeat)]
        median = statistics.median(seconds for seconds, _ in runs)
        pairs = [(pk, record) for (pk, _), record in zip(gpus, hour_records(gpus, hour, 0), strict=True)]
        copy_s = statistics.median(bare_copy(pairs) for _ in range(args.repeat))
        print(f"store(), new hour: {first:.3f} s; re-pull (median of {args.repeat}): {median:.3f} s; "
              f"bare COPY of the {len(gpus)} rows: {copy_s:.3f} s")
        print(f"store / COPY: new hour {first / copy_s:.2f}×, re-pull {median / copy_s:.2f}×")
        stages = {stage: statistics.median(s.get(stage, 0.0) for _, s in runs) for stage in STAGES}
        print("stages (new hour / re-pull median, s): " + ", ".join(
            f"{stage.split('.')[1]} {first_stages.get(stage, 0.0):.3f}/{seconds:.3f}"
            for stage, seconds in stages.items() if seconds or first_stages.get(stage)))


if __name__ == "__main__":
    main()
