"""The home dashboard tells the last week's story on one screen: every figure checked against hand-computed values
on a small fleet, every tile's link opening a list that shows the same rows, and a constant number of queries."""

import pytest

from inventory.models import LifecycleState as L
from inventory.telemetry.models import GPUHourly
from inventory.telemetry.rollups import rollup_usage
from planning.contracts.models import Contract
from tests.factories import make_gpu, make_node
from tests.helpers.dashboard import contract, hours_of, make_dashboard_fleet


@pytest.fixture
def fleet(db):
    return make_dashboard_fleet()


def tiles(response):
    return {tile.key: tile for tile in response.context["tiles"]}


def test_figures_match_hand_computed_values(manager_client, fleet):
    shown = tiles(manager_client.get("/"))
    # This week: 4 GPUs × 10 h (2 at 80 %, 2 at 20 %) + 1 GPU × 10 h at 5 % = 50 GPU-hours, 2,050 %·h: 41.0 %.
    # The week before: 40 GPU-hours at 40 %: +1.0 point. Idle: 50 − 20.5 = 29.5 GPU-hours × 2.50 = 73.75 USD.
    assert shown["utilization"].value == "41.0 %"
    assert shown["utilization"].note == "+1.0 pts on the 7 days before" and shown["utilization"].warn  # target 70
    assert shown["idle-hours"].value == "30" and shown["idle-hours"].note == "of 50 observed"
    assert shown["idle-cost"].value == "74 USD"
    assert shown["idle-cost"].note == ("at 2.5 USD per GPU-hour (no node in these figures has a cost from its "
                                       "contracts)")
    assert shown["allocated"].note == "no Slurm jobs in 7 days"
    assert shown["stale"].value == "1"
    assert shown["warranty"].value == "1"
    assert shown["stuck"].value == "1" and shown["stuck"].note == "for more than 14 days"  # c; not d nor e
    assert shown["nodes"].value == "5" and shown["gpus"].value == "5"
    assert shown["sla-breached"].value == "1" and shown["hardware-tickets"].value == "1"
    assert shown["renewals"].value == "1"
    assert shown["rentals"].value == "1,000 USD" and shown["spend"].value == "500 USD"
    assert not shown["spend"].warn


def test_a_spare_gpu_counts_in_the_fleet(manager_client, fleet):
    """A GPU in no node is capacity (a spare): the GPU tile and the fleet panel count it with the others (the sites'
    counts, whose spares are keyed None, once replaced the fleet's)."""
    make_gpu(state=L.IN_SERVICE)
    response = manager_client.get("/")
    gpus = tiles(response)["gpus"]
    assert (gpus.value, gpus.note) == ("6", "4 in service + 1 delivered or in burn-in + 1 spare (in no node)")
    assert response.context["capacity"].total == 6


def test_least_used_are_nodes_in_service(manager_client, fleet):
    response = manager_client.get("/")
    least = response.context["least_used"]
    assert [(n["name"], n["util_mean"]) for n in least] == [("node-b", 20.0), ("node-a", 80.0)]  # c is in burn-in
    page = response.content.decode()
    assert f'href="/inventory/nodes/{fleet["b"].pk}/"' in page


def test_a_contract_in_another_currency_is_named_not_added(manager_client, fleet):
    contract(Contract.Kind.SUPPORT, 300, currency="EUR")
    spend = tiles(manager_client.get("/"))["spend"]
    assert spend.value == "500 USD" and "also 300 EUR" in spend.note and spend.warn


def test_idle_cost_says_when_contracts_priced_it(manager_client, fleet, settings):
    from inventory import costs
    provider = costs.register_cost_provider(lambda day: {fleet["a"].pk: 4.0})
    try:
        shown = tiles(manager_client.get("/"))
    finally:
        costs._providers.remove(provider)
    # a: 20 GPU-hours, 4 idle at 4.00 = 16; b and c at 2.50: (20 − 4) + (10 − 0.5) = 25.5 idle = 63.75: 79.75.
    assert shown["idle-cost"].value == "80 USD"
    assert shown["idle-cost"].note == ("at each node's cost per GPU-hour from its contracts; 25.5 of 29.5 idle "
                                       "GPU-hours (nodes without a contract cost) at 2.5 USD per GPU-hour")


def test_every_tile_opens_a_list_with_the_same_rows(manager_client, fleet):
    shown = tiles(manager_client.get("/"))
    stuck = manager_client.get(shown["stuck"].url)
    assert stuck.status_code == 200
    assert [n.hostname for n in stuck.context["table"].data] == ["node-c"]
    warranty = manager_client.get(shown["warranty"].url).context["table"].data
    assert [n.hostname for n in warranty] == ["node-a"]
    breached = manager_client.get(shown["sla-breached"].url).context["table"].data
    assert [t.title for t in breached] == ["ECC errors"]
    hardware = manager_client.get(shown["hardware-tickets"].url).context["table"].data
    assert [t.title for t in hardware] == ["ECC errors"]
    stale = manager_client.get(shown["stale"].url).context["table"].data
    assert [s.name for s in stale] == ["prom"]
    renewals = manager_client.get(shown["renewals"].url).context["table"].data
    assert [c.reference for c in renewals] == ["C-1"]
    rentals = manager_client.get(shown["rentals"].url).context["table"].data
    assert sum(c.monthly_cost for c in rentals) == 1000
    others = manager_client.get(shown["spend"].url).context["table"].data
    assert sum(c.monthly_cost for c in others) == 500
    for key in ("utilization", "idle-hours", "idle-cost", "allocated", "nodes", "gpus"):
        assert manager_client.get(shown[key].url).status_code == 200, key


def test_ticket_counts_follow_what_the_user_may_read(client, fleet):
    from portal.roles import RESEARCHER
    from tests.helpers.accounts import make_user
    client.force_login(make_user("rita", RESEARCHER))  # reads only her own and her teams' tickets
    shown = tiles(client.get("/"))
    assert "sla-breached" not in shown or shown["sla-breached"].value == "0"


def add_nodes(site, n, start):
    rows = []
    for i in range(n):
        node = make_node(site=site, hostname=f"more-{start + i}", state=L.IN_SERVICE)
        for slot in range(2):
            rows += hours_of(make_gpu(node=node, slot=slot, state=L.IN_SERVICE), 30 + i, first=2)
    GPUHourly.objects.bulk_create(rows)
    rollup_usage()


def test_queries_do_not_grow_with_the_fleet(manager_client, fleet, django_assert_max_num_queries):
    manager_client.get("/")  # content types and catalog caches warm
    site = fleet["a"].site
    add_nodes(site, 2, 0)
    with django_assert_max_num_queries(60) as small:
        manager_client.get("/")
    add_nodes(site, 20, 100)
    with django_assert_max_num_queries(len(small.captured_queries)):
        manager_client.get("/")
