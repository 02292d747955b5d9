"""The capacity model (``inventory.capacity``, issue 34): one count of a scope's GPUs by what they can do now.

The states of a GPU in a node are worked out by hand for every pair; generated fleets (hypothesis) are counted
against a plain loop over the GPUs, and the counts by site, partition and GPU model add up to the fleet's."""

from collections import Counter
from datetime import date

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inventory import capacity
from inventory.models import GPU, LifecycleState, Node
from tests.factories import build_gpu, build_node, make_gpu_model, make_node_model, make_site

L = LifecycleState
pytestmark = pytest.mark.django_db

# (GPU state, node state or None for a GPU in no node) → capacity state, written down before the code ran
# (the arrival rows revised once: deliveries leave a node's GPUs "delivered" after the node enters service).
EXPECTED = {
    (L.IN_SERVICE, L.IN_SERVICE): "in_service",
    (L.IN_SERVICE, L.DEGRADED): "out_of_service",
    (L.DEGRADED, L.IN_SERVICE): "out_of_service",
    (L.IN_REPAIR, L.IN_SERVICE): "out_of_service",
    (L.IN_SERVICE, L.IN_REPAIR): "out_of_service",
    (L.IN_SERVICE, L.BURN_IN): "burn_in",
    (L.BURN_IN, L.BURN_IN): "burn_in",
    (L.DELIVERED, L.IN_SERVICE): "in_service",  # a delivery's GPUs stay "delivered" in a node put in service
    (L.BURN_IN, L.IN_SERVICE): "in_service",
    (L.ORDERED, L.ORDERED): "ordered",
    (L.ORDERED, L.IN_SERVICE): "in_service",
    (L.IN_SERVICE, L.ORDERED): "ordered",
    (L.ORDERED, None): "ordered",
    (L.RETIRED, L.IN_SERVICE): "retired",
    (L.IN_SERVICE, L.RETIRED): "retired",
    (L.DEGRADED, L.RETIRED): "retired",
    (L.IN_REPAIR, L.BURN_IN): "out_of_service",
    (L.IN_SERVICE, None): "spare",
    (L.DEGRADED, None): "out_of_service",
    (L.DELIVERED, None): "spare",
    (L.RETIRED, None): "retired",
}


@pytest.mark.parametrize(("gpu_state", "node_state"), EXPECTED)
def test_a_gpu_serves_only_when_it_and_its_node_do(gpu_state, node_state):
    assert capacity.capacity_state(gpu_state, node_state) == EXPECTED[(gpu_state, node_state)]


def test_says_what_it_counts():
    counts = capacity.Capacity(in_service=303, out_of_service=16, burn_in=17, retired=8)
    assert counts.says() == "303 in service + 16 out of service (degraded or in repair) + 17 delivered or in burn-in"
    assert (counts.owned, counts.total) == (336, 336)
    assert capacity.Capacity().says() == "no GPUs"
    rented = capacity.Capacity(in_service=303, rented=64, rented_until=date(2027, 3, 31), out_of_service=16)
    assert rented.says() == ("303 in service (64 of them rented, until 2027-03-31) + 16 out of service (degraded or "
                             "in repair)")
    assert (rented.owned, rented.total) == (319, 319)  # rented GPUs are a part of those in service
    assert capacity.Capacity(in_service=8, rented=8).says() == "8 in service (8 of them rented)"  # open-ended


STATES = st.sampled_from(L.values)
NODES = st.lists(st.tuples(STATES, st.integers(0, 1), st.sampled_from(["train", "infer"]), st.integers(0, 1),
                           st.lists(STATES, max_size=4)), max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=NODES, spares=st.lists(STATES, max_size=3))
def test_generated_fleets_count_as_a_plain_loop_and_groups_add_up(nodes, spares):
    with transaction.atomic():
        sites, models = [make_site(), make_site()], [make_gpu_model(), make_gpu_model()]
        node_model = make_node_model()
        for node_state, site, partition, model, gpu_states in nodes:
            node = build_node(sites[site], node_model, state=node_state, partition=partition)
            node.save()
            GPU.objects.bulk_create(build_gpu(models[model], node=node, slot=i, state=s)
                                    for i, s in enumerate(gpu_states))
        GPU.objects.bulk_create(build_gpu(models[0], state=s) for s in spares)

        def loop(keep=lambda gpu: True):
            counts = Counter(capacity.capacity_state(g.state, g.node.state if g.node_id else None)
                             for g in GPU.objects.select_related("node") if keep(g))
            return capacity.Capacity(**counts)

        fleet = capacity.count()
        assert fleet == loop()
        assert fleet.total == GPU.objects.exclude(state=L.RETIRED).exclude(node__state=L.RETIRED).count()
        for group, attribute in (("site", lambda g: g.node.site.name if g.node_id else None),
                                 ("partition", lambda g: g.node.partition if g.node_id else None),
                                 ("gpu_model", lambda g: g.gpu_model.name)):
            by = capacity.count_by(group)
            for state in capacity.Capacity.LABELS:
                assert sum(getattr(c, state) for c in by.values()) == getattr(fleet, state)
            for key, counts in by.items():
                assert counts == loop(lambda g, key=key, attribute=attribute: attribute(g) == key)
        each = capacity.count_each(["site", "partition", "gpu_model"])  # every grouping at once
        assert each[None] == fleet and all(each[group] == capacity.count_by(group) for group in each if group)
        for site in sites:
            assert capacity.count(site_id=site.pk) == capacity.count_by("site").get(site.name, capacity.Capacity())
        assert capacity.count(partition="train", gpu_model_id=models[1].pk) == loop(
            lambda g: g.node_id and g.node.partition == "train" and g.gpu_model_id == models[1].pk)
        transaction.set_rollback(True)


def test_one_query_whatever_the_fleet(django_assert_num_queries):
    site, node_model, gpu_model = make_site(), make_node_model(), make_gpu_model()
    for state in (L.IN_SERVICE, L.DEGRADED, L.BURN_IN):
        node = build_node(site, node_model, state=state, partition="train")
        node.save()
        GPU.objects.bulk_create(build_gpu(gpu_model, node=node, slot=i, state=L.IN_SERVICE) for i in range(8))
    with django_assert_num_queries(1):
        counts = capacity.count_by("partition", site_id=site.pk)
    assert counts["train"].as_dict() | {"says": ""} == {
        "in_service": 8, "out_of_service": 8, "burn_in": 8, "ordered": 0, "spare": 0, "retired": 0, "rented": 0,
        "rented_until": None, "owned": 24, "total": 24, "says": ""}
    assert Node.objects.count() == 3


def test_every_grouping_at_once_is_one_query(django_assert_num_queries):
    site, node_model, gpu_model = make_site(name="zrh-1"), make_node_model(), make_gpu_model()
    node = build_node(site, node_model, state=L.IN_SERVICE, partition="train")
    node.save()
    GPU.objects.bulk_create([*(build_gpu(gpu_model, node=node, slot=i, state=L.IN_SERVICE) for i in range(8)),
                             build_gpu(gpu_model, state=L.IN_SERVICE)])
    with django_assert_num_queries(1):
        counts = capacity.count_each(["site", "gpu_model"])
    assert (counts[None].in_service, counts[None].spare) == (8, 1)
    assert {site: gpus.total for site, gpus in counts["site"].items()} == {"zrh-1": 8, None: 1}
    assert counts["gpu_model"][gpu_model.name].total == 9


def test_the_home_page_and_the_api_show_the_same_count(client, manager, manager_api):
    """One figure, one function: the GPU tile, the fleet panel's sites and ``/api/inventory/capacity/`` agree, and
    say what they count. 2 nodes in service (8 GPUs each, one GPU degraded), one degraded node, one in burn-in,
    one retired: 15 + 9 (8 of the degraded node, 1 degraded GPU) + 8 in burn-in; the retired node's 8 not counted."""
    site, node_model, gpu_model = make_site(name="zrh-1"), make_node_model(), make_gpu_model()
    for i, state in enumerate((L.IN_SERVICE, L.IN_SERVICE, L.DEGRADED, L.BURN_IN, L.RETIRED)):
        node = build_node(site, node_model, state=state, partition="train")
        node.save()
        GPU.objects.bulk_create(build_gpu(gpu_model, node=node, slot=slot,
                                          state=L.DEGRADED if (i, slot) == (1, 3) else L.IN_SERVICE)
                                for slot in range(8))
    says = "15 in service + 9 out of service (degraded or in repair) + 8 delivered or in burn-in"
    client.force_login(manager)
    home = client.get("/")
    tile = next(t for t in home.context["tiles"] if t.key == "gpus")
    assert (tile.value, tile.note, tile.warn) == ("32", says, True)
    page = home.content.decode()
    assert f"32 GPUs: {says}." in page
    assert "<tr><td>zrh-1</td><td>15</td><td>9</td><td>8</td><td><b>32</b></td>" in page

    answer = manager_api.get("/api/inventory/capacity/", {"group_by": "site"}).json()
    assert answer["fleet"] == {"in_service": 15, "out_of_service": 9, "burn_in": 8, "ordered": 0, "spare": 0,
                               "retired": 8, "rented": 0, "rented_until": None, "owned": 32, "total": 32,
                               "says": says}
    assert [(g["key"], g["total"]) for g in answer["groups"]] == [("zrh-1", 32)]
    scoped = manager_api.get("/api/inventory/capacity/", {"partition": "train", "gpu_model": gpu_model.pk}).json()
    assert scoped["fleet"]["total"] == 32 and scoped["groups"] == []

    # A plan of the same fleet counts the same GPUs: 15 owned in service, the 9 out of service named, 8 arriving.
    from planning.plans.capacity import baseline
    plan = baseline(date(2027, 1, 1), 2, today=date(2026, 12, 6))
    assert plan.owned == [15.0, 15.0] and plan.incoming == [8.0, 8.0]
    assert plan.sources[0] == "Owned, in service: 15 GPUs."
    assert "Out of service (degraded or in repair): 9 GPUs, not counted" in " ".join(plan.sources)


@pytest.mark.parametrize("query", [{"site": "abc"}, {"site": "999999"}, {"gpu_model": "-1"}, {"group_by": "rack"},
                                   {"partition": "x" * 101}])
def test_bad_parameters_are_field_errors(manager_api, query):
    answer = manager_api.get("/api/inventory/capacity/", query)
    assert answer.status_code == 400 and set(answer.json()) == set(query)


def test_an_account_without_a_role_sees_no_count(db):
    from tests.helpers.accounts import make_user, token_client
    assert token_client(make_user("nobody", None)).get("/api/inventory/capacity/").status_code == 403
