"""The utilization groupings and heatmap, summed in SQL, against a straightforward Python computation over the
rollup rows themselves, on a fleet with gaps, partial days, retired and spare GPUs, two GPU models in one node,
nodes without partition or team, node costs, and every filter: a wrong GROUP BY or join shows as a wrong figure."""

import math
import random
from collections import defaultdict
from importlib import import_module

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import Sum
from django.test import override_settings
from django.utils import timezone

from inventory.models import GPUDaily, GPUHourly, NodeDaily
from inventory.telemetry import queries
from inventory.telemetry.rollups import floor_hour, rollup_days, rollup_nodes, rollup_usage
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.telemetry import D, H, freeze_now

COST = 2.0
NODE_COST = 3.5  # one node's cost per GPU-hour, as a contract would give it


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


@pytest.fixture
def fleet(db, now, monkeypatch):
    """3 sites × 3 nodes; each node 3 GPUs (the third of another model in every other node), one retired; two
    spare GPUs. Hourly rows over 9 days and daily rows over 40 days with gaps, rows without a reading and days of
    a few hours; utilization in quarters so that every sum is exact."""
    rng = random.Random(17)
    models = [make_gpu_model(name="M-a"), make_gpu_model(name="M-b")]
    node_model = make_node_model(gpu_slots=4)
    gpus = []
    for s in range(3):
        site = make_site(name=f"site-{s}")
        for n in range(3):
            node = make_node(site=site, node_model=node_model, hostname=f"n{s}{n}",
                             partition=["train", "infer", ""][n], owner_team=["vision", "", "speech"][(s + n) % 3])
            gpus += [make_gpu(node=node, gpu_model=models[0]), make_gpu(node=node, gpu_model=models[0]),
                     make_gpu(node=node, gpu_model=models[n % 2], state="retired" if n == 1 else "in_service")]
    gpus += [make_gpu(gpu_model=models[1]), make_gpu(gpu_model=models[0])]
    h, today = floor_hour(now), timezone.localdate(now)
    hourly, daily = [], []
    for gpu in gpus:
        hourly += [GPUHourly(gpu=gpu, hour=h - k * H, samples=60,
                             util_mean=None if rng.random() < 0.1 else rng.randrange(401) / 4)
                   for k in range(9 * 24) if rng.random() < 0.8]
        daily += [GPUDaily(gpu=gpu, day=today - k * D, hours=rng.choice([24, 24, 7, 1]),
                           util_mean=None if rng.random() < 0.1 else rng.randrange(401) / 4)
                  for k in range(40) if rng.random() < 0.8]
    GPUHourly.objects.bulk_create(hourly)
    GPUDaily.objects.bulk_create(daily)
    rollup_usage()
    costly = gpus[0].node_id
    monkeypatch.setattr(queries, "gpu_hour_costs", lambda: {costly: NODE_COST})
    return {"gpus": gpus, "sites": {g.node.site_id for g in gpus if g.node}, "models": models, "costly": costly}


def all_rows(range_key):
    return list(queries.get_range(range_key).model.objects.select_related("gpu__node").filter(util_mean__isnull=False))


def python_rows(rows, range_key, filters, now):
    """(gpu, bucket, hours, util × hours) of the ``all_rows`` in the range, filtered in Python."""
    span = queries.get_range(range_key)
    buckets = set(span.buckets(now))
    for row in rows:
        gpu, node = row.gpu, row.gpu.node
        where = {"site": node and node.site_id, "partition": node and node.partition, "gpu_model": gpu.gpu_model_id,
                 "team": node and node.owner_team_id}
        t = getattr(row, span.time_field)
        if t in buckets and all(where[name] == value for name, value in filters.items() if value):
            hours = row.hours if span.daily else 1
            yield gpu, t, hours, row.util_mean * hours


def python_groups(rows, group_by, range_key, filters, costs, now):
    """What ``utilization_by`` must answer, computed row by row."""
    keys = {"site": lambda g: g.node and g.node.site_id, "partition": lambda g: g.node and g.node.partition,
            "gpu_model": lambda g: g.gpu_model_id, "team": lambda g: g.node and g.node.owner_team_id,
            "node": lambda g: g.node_id}
    sums = defaultdict(lambda: {"gpus": set(), "gpu_hours": 0.0, "util_hours": 0.0, "idle_cost": 0.0,
                                "at_default": 0.0})
    for gpu, _, hours, util_hours in python_rows(rows, range_key, filters, now):
        group = sums[keys[group_by](gpu)]
        group["gpus"].add(gpu.pk)
        group["gpu_hours"] += hours
        group["util_hours"] += util_hours
        group["idle_cost"] += (hours - util_hours / 100) * costs.get(gpu.node_id, COST)
        group["at_default"] += 0 if gpu.node_id in costs else hours - util_hours / 100
    return {key: (len(g["gpus"]), round(g["gpu_hours"], 2), round(g["util_hours"] / g["gpu_hours"], 2),
                  round(g["gpu_hours"] - g["util_hours"] / 100, 2), round(g["idle_cost"], 2), g["at_default"])
            for key, g in sums.items()}


def filter_cases(fleet):
    site = sorted(fleet["sites"])[1]
    return [{}, {"site": site}, {"partition": "train"}, {"team": "vision"}, {"gpu_model": fleet["models"][1].pk},
            {"site": site, "gpu_model": fleet["models"][0].pk, "partition": ""}]


@override_settings(IDLE_GPU_HOUR_COST=COST)
@pytest.mark.parametrize("range_key", ["24h", "7d", "30d", "90d", "1y"])
def test_groupings_match_a_row_by_row_computation(fleet, now, range_key):
    costs, rows = {fleet["costly"]: NODE_COST}, all_rows(range_key)
    checked = 0
    for filters in filter_cases(fleet):
        together = queries.usage_groupings(range_key, list(queries.GROUPS), filters)
        for group_by in queries.GROUPS:
            expected = python_groups(rows, group_by, range_key, filters, costs, now)
            # Both ways of asking: one grouping per query (the API's) and all in one query (the dashboard's).
            for groups in (queries.utilization_by(group_by, range_key, filters),
                           queries.utilization_by(group_by, range_key, filters, grouped=together[group_by])):
                assert {g["key"]: (g["gpus"], g["gpu_hours"], g["util_mean"], g["idle_gpu_hours"])
                        for g in groups} == {key: figures[:4] for key, figures in expected.items()}, (group_by, filters)
                # Idle cost: idle hours (hundredths of utilization) × cost, summed in another order: the last cent
                # may round the other way.
                for g in groups:
                    assert g["idle_cost"] == pytest.approx(expected[g["key"]][4], abs=0.0101), (group_by, filters, g)
                    assert g["idle_gpu_hours_at_default_cost"] == pytest.approx(expected[g["key"]][5], abs=0.0051), g
                checked += len(groups)
    assert checked > 50  # the fleet's groups are many, not a few empty answers


@pytest.fixture
def close_calls(db, now):
    """90 nodes in four states. In service: nine at 10 %, the tenth least used at 40.001 % and the eleventh at
    40.004 %, both shown as 40.00 and the eleventh first by name (so it is the table's tenth: only the candidates'
    margin keeps it), four at 70 %. The others, below 40 %, differ by thousandths in an order other than their
    names'."""
    rng = random.Random(5)
    h = floor_hour(now)
    utils = {f"low-{i}": ("in_service", 10.0) for i in range(9)}
    utils |= {"m-tenth": ("in_service", 40.001), "a-eleventh": ("in_service", 40.004)}
    utils |= {f"busy-{i}": ("in_service", 70.0) for i in range(4)}
    states = ["burn_in", "in_repair", "retired"]  # not serving, below 40 %: the heatmap leaves out the two above
    utils |= {f"close-{rng.randrange(10**6):06d}-{i}": (states[i % 3], 20 + rng.randrange(12) * 0.003)
              for i in range(75)}
    rows = []
    for hostname, (state, util) in utils.items():
        gpu = make_gpu(node=make_node(hostname=hostname, state=state))
        rows += [GPUHourly(gpu=gpu, hour=h - k * H, samples=60, util_mean=util) for k in range(3)]
    GPUHourly.objects.bulk_create(rows)
    rollup_days(timezone.localdate(h - 3 * H), timezone.localdate(h))
    rollup_usage()


@pytest.mark.parametrize("range_key", ["24h", "30d"])
def test_the_dashboards_node_candidates_hold_every_least_used_node(close_calls, range_key):
    """The dashboard reads only the nodes that can be among the least used (the ten least used of each state, the
    heatmap's rows): its tables and heatmap are those of every node's figures."""
    every = queries.usage_groupings(range_key, ["node"])["node"]
    candidates = queries.usage_groupings(range_key, ["node"], candidates_only=True)["node"]
    assert len(every) == 90 and set(candidates) <= set(every) and len(candidates) < 90
    for serving in (True, False):
        assert (queries.least_used(queries.utilization_by("node", range_key, grouped=candidates), serving=serving)
                == queries.least_used(queries.utilization_by("node", range_key, grouped=every), serving=serving))
    for limit in (4, 10):
        assert (queries.heatmap(range_key, limit=limit, nodes=candidates)
                == queries.heatmap(range_key, limit=limit, nodes=every))
    shown = queries.least_used(queries.utilization_by("node", range_key, grouped=candidates))
    assert [g["name"] for g in shown[-2:]] == ["low-8", "a-eleventh"]


@pytest.mark.parametrize("range_key", ["24h", "30d"])
@pytest.mark.parametrize("by", ["node", "gpu"])
def test_heatmap_cells_match_a_row_by_row_computation(fleet, now, range_key, by):
    rows = all_rows(range_key)
    for filters in filter_cases(fleet):
        cells = defaultdict(lambda: [0.0, 0.0])
        for gpu, t, hours, util_hours in python_rows(rows, range_key, filters, now):
            cell = cells[(gpu.node_id if by == "node" else gpu.pk, t)]
            cell[0] += hours
            cell[1] += util_hours
        data = queries.heatmap(range_key, filters, by=by, limit=4)
        keys = {key for key, _ in cells if key is not None or by == "gpu"}
        assert len(data["rows"]) == min(4, len(keys))
        for row, values in zip(data["rows"], data["values"], strict=True):
            expected = [half_up(cells[(row["key"], t)][1] / cells[(row["key"], t)][0])
                        if (row["key"], t) in cells else None for t in data["times"]]
            assert values == expected, (by, filters, row)


def half_up(mean):
    """A heatmap cell as the database rounds it: to 2 decimals, halves up, so 48.625 shows 48.63 where Python's
    ``round`` gives 48.62."""
    return math.floor(mean * 100 + 0.5) / 100


def test_a_heatmap_cell_on_a_tie_rounds_up(db, now):
    """Integer utilizations of 8 GPUs average to eighths: 48.625 is a tie that Python's ``round`` sends down
    (to the even 48.62) and the tables' ``floatformat`` sends up; the heatmap's cells round up like the tables."""
    node = make_node(hostname="tie-node")
    hour = floor_hour(now) - H
    for slot, util in enumerate([48, 48, 48, 49, 49, 49, 49, 49]):
        GPUHourly.objects.create(gpu=make_gpu(node=node, slot=slot), hour=hour, util_mean=util, samples=4)
    rollup_usage()
    data = queries.heatmap("24h", now=now)
    assert round(48.625, 2) == 48.62  # what Python would have shown
    assert data["rows"] == [{"key": node.pk, "name": "tie-node"}]
    assert data["values"][0][data["times"].index(hour)] == 48.63


@pytest.fixture
def gaps(db, now):
    """Two GPUs of one node over the last five days, hourly; one hour in three has power but no utilization."""
    node = make_node(hostname="gaps")
    gpus = [make_gpu(node=node), make_gpu(node=node)]
    h = floor_hour(now)
    GPUHourly.objects.bulk_create([
        GPUHourly(gpu=gpu, hour=h - k * H, samples=60, power_mean_w=300, util_mean=None if k % 3 else 10 + k % 7 * 10)
        for gpu in gpus for k in range(5 * 24)])
    rollup_nodes(h - 5 * 24 * H, h + H)
    rollup_days(timezone.localdate(h - 5 * 24 * H), timezone.localdate(h))
    return gpus


def test_daily_rows_count_only_hours_with_a_utilization_reading(gaps):
    """The daily ranges show the GPU-hours and mean of the hourly ones over the same hours: an hour with power but
    no utilization is not an observed (idle) GPU-hour, neither in the dashboards nor in the forecast's busy hours."""
    hourly, daily = queries.utilization_by("node", "7d"), queries.utilization_by("node", "30d")
    assert [(g["gpu_hours"], g["util_mean"]) for g in daily] == [(g["gpu_hours"], g["util_mean"]) for g in hourly]
    assert hourly[0]["gpu_hours"] == 2 * 40
    assert NodeDaily.objects.aggregate(hours=Sum("hours"))["hours"] == 40


def test_the_migration_recounts_the_daily_rows_whose_hours_are_stored(gaps):
    recount = import_module("inventory.migrations.0012_daily_hours_with_readings").recount
    first_day = GPUDaily.objects.order_by("day").first().day  # retention may have cut it: left as it was
    GPUDaily.objects.update(hours=24)
    with connection.schema_editor() as editor:
        recount(apps, editor)
    assert set(GPUDaily.objects.filter(day=first_day).values_list("hours", flat=True)) == {24}
    for day in GPUDaily.objects.exclude(day=first_day):
        assert day.hours == GPUHourly.objects.filter(gpu=day.gpu_id, util_mean__isnull=False,
                                                     hour__date=day.day).count()


@pytest.mark.parametrize("range_key", ["30d", "90d", "1y"])
def test_usage_days_give_the_figures_of_the_gpu_days(fleet, now, range_key):
    """The daily ranges' groupings read the usage days; summed per GPU from the GPU days, the same rows."""
    for filters in filter_cases(fleet):
        per_gpu = defaultdict(lambda: [0, 0.0, 0.0])
        for row in queries.usage(range_key, filters, per_gpu=True):
            figures = per_gpu[(row["node_id"], row["gpu_model_id"])]
            figures[0] += row["gpus"]
            figures[1] += row["gpu_hours"]
            figures[2] += row["util_hours"]
        grouped = {(row["node_id"], row["gpu_model_id"]):
                   [row["gpus"], row["gpu_hours"], pytest.approx(row["util_hours"])]
                   for row in queries.usage(range_key, filters)}
        assert grouped == per_gpu and grouped, filters


def test_usage_days_are_replaced_and_follow_a_moved_gpu(fleet, now):
    gpu, old, new = fleet["gpus"][0], fleet["gpus"][0].node_id, fleet["gpus"][3].node_id
    before = queries.totals(queries.utilization_by("site", "30d"))
    gpus = {g["key"]: g["gpus"] for g in queries.utilization_by("node", "30d")}
    rollup_usage()  # again: replaced, not added to
    assert queries.totals(queries.utilization_by("site", "30d")) == before
    gpu.node_id, gpu.slot = new, 3
    gpu.save()
    rollup_usage()
    moved = {g["key"]: g["gpus"] for g in queries.utilization_by("node", "30d")}
    assert (moved[old], moved[new]) == (gpus[old] - 1, gpus[new] + 1)
    after = queries.totals(queries.utilization_by("site", "30d"))
    # Its old node's cost was another (and its idle hours are priced at the default now, or no longer).
    unpriced = {"idle_cost": None, "idle_gpu_hours_at_default_cost": None}
    assert {**after, **unpriced} == {**before, **unpriced}


@pytest.mark.parametrize("range_key", ["24h", "7d", "30d", "1y"])
def test_the_hand_written_reads_select_the_rows_the_orm_selects(fleet, now, range_key):
    """``rollup_from`` (the dashboard's reads, written by hand) against ``rollup_rows`` (the ORM): the same rows
    for every filter, per GPU and per usage day, with the GPU joined or not; and the series from them against a
    row-by-row computation."""
    span, rows = queries.get_range(range_key), all_rows(range_key)
    for filters in [*filter_cases(fleet), {"site": None, "team": ""}, {"partition": "no such"}]:
        for per_gpu, join_gpu in ((True, False), (True, True), (False, False)):
            table = span.table(per_gpu)
            sql, params = queries.rollup_from(range_key, filters, per_gpu=per_gpu, connection=connection,
                                              join_gpu=join_gpu)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT r.id {sql}", params)
                by_hand = sorted(row_id for (row_id,) in cursor.fetchall())
            orm = sorted(queries.rollup_rows(range_key, filters, per_gpu=per_gpu).values_list("pk", flat=True))
            assert by_hand == orm, (table.__name__, filters, join_gpu)
            assert orm or filters.get("partition") == "no such"
        per_bucket = defaultdict(lambda: [set(), 0.0, 0.0])
        for gpu, t, hours, util_hours in python_rows(rows, range_key, filters, now):
            per_bucket[t][0].add(gpu.pk)
            per_bucket[t][1] += hours
            per_bucket[t][2] += util_hours
        expected = [(t, round(per_bucket[t][2] / per_bucket[t][1], 2), len(per_bucket[t][0])) if t in per_bucket
                    else (t, None, None) for t in span.buckets(now)]
        assert [(p["time"], p["util_mean"], p["gpus_reporting"])
                for p in queries.utilization_series(range_key, filters)] == expected, filters
