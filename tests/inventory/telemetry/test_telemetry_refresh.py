"""A pull's incremental refresh (issue 35): only the touched GPUs' nodes' hours and usage hours, the touched GPUs'
days and their nodes' usage days are recomputed, with the figures a full recompute gives (also after a GPU moved to
another node or out of every node), and refreshes of disjoint nodes run at once on PostgreSQL while two of one node
take turns."""

import os
import random
import subprocess
import sys
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from inventory.models import GPUDaily, GPUHourly, NodeDaily, NodeHourly, UsageDaily, UsageHourly
from inventory.telemetry.records import HourRecord, SeriesKey
from inventory.telemetry.rollups import floor_hour, refresh, rollup_usage, upsert_gpu_hours
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.paths import ROOT
from tests.helpers.races import in_process, waits_at_most

H = timedelta(hours=1)
HISTORY = 50  # hours of rows before the touched ones are rewritten (two or three days)
TOUCHED = 26  # the hours a pull rewrites: always across a midnight


def hour_rows(gpus, hours, rng):
    """Hour records of ``gpus`` for ``hours``: utilization in quarters, some hours without it, health figures."""
    return [(gpu.pk, HourRecord(series=SeriesKey(), hour=hour, samples=60,
                                util_mean=None if rng.random() < 0.1 else rng.randrange(401) / 4,
                                util_max=100.0, power_mean_w=rng.randrange(100, 700), energy_wh=rng.randrange(700),
                                xid_errors=rng.choice([0, 0, 1]), gpu_temp_max_c=rng.randrange(40, 90),
                                retired_pages=rng.choice([None, 0, 3]), ecc_sbe_errors=rng.choice([None, 0, 2])))
            for gpu in gpus for hour in hours if rng.random() < 0.9]


@pytest.fixture
def fleet(db):
    """Two sites of three nodes, three GPUs each of two models; one spare GPU; ``HISTORY`` hours of rows for
    every GPU, rolled up in full."""
    models, node_model = [make_gpu_model(name="R-a"), make_gpu_model(name="R-b")], make_node_model(gpu_slots=4)
    sites = {}
    for s in ("one", "two"):
        site = make_site(name=f"site-{s}")
        nodes = [make_node(site=site, node_model=node_model, hostname=f"{s}-{n}") for n in range(3)]
        sites[s] = [make_gpu(node=node, slot=k, gpu_model=models[(n + k) % 2]) for n, node in enumerate(nodes)
                    for k in range(3)]
    spare = make_gpu(gpu_model=models[0])
    end = floor_hour(timezone.now()) - H
    hours = [end - k * H for k in range(HISTORY)]
    upsert_gpu_hours(hour_rows([*sites["one"], *sites["two"], spare], hours, random.Random(35)))
    refresh(set(hours))
    return {**sites, "spare": spare, "touched": hours[:TOUCHED], "rng": random.Random(36)}


def rollups():
    """Every row the refresh writes (node hours, usage hours, GPU and node days, usage days) as a multiset of tuples,
    floats rounded (a full recompute may sum in another order)."""
    def rows(model):
        names = [f.attname for f in model._meta.concrete_fields if f.attname != "id"]
        return Counter(tuple(round(v, 9) if isinstance(v, float) else v for v in row)
                       for row in model.objects.values_list(*names))
    return {model.__name__: rows(model) for model in (NodeHourly, UsageHourly, GPUDaily, NodeDaily, UsageDaily)}


def row_versions(table, key):
    """``key`` → the transaction ids that wrote its rows (PostgreSQL's ``xmin``): what a refresh rewrote."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {key}, xmin::text FROM {table}")
        found = {}
        for owner, version in cursor.fetchall():
            found.setdefault(owner, set()).add(version)
        return found


def pull(gpus, hours, rng):
    """What a pull of ``gpus`` writes before its refresh: their hours, rewritten."""
    return upsert_gpu_hours(hour_rows(gpus, hours, rng))


def test_an_incremental_refresh_gives_the_full_recomputes_figures_and_rewrites_nothing_else(fleet):
    touched = [*fleet["one"], fleet["spare"]]
    before, versions = rollups(), row_versions("inventory_nodehourly", "node_id")
    hours = pull(touched, fleet["touched"], fleet["rng"])
    refresh(hours, {gpu.pk for gpu in touched})
    incremental = rollups()
    assert incremental != before
    after = row_versions("inventory_nodehourly", "node_id")
    assert {gpu.node_id for gpu in fleet["two"]} == {node for node in versions if after[node] == versions[node]}
    refresh(hours)  # the full recompute: every GPU's nodes and days
    assert rollups() == incremental
    assert usage_hours() == summed_gpu_hours()


def usage_hours(hours=None):
    rows = UsageHourly.objects.filter(**({} if hours is None else {"hour__in": hours}))
    return {(r.node_id, r.gpu_model_id, r.hour): (r.gpus, round(r.util_hours, 9)) for r in rows}


def summed_gpu_hours(hours=None):
    """The usage hours (of ``hours``; None: all) worked out from the GPU hours in Python: per node the GPU is in,
    model and hour, the GPUs with a utilization reading and their utilization summed."""
    summed = {}
    rows = GPUHourly.objects.filter(util_mean__isnull=False, **({} if hours is None else {"hour__in": hours}))
    for row in rows.select_related("gpu"):
        gpus, util = summed.get((row.gpu.node_id, row.gpu.gpu_model_id, row.hour), (0, 0.0))
        summed[(row.gpu.node_id, row.gpu.gpu_model_id, row.hour)] = (gpus + 1, util + row.util_mean)
    return {key: (gpus, round(util, 9)) for key, (gpus, util) in summed.items()}


def test_a_gpu_that_moved_leaves_its_old_node_in_the_refresh(fleet):
    """One GPU moved to another site's node, one out of every node: a pull of only those two recomputes their old
    and new nodes' hours and usage days (and the GPUs in no node) as the full recompute does."""
    moved, unplugged = fleet["one"][0], fleet["two"][4]
    old = moved.node
    moved.node, moved.slot = fleet["two"][0].node, 3
    moved.save()
    unplugged.node, unplugged.slot = None, None
    unplugged.save()
    hours = pull([moved, unplugged], fleet["touched"][:3], fleet["rng"])
    refresh(hours, {moved.pk, unplugged.pk})
    incremental = rollups()
    day = timezone.localdate(max(hours))
    assert UsageDaily.objects.filter(node=old, day=day).aggregate(n=Sum("gpus"))["n"] == 2  # no longer counted there
    assert usage_hours(hours) == summed_gpu_hours(hours)  # the pulled hours where the GPUs are now
    refresh(hours)
    assert rollups() == incremental


def test_a_gpu_without_node_history_is_refreshed_where_it_is(fleet):
    """GPUs written in bulk (no change records, as ``bench/telemetry.py`` makes its fleet): their current nodes."""
    gpu = fleet["two"][1]
    type(gpu).history.filter(id=gpu.pk).delete()
    hours = pull([gpu], fleet["touched"][:2], fleet["rng"])
    refresh(hours, {gpu.pk})
    incremental = rollups()
    refresh(hours)
    assert rollups() == incremental


@pytest.mark.django_db(transaction=True)
def test_refreshes_of_disjoint_nodes_run_at_once_and_of_one_node_take_turns(fleet):
    """One refresh holds its transaction open (its nodes' locks held); from another connection a refresh of the other
    site's nodes finishes at once, while one of a node it holds, and a full recompute, wait for it."""
    hours = set(fleet["touched"][:2])
    holding, release = threading.Event(), threading.Event()

    def first():
        with transaction.atomic():
            refresh(hours, {gpu.pk for gpu in fleet["one"]})
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=in_process(first))
    holder.start()
    try:
        assert holding.wait(60)
        assert waits_at_most(5, lambda: refresh(hours, {gpu.pk for gpu in fleet["two"]})) is None
        assert "lock timeout" in str(waits_at_most(1, lambda: refresh(hours, {fleet["one"][4].pk})))
        assert "lock timeout" in str(waits_at_most(1, rollup_usage))
    finally:
        release.set()
        holder.join(60)
    assert waits_at_most(5, lambda: refresh(hours, {fleet["one"][4].pk})) is None


SQLITE_DEMO = """
import django
django.setup()
from datetime import timedelta
from django.core.management import call_command
from django.utils import timezone
call_command("migrate", verbosity=0)
from inventory.models import GPUDaily, GPUHourly, NodeDaily, NodeHourly, UsageDaily, UsageHourly
from inventory.telemetry.records import HourRecord, SeriesKey
from inventory.telemetry.rollups import floor_hour, refresh, upsert_gpu_hours
from tests.factories import make_gpu, make_node
node = make_node(hostname="n1")
gpus = [make_gpu(node=node), make_gpu(node=node), make_gpu()]
now = floor_hour(timezone.now())
def pull(gpus, util):
    return upsert_gpu_hours([(gpu.pk, HourRecord(series=SeriesKey(), hour=now - timedelta(hours=h), util_mean=util + h,
                                                  samples=60)) for h in (1, 30) for gpu in gpus])
def rows():
    return [set(model.objects.values_list(*[f.attname for f in model._meta.concrete_fields if f.attname != "id"]))
            for model in (NodeHourly, GPUDaily, NodeDaily, UsageDaily)]
refresh(pull(gpus, 10))
before = rows()
hours = pull([gpus[0], gpus[2]], 50)
refresh(hours, {gpus[0].pk, gpus[2].pk})
incremental = rows()
refresh(hours)
print([len(found) for found in incremental], incremental != before, incremental == rows())
"""


def test_the_demo_on_sqlite_refreshes_incrementally(tmp_path):
    """SQLite (the demo) has no advisory locks and no arrays: the same refresh, ids read with ``json_each``."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    out = subprocess.run([sys.executable, "-c", SQLITE_DEMO], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**env, "DJANGO_SETTINGS_MODULE": "tests.settings", "PORTAL_VAR_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    # Two hours on two days: node hours, GPU days (3 GPUs), node days, usage days (3 models: 2 in the node, 1 spare).
    assert out.stdout.split("\n")[-2] == "[2, 6, 2, 6] True True"
