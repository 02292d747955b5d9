"""The capacity model says what is rented, and until when (issue 34): planning registers its rental contracts as a
rental source (``planning.contracts.coverage.rented_nodes``); ``inventory.capacity`` counts the GPUs in service on
the nodes they cover as ``rented`` (a part of ``in_service``), with the earliest end, in the same one query.

The fleet, written down before the code ran: site zrh-1, 3 nodes of 8 GPUs in service (24), a rental contract
covering the first node until ``END``: 24 in service, 8 of them rented until ``END``; total 24."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory import capacity
from inventory.models import GPU, LifecycleState
from planning.contracts.coverage import rented_nodes
from planning.models import Contract
from tests.factories import (
    ContractFactory,
    build_gpu,
    build_node,
    make_gpu_model,
    make_node_model,
    make_rack,
    make_site,
)

L = LifecycleState
pytestmark = pytest.mark.django_db
TODAY = timezone.localdate()
END = TODAY + timedelta(days=300)


def nodes(site, n, state=L.IN_SERVICE, gpu_state=L.IN_SERVICE, **kw):
    node_model, gpu_model = make_node_model(), make_gpu_model()
    made = []
    for _ in range(n):
        node = build_node(site, node_model, state=state, partition="train", **kw)
        node.save()
        GPU.objects.bulk_create(build_gpu(gpu_model, node=node, slot=i, state=gpu_state) for i in range(8))
        made.append(node)
    return made


def rental(end=END, start=TODAY - timedelta(days=30), **covers):
    contract = ContractFactory(kind=Contract.Kind.RENTAL, start=start, end=end, rented_gpus=8)
    for field, objects in covers.items():
        getattr(contract, field).set(objects)
    return contract


def test_planning_registers_its_rentals():
    assert capacity._rental_sources == [rented_nodes]
    capacity.register_rental_source(rented_nodes)  # twice is harmless
    assert capacity._rental_sources == [rented_nodes]


def test_a_rented_node_is_counted_in_service_and_said_rented_until_its_end(client, manager, manager_api):
    site = make_site(name="zrh-1")
    fleet = nodes(site, 3)
    rental(nodes=fleet[:1])
    counts = capacity.count()
    assert (counts.in_service, counts.rented, counts.rented_until, counts.total) == (24, 8, END, 24)
    says = f"24 in service (8 of them rented, until {END:%Y-%m-%d})"
    assert counts.says() == says

    answer = manager_api.get("/api/inventory/capacity/", {"group_by": "site"}).json()
    assert answer["fleet"] == {"in_service": 24, "out_of_service": 0, "burn_in": 0, "ordered": 0, "spare": 0,
                               "retired": 0, "rented": 8, "rented_until": f"{END:%Y-%m-%d}", "owned": 24,
                               "total": 24, "says": says}
    assert [(g["key"], g["rented"], g["rented_until"]) for g in answer["groups"]] == [("zrh-1", 8, f"{END:%Y-%m-%d}")]

    client.force_login(manager)
    tile = next(t for t in client.get("/").context["tiles"] if t.key == "gpus")
    assert (tile.value, tile.note) == ("24", says)


def test_without_a_rental_the_count_says_what_it_did():
    nodes(make_site(), 2)
    nodes(make_site(), 1, state=L.DEGRADED)
    counts = capacity.count()
    assert (counts.rented, counts.rented_until) == (0, None)
    assert counts.says() == "16 in service + 8 out of service (degraded or in repair)"
    assert counts.as_dict()["rented"] == 0 and counts.as_dict()["rented_until"] is None


def test_an_ended_or_future_rental_rents_nothing():
    fleet = nodes(make_site(), 2)
    rental(end=TODAY - timedelta(days=1), start=TODAY - timedelta(days=100), nodes=fleet[:1])
    rental(start=TODAY + timedelta(days=1), nodes=fleet[1:])
    counts = capacity.count()
    assert (counts.in_service, counts.rented, counts.rented_until) == (16, 0, None)
    assert counts.says() == "16 in service"
    # The day is a parameter: the day before it ended, the first one was rented.
    before = capacity.count(day=TODAY - timedelta(days=2))
    assert (before.rented, before.rented_until) == (8, TODAY - timedelta(days=1))


def test_an_open_ended_rental_says_no_end_and_the_earliest_end_wins():
    fleet = nodes(make_site(), 3)
    rental(end=None, nodes=fleet[:1])
    counts = capacity.count()
    assert (counts.rented, counts.rented_until) == (8, None)
    assert counts.says() == "24 in service (8 of them rented)"
    soon = TODAY + timedelta(days=10)
    rental(end=soon, nodes=fleet[1:2])
    rental(end=END, nodes=fleet[2:])
    counts = capacity.count()
    assert (counts.rented, counts.rented_until) == (24, soon)
    assert counts.says() == f"24 in service (24 of them rented, until {soon:%Y-%m-%d})"


def test_a_node_covered_by_two_rentals_stays_until_the_last_ends_and_racks_and_sites_cover_theirs():
    site, other = make_site(name="a"), make_site(name="b")
    rack = make_rack(site)
    in_rack = nodes(site, 1, rack=rack)
    elsewhere = nodes(site, 1)
    at_other = nodes(other, 1)
    rental(end=TODAY + timedelta(days=10), racks=[rack])
    rental(end=END, nodes=in_rack)
    rental(end=None, sites=[other])
    by_site = capacity.count_by("site")
    assert (by_site["a"].in_service, by_site["a"].rented, by_site["a"].rented_until) == (16, 8, END)
    assert (by_site["b"].rented, by_site["b"].rented_until) == (8, None)
    by_node = capacity.count_by("node")
    assert by_node[elsewhere[0].pk].rented == 0 and by_node[at_other[0].pk].rented == 8
    assert capacity.count().rented == 16 and capacity.count().rented_until == END


def test_only_gpus_in_service_are_rented():
    site = make_site()
    degraded = nodes(site, 1, state=L.DEGRADED)
    arriving = nodes(site, 1, state=L.BURN_IN)
    working = nodes(site, 1, gpu_state=L.DEGRADED)
    rental(nodes=degraded + arriving + working)
    counts = capacity.count()
    assert (counts.in_service, counts.out_of_service, counts.burn_in, counts.rented) == (0, 16, 8, 0)
    assert counts.says() == "16 out of service (degraded or in repair) + 8 delivered or in burn-in"


@pytest.mark.parametrize("rented", [1, 5])
def test_one_query_whatever_is_rented(django_assert_num_queries, rented):
    site = make_site()
    fleet = nodes(site, 6)
    rental(nodes=fleet[:rented])
    with django_assert_num_queries(1):
        counts = capacity.count_by("partition", site_id=site.pk)
    assert (counts["train"].in_service, counts["train"].rented, counts["train"].rented_until) == (48, 8 * rented, END)
    with django_assert_num_queries(1):
        assert capacity.count().rented == 8 * rented
