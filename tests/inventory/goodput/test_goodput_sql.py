"""Goodput figures counted by the database (``queries.interruption_sums``: the interruptions grouped and their
lost GPU-hours split over the jobs' nodes in SQL) against a straightforward recomputation in Python on varied
fleets, and the goodput and interruptions APIs in a number of queries that does not grow with the interruptions."""

from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from inventory import costs as inventory_costs
from inventory.goodput import hooks, queries
from inventory.goodput.api.views import InterruptionViewSet
from inventory.goodput.models import Interruption
from inventory.models import GPU, GPUModel, Node, Site, SlurmJobNode
from tests.helpers.goodput import H, degrade, make_varied_fleet, xid

pytestmark = pytest.mark.django_db

GOODPUT, INTERRUPTIONS = "/api/inventory/goodput/", "/api/inventory/interruptions/"
LOST = {"lost_run": "lost_run_gpu_hours", "lost_wait": "lost_wait_gpu_hours", "lost_cost": "lost_cost",
        "lost_at_default": "lost_gpu_hours_at_default_cost"}
COUNTS = {"infrastructure": "interruptions", "user": "user_interruptions", "scheduler": "scheduler_interruptions"}


def priced_at(monkeypatch, costs):
    """Contract costs per GPU-hour for some nodes, as planning's provider would give them."""
    monkeypatch.setattr(inventory_costs, "_providers", [lambda day: costs])


def lost_between(row, begin, end, last=True):
    """The row's lost work inside [begin, end] (``end`` None: until it ended): the last lost / GPUs hours of its run;
    without GPUs all of it in the window it ended in ([begin, end), the ``last`` window's end included)."""
    lost = row.lost_run_gpu_hours or 0.0
    if not row.gpus:
        return lost if end is None or begin <= row.ended_at < end or (last and row.ended_at == end) else 0.0
    overlap = min(row.ended_at, end or row.ended_at) - max(row.ended_at - timedelta(hours=lost / row.gpus), begin)
    return min(lost, max(overlap.total_seconds(), 0.0) / 3600 * row.gpus)


def recomputed(group_by, range_key, filters, now, costs, idle_cost):
    """``{group key: {cause: count, "lost_run", "lost_wait", "lost_cost", "lost_at_default"}}`` read row by row: each
    interruption split over its job's nodes by their GPUs (evenly where it held none; its own node when the job lists
    none)."""
    start = queries.get_range(range_key).start(now)
    windows = queries.months(start, now) if group_by == "month" else {None: (start, None)}
    selected = queries.matching_nodes(filters)
    kept = None if group_by not in queries.NODE_GROUPS or selected is None else set(selected.values_list("pk",
                                                                                                         flat=True))
    parts = defaultdict(list)
    for job_id, node_id, gpus in SlurmJobNode.objects.values_list("job_id", "node_id", "gpus"):
        parts[job_id].append((node_id, gpus))
    sites = dict(Node.objects.values_list("pk", "site_id"))
    models = {}
    for node_id, model_id in GPU.objects.order_by("gpu_model_id").values_list("node_id", "gpu_model_id"):
        models.setdefault(node_id, model_id)

    def group_of(row, node_id):
        if group_by == "month":
            return queries.month_label(row.ended_at)
        if group_by in queries.JOB_FIELDS:
            return getattr(row, queries.JOB_FIELDS[group_by])
        return {"node": node_id, "site": sites.get(node_id), "gpu_model": models.get(node_id)}[group_by]

    found = defaultdict(lambda: defaultdict(float))
    for row in queries.interruptions(filters, start, now):
        found[group_of(row, row.node_id)][row.cause] += 1
        if row.cause != "infrastructure":
            continue
        pieces = parts.get(row.job_id) or [(row.node_id, 1)]
        total = sum(gpus for _, gpus in pieces)
        for node_id, gpus in pieces:
            if kept is not None and node_id not in kept:
                continue
            share = gpus / total if total else 1 / len(pieces)  # evenly where the job held no GPUs
            for label, (begin, end) in windows.items():
                group = found[label if group_by == "month" else group_of(row, node_id)]
                run = lost_between(row, begin, end, label == list(windows)[-1]) * share
                waited = label in (None, queries.month_label(row.ended_at))  # the wait: the month it ended in
                wait = (row.lost_wait_gpu_hours or 0.0) * share if waited else 0.0
                group["lost_run"] += run
                group["lost_wait"] += wait
                group["lost_cost"] += (run + wait) * costs.get(node_id, idle_cost)
                group["lost_at_default"] += 0.0 if node_id in costs else run + wait
    return found


def assert_figures_are_recomputed(group_by, range_key, filters, now, costs, idle_cost):
    expected = recomputed(group_by, range_key, filters, now, costs, idle_cost)
    shown = {g["key"]: g for g in queries.goodput_by(group_by, range_key, filters, now=now)}
    assert set(expected) <= set(shown), (group_by, range_key, filters)
    for key, group in shown.items():
        figures = expected.get(key, {})
        assert {name: group[shown_as] for name, shown_as in COUNTS.items()} == {
            name: int(figures.get(name, 0)) for name in COUNTS}, (group_by, range_key, filters, key)
        # Rounded to hundredths: within half of one of the exact sums.
        for name, shown_as in LOST.items():
            assert abs(group[shown_as] - figures.get(name, 0.0)) <= 0.005 + 1e-6, (
                group_by, range_key, filters, key, name, group[shown_as], figures.get(name))
        lost = figures.get("lost_run", 0.0) + figures.get("lost_wait", 0.0)
        assert abs(group["lost_gpu_hours"] - lost) <= 0.005 + 1e-6


def test_the_databases_figures_are_a_recomputation_row_by_row_on_random_fleets(now, monkeypatch, settings):
    from hypothesis import HealthCheck, given
    from hypothesis import settings as hypothesis_settings
    from hypothesis import strategies as st

    @hypothesis_settings(max_examples=6, derandomize=True, database=None, deadline=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.integers(0, 10_000), st.integers(2, 7), st.integers(1, 50), st.sampled_from(["24h", "7d", "30d", "90d"]),
           st.sampled_from([None, "site", "gpu_model", "team", "partition"]))
    def check(seed, nodes, jobs, range_key, filter_by):
        with transaction.atomic():  # each fleet on its own, rolled back after
            costs = make_varied_fleet(now, seed=seed, nodes=nodes, jobs=jobs, days=100)
            priced_at(monkeypatch, costs)
            filters = {
                None: {}, "team": {"team": "vision"}, "partition": {"partition": "train"},
                "site": {"site": Site.objects.get(name=f"site-{seed}-0").pk},
                "gpu_model": {"gpu_model": GPUModel.objects.get(name=f"model-{seed}-1").pk},
            }[filter_by]
            for group_by in queries.GOODPUT_GROUPS:
                assert_figures_are_recomputed(group_by, range_key, filters, now, costs, settings.IDLE_GPU_HOUR_COST)
            transaction.set_rollback(True)

    check()


def test_a_fleet_with_every_kind_of_piece(now, monkeypatch, settings):
    """One fleet large enough to hold them all at once: jobs on several nodes, on unknown hosts, on nodes holding
    none of their GPUs, on no node; interruptions without GPUs, estimate or node; nodes priced and not."""
    costs = make_varied_fleet(now, seed=7, nodes=9, jobs=400, days=120)
    priced_at(monkeypatch, costs)
    infrastructure = Interruption.objects.filter(cause="infrastructure")
    assert infrastructure.filter(job__allocations__isnull=True).exists()
    assert infrastructure.filter(job__allocations__node__isnull=True).exists()
    assert infrastructure.filter(gpus=0).exists() and infrastructure.filter(node__isnull=True).exists()
    for range_key in ("24h", "30d", "1y"):
        for group_by in queries.GOODPUT_GROUPS:
            assert_figures_are_recomputed(group_by, range_key, {}, now, costs, settings.IDLE_GPU_HOUR_COST)


def test_without_contract_costs_the_figures_are_the_same_recomputation(now, monkeypatch, settings):
    """Every node priced alike: a team's or partition's sums skip the split over the job's nodes (``piece_sums``), and
    are still those of the pieces, 0-GPU jobs and jobs on no known node included."""
    make_varied_fleet(now, seed=7, nodes=9, jobs=400, days=120)
    priced_at(monkeypatch, {})
    for range_key in ("24h", "30d", "1y"):
        for group_by in queries.GOODPUT_GROUPS:
            assert_figures_are_recomputed(group_by, range_key, {}, now, {}, settings.IDLE_GPU_HOUR_COST)


@pytest.mark.parametrize("priced", [True, False])
def test_every_grouping_adds_up_to_the_same_lost_work(now, monkeypatch, priced):
    """No grouping loses or adds lost GPU-hours or cost: a job's pieces share its interruption's whole loss (evenly
    where the job held no GPUs), so teams, partitions, months, sites, GPU models and nodes sum to the same."""
    costs = make_varied_fleet(now, seed=11, nodes=7, jobs=300, days=100)
    priced_at(monkeypatch, costs if priced else {})
    for range_key in ("7d", "90d"):
        totals = {}
        for group_by in queries.GOODPUT_GROUPS:
            groups = queries.goodput_by(group_by, range_key, now=now)
            totals[group_by] = {name: (sum(g[name] for g in groups), len(groups)) for name in (
                "lost_run_gpu_hours", "lost_wait_gpu_hours", "lost_cost", "lost_preemption_gpu_hours",
                "lost_user_gpu_hours")}
        team = totals["team"]
        assert team["lost_run_gpu_hours"][0] > 0
        for group_by, sums in totals.items():
            for name, (total, groups) in sums.items():  # each group rounded to hundredths
                assert abs(total - team[name][0]) <= 0.005 * (groups + team[name][1]) + 1e-6, (group_by, name)


@pytest.mark.parametrize("group_by", queries.GOODPUT_GROUPS)
def test_goodput_api_queries_do_not_grow_with_the_interruptions(now, viewer_api, monkeypatch, group_by,
                                                                django_assert_max_num_queries):
    priced_at(monkeypatch, make_varied_fleet(now, seed=1, nodes=3, jobs=14, days=80))
    url = f"{GOODPUT}?group_by={group_by}&range=90d"
    viewer_api.get(url)  # the token's first use is recorded once
    assert 1 <= Interruption.objects.filter(cause="infrastructure").count() <= 10
    with CaptureQueriesContext(connection) as few:
        assert viewer_api.get(url).status_code == 200
    priced_at(monkeypatch, make_varied_fleet(now, seed=2, nodes=8, jobs=600, days=80))
    assert Interruption.objects.count() >= 200
    with django_assert_max_num_queries(len(few)):
        body = viewer_api.get(url).json()
    assert sum(g["interruptions"] for g in body["groups"]) >= 80


def with_faults():
    """A few of the fleet's interruptions given a fault of each kind (XID event, move to degraded, ECC hour)."""
    rows = list(Interruption.objects.filter(node__isnull=False).order_by("pk")[:3])
    gpu = GPU.objects.filter(node=rows[0].node).first()
    event = xid(gpu, rows[0].ended_at - H, 79)
    rows[0].gpu, rows[0].xid_event, rows[0].fault_ts = gpu, event, event.ts
    rows[1].transition = degrade(rows[1].node, rows[1].ended_at - H)
    rows[1].fault_ts = rows[1].transition.created
    rows[2].reason, rows[2].fault_ts = "ecc_dbe", rows[2].ended_at.replace(minute=0, second=0, microsecond=0)
    Interruption.objects.bulk_update(rows, ["gpu", "xid_event", "transition", "reason", "fault_ts"])


def ticket_per_fault(rows):
    """A ticket finder that reads every field finders may read (``hooks.TICKET_LOOKUPS``)."""
    return {row.pk: {"id": row.pk, "url": f"/support/tickets/{row.node_id}-{row.gpu_id}/"} for row in rows
            if row.fault_ts and (row.xid_event_id or row.transition_id or row.gpu_id or row.node_id)}


@pytest.mark.parametrize("query", [
    "", "?page_size=3&page=2", "?cause=infrastructure&ordering=-lost_gpu_hours,ended_at",
    "?range=30d&ordering=gpus,-ended_at", "?cursor=&page_size=4", "?team=vision&cursor=",
])
def test_interruptions_read_as_values_answer_the_serializers_json(now, viewer_api, monkeypatch, query):
    make_varied_fleet(now, seed=3, nodes=4, jobs=60, days=40)
    with_faults()
    monkeypatch.setattr(hooks, "_ticket_finders", [ticket_per_fault])

    def answer(url, values_list):
        monkeypatch.setattr(InterruptionViewSet, "values_list", values_list)
        response = viewer_api.get(url)
        assert response.status_code == 200, response.content
        return response.json()

    fast, full = (answer(f"{INTERRUPTIONS}{query}", values_list) for values_list in (True, False))
    assert fast == full and full["results"]
    assert {row["fault"]["kind"] for row in full["results"] if row["fault"]} <= {"xid", "degraded", "ecc_dbe"}
    if full.get("next"):
        assert answer(full["next"], True) == answer(full["next"], False)
    if not query:
        assert {row["fault"]["kind"] for row in full["results"] if row["fault"]} == {"xid", "degraded", "ecc_dbe"}
        assert sum(row["ticket"] is not None for row in full["results"]) == 3


@pytest.mark.parametrize("url", [f"{INTERRUPTIONS}?page_size=1000", "/inventory/interruptions/?per_page=300"])
def test_interruptions_are_listed_in_the_same_queries_at_5_and_300_rows(now, viewer_api, viewer_client, url,
                                                                         django_assert_max_num_queries):
    client = viewer_api if url.startswith("/api/") else viewer_client
    make_varied_fleet(now, seed=4, nodes=3, jobs=16, days=40)
    with_faults()
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        response = client.get(url)
    assert response.status_code == 200 and 5 <= Interruption.objects.count() <= 10
    if not url.startswith("/api/"):  # each kind of fault shown, its time included
        assert all(words in response.content.decode() for words in ("XID 79", "degraded at 20", "ECC"))
    make_varied_fleet(now, seed=5, nodes=6, jobs=700, days=40)
    assert Interruption.objects.count() >= 300
    with django_assert_max_num_queries(len(few)):
        response = client.get(url)
    if url.startswith("/api/"):
        assert len(response.json()["results"]) >= 300
