"""Monthly partitions of the hourly rollups on PostgreSQL (migration 0010, ``inventory/telemetry/partitions.py``):
rows routed to their month, partitions created before rows arrive, retention dropping whole months with the same
numbers as a DELETE, and the demo's SQLite untouched."""

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Avg, Count, Sum
from django.test import override_settings

from inventory.models import GPUHourly, NodeHourly
from inventory.telemetry.partitions import ensure_partitions, maintain
from inventory.telemetry.records import HourRecord, SeriesKey
from inventory.telemetry.rollups import enforce_retention, rollup_nodes, upsert_gpu_hours
from tests.factories import make_gpu, make_node
from tests.helpers.paths import ROOT

H = timedelta(hours=1)


@pytest.fixture
def gpus(db):
    node = make_node(hostname="dgx-01")
    return [make_gpu(node=node, slot=i) for i in range(2)]


def query(sql, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def partitions(table):
    return {name for (name,) in query("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                                      "WHERE i.inhparent = %s::regclass", [table])}


def where(table):
    """Each row's (hour, partition)."""
    return set(query(f"SELECT hour, tableoid::regclass::text FROM {table}"))


def upsert(gpu, at, util):
    return upsert_gpu_hours([(gpu.pk, HourRecord(series=SeriesKey(), hour=at, util_mean=util, samples=60))])


@pytest.mark.parametrize("table, key", [("inventory_gpuhourly", "gpu_id"), ("inventory_nodehourly", "node_id")])
def test_the_hourly_tables_are_partitioned_by_month_with_their_keys_and_indexes(db, table, key):
    assert query("SELECT partstrat FROM pg_partitioned_table WHERE partrelid = %s::regclass", [table]) == [("r",)]
    assert f"{table}_default" in partitions(table)
    keys = dict(query("SELECT contype, pg_get_constraintdef(oid) FROM pg_constraint "
                      "WHERE conrelid = %s::regclass AND contype IN ('p', 'u')", [table]))
    assert keys == {"p": "PRIMARY KEY (id, hour)", "u": f"UNIQUE ({key}, hour)"}
    indexed = {definition.split(" USING ")[1] for (definition,) in
               query("SELECT indexdef FROM pg_indexes WHERE tablename = %s", [table])}
    assert {"btree (hour)", f"btree ({key})"} <= indexed


def test_upserts_create_their_months_and_route_rows_there_idempotently(gpus):
    january, february = datetime(2019, 1, 31, 23, tzinfo=UTC), datetime(2019, 2, 1, 0, tzinfo=UTC)
    for util in (10.0, 70.0):  # the second pull of the same hours replaces them, across both partitions
        upsert_gpu_hours([(gpu.pk, HourRecord(series=SeriesKey(), hour=at, util_mean=util, samples=60))
                          for gpu in gpus for at in (january, february)])
    assert where("inventory_gpuhourly") == {(january, "inventory_gpuhourly_p2019_01"),
                                            (february, "inventory_gpuhourly_p2019_02")}
    assert list(GPUHourly.objects.values_list("util_mean", flat=True).distinct()) == [70.0]
    assert GPUHourly.objects.count() == 4
    rollup_nodes(january, february + H)
    assert where("inventory_nodehourly") == {(january, "inventory_nodehourly_p2019_01"),
                                             (february, "inventory_nodehourly_p2019_02")}


def test_a_row_written_before_its_month_exists_waits_in_the_default_partition_then_moves(gpus):
    at = datetime(2018, 5, 10, 7, tzinfo=UTC)
    GPUHourly.objects.create(gpu=gpus[0], hour=at, util_mean=42, samples=60)  # not through the upsert path
    assert where("inventory_gpuhourly") == {(at, "inventory_gpuhourly_default")}
    ensure_partitions(GPUHourly, [at])
    assert where("inventory_gpuhourly") == {(at, "inventory_gpuhourly_p2018_05")}
    upsert(gpus[0], at, 50.0)  # the moved row still conflicts with a new write of its hour
    assert GPUHourly.objects.get().util_mean == 50.0


def test_maintenance_creates_this_month_and_the_next_two(db):
    maintain([GPUHourly, NodeHourly], datetime(2031, 12, 15, tzinfo=UTC))
    for table in ("inventory_gpuhourly", "inventory_nodehourly"):
        assert {f"{table}_p2031_12", f"{table}_p2032_01", f"{table}_p2032_02"} <= partitions(table)
        assert f"{table}_p2032_03" not in partitions(table)


def figures(model, since):
    return model.objects.filter(hour__gte=since).aggregate(n=Count("pk"), util=Avg("util_mean"), gpus=Sum("samples"))


@override_settings(TELEMETRY_HOURLY_RETENTION_DAYS=100, TELEMETRY_DAILY_RETENTION_DAYS=365)
def test_retention_drops_old_months_and_keeps_recent_rows_with_the_same_figures(gpus):
    now = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
    cutoff = now - timedelta(days=100)  # 2026-08-24 10:30: July goes whole, August in part
    first = datetime(2026, 7, 1, tzinfo=UTC)
    hours = [first + 5 * H * n for n in range(int((now - first) / (5 * H)))]
    upsert_gpu_hours([(gpu.pk, HourRecord(series=SeriesKey(), hour=at, util_mean=(i * 7 + n) % 100, samples=60))
                      for n, at in enumerate(hours) for i, gpu in enumerate(gpus)])
    rollup_nodes(first, now)
    old = {model: model.objects.filter(hour__lt=cutoff).count() for model in (GPUHourly, NodeHourly)}
    kept = {model: figures(model, cutoff) for model in (GPUHourly, NodeHourly)}

    deleted = enforce_retention(now=now)

    assert deleted["gpu_hourly"] == old[GPUHourly] > 0 and deleted["node_hourly"] == old[NodeHourly] > 0
    for model, table in ((GPUHourly, "inventory_gpuhourly"), (NodeHourly, "inventory_nodehourly")):
        assert f"{table}_p2026_07" not in partitions(table) and f"{table}_p2026_08" in partitions(table)
        assert not model.objects.filter(hour__lt=cutoff).exists()
        assert figures(model, cutoff) == kept[model]
        assert f"{table}_p2027_02" in partitions(table)  # the coming months, created by the same daily task


def test_a_seven_day_query_reads_only_its_months(gpus):
    for month in (10, 11, 12):
        upsert(gpus[0], datetime(2026, month, 1, tzinfo=UTC), 10.0)
    plan = "\n".join(row[0] for row in query(
        "EXPLAIN SELECT count(*) FROM inventory_gpuhourly WHERE hour >= %s AND hour < %s",
        [datetime(2026, 11, 28, tzinfo=UTC), datetime(2026, 12, 5, tzinfo=UTC)]))
    assert "p2026_11" in plan and "p2026_12" in plan and "p2026_10" not in plan


@pytest.mark.django_db(transaction=True)
def test_the_migration_reverses_to_plain_tables_and_back_keeping_the_rows(gpus):
    at = datetime(2025, 3, 4, 5, tzinfo=UTC)
    upsert(gpus[0], at, 33.0)
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("inventory", "0009_xid_events_mig_instances")])
        assert not query("SELECT 1 FROM pg_partitioned_table WHERE partrelid = 'inventory_gpuhourly'::regclass")
        assert query("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'inventory_gpuhourly_pkey'"
                     ) == [("PRIMARY KEY (id)",)]
        assert where("inventory_gpuhourly") == {(at, "inventory_gpuhourly")}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert where("inventory_gpuhourly") == {(at, "inventory_gpuhourly_p2025_03")}
    upsert(gpus[1], at, 44.0)  # new ids continue after the copied ones
    assert GPUHourly.objects.count() == 2


SQLITE_DEMO = """
import django
django.setup()
from datetime import timedelta
from django.core.management import call_command
from django.utils import timezone
call_command("migrate", verbosity=0)
from inventory.models import GPUHourly
from inventory.telemetry.records import HourRecord, SeriesKey
from inventory.telemetry.rollups import enforce_retention, floor_hour, rollup_usage, upsert_gpu_hours
from inventory.queries import filter_choices
from tests.factories import make_gpu, make_node
gpu = make_gpu(node=make_node(hostname="n1", partition="train", owner_team="vision"))
now = floor_hour(timezone.now())
offered = filter_choices(gpu.node.site_id)  # the dashboard's filters, read in one hand-written query
print(offered["partition"], offered["team"], [name for _, name in offered["gpu_model"]] == [gpu.gpu_model.name])
upsert_gpu_hours([(gpu.pk, HourRecord(series=SeriesKey(), hour=now - timedelta(days=d), util_mean=d, samples=60))
                  for d in (1, 500)])
rollup_usage()
from inventory.telemetry.queries import heatmap, utilization_series
cells = heatmap("7d")["values"]  # the hand-written reads find their buckets as SQLite returns them (naive)
print(len(cells), [value for value in cells[0] if value is not None],
      [point["util_mean"] for point in utilization_series("7d") if point["gpus_reporting"]])
print(enforce_retention()["gpu_hourly"], list(GPUHourly.objects.values_list("util_mean", flat=True)))
"""


def test_the_demo_on_sqlite_migrates_writes_and_keeps_its_delete(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    out = subprocess.run([sys.executable, "-c", SQLITE_DEMO], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**env, "DJANGO_SETTINGS_MODULE": "tests.settings", "PORTAL_VAR_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-4:-1] == ["['train'] ['vision'] True", "1 [1.0] [1.0]", "1 [1.0]"]
