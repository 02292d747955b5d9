"""Costs per GPU-hour on hand-computed cases (see the worked examples in ``planning.contracts.costs``), and the
utilization dashboards' idle cost using them through ``inventory.costs``."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import override_settings
from django.utils import timezone

from inventory import costs as inventory_costs
from inventory.models import GPUHourly, LifecycleState
from inventory.telemetry import queries
from inventory.telemetry.rollups import floor_hour, rollup_usage
from planning.contracts import costs
from planning.models import Contract
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("energy")]
TODAY = timezone.localdate()
D = timedelta(days=1)


@pytest.fixture
def energy(settings):
    settings.ENERGY_PRICE_PER_KWH = 0.20
    settings.DEFAULT_PUE = 1.3


def contract(kind, covers=(), start=TODAY - 30 * D, end=None, **kw):
    obj = Contract.objects.create(kind=kind, vendor="Acme", reference=f"R-{Contract.objects.count()}", start=start,
                                  end=end, **kw)
    for site in covers:
        obj.sites.add(site)
    return obj


def dgx_nodes(site, count, gpus=8):
    """``count`` nodes of 10.2 kW with ``gpus`` GPUs each; with fewer than 8, the first node also holds a retired
    GPU, which counts for nothing."""
    node_model, gpu_model = make_node_model(max_power_w=10200), make_gpu_model()
    nodes = [make_node(site=site, node_model=node_model) for _ in range(count)]
    for node in nodes:
        for _ in range(gpus):
            make_gpu(node=node, gpu_model=gpu_model)
    if gpus < node_model.gpu_slots:
        make_gpu(node=nodes[0], gpu_model=gpu_model, state=LifecycleState.RETIRED)
    return nodes


def test_owned_node_amortisation_power_and_support():
    site = make_site()
    nodes = dgx_nodes(site, 4)  # 32 GPUs
    purchase = contract(Contract.Kind.PURCHASE, [site], one_off_cost=Decimal("1200000"), depreciation_months=48)
    support = contract(Contract.Kind.SUPPORT, [site], end=TODAY + 300 * D, monthly_cost=Decimal("11680"))
    # 1,200,000 / (48 × 730 × 32) = 1.070205...; 10.2 kW / 8 × 1.3 × 0.20 = 0.3315; 11,680 / (730 × 32) = 0.50.
    expected = Decimal("1.0702") + Decimal("0.3315") + Decimal("0.5000")
    by_node = costs.gpu_hour_cost_by_node()
    assert by_node == {node.pk: expected for node in nodes}
    breakdown = costs.node_cost_breakdown(nodes[0])
    assert [(p.label, p.contract, round(p.amount, 4)) for p in breakdown["components"]] == [
        ("Amortisation", purchase, Decimal("1.0702")), ("Power", None, Decimal("0.3315")),
        ("Support", support, Decimal("0.5000"))]
    assert breakdown["total"] == expected
    assert costs.contract_gpu_hour_cost(purchase) == Decimal("1.0702")
    assert costs.gpu_hour_cost_by_site() == {site.pk: expected}


def test_amortisation_stops_after_the_depreciation_period_and_ended_support_stops():
    site = make_site()
    (node,) = dgx_nodes(site, 1)
    contract(Contract.Kind.PURCHASE, [site], start=TODAY - 400 * D, one_off_cost=Decimal("300000"),
             depreciation_months=12)
    contract(Contract.Kind.SUPPORT, [site], start=TODAY - 400 * D, end=TODAY - D, monthly_cost=Decimal("5000"))
    assert costs.gpu_hour_cost_by_node() == {node.pk: Decimal("0.3315")}  # power only


def test_rented_nodes_cost_the_rate_or_the_monthly_cost_over_the_rented_gpus():
    cloud, colo = make_site(), make_site()
    (rented,) = dgx_nodes(cloud, 1)
    (leased,) = dgx_nodes(colo, 1)
    rental = contract(Contract.Kind.RENTAL, [cloud], end=TODAY + 50 * D, gpu_hour_cost=Decimal("2.10"))
    lease = contract(Contract.Kind.RENTAL, [colo], end=TODAY + 50 * D, monthly_cost=Decimal("98112"), rented_gpus=64)
    # 98,112 / (730 × 64) = 2.10
    assert costs.gpu_hour_cost_by_node() == {rented.pk: Decimal("2.1000"), leased.pk: Decimal("2.1000")}
    assert costs.contract_gpu_hour_cost(rental) == costs.contract_gpu_hour_cost(lease) == Decimal("2.1000")


def test_site_cost_is_weighted_by_gpus_and_unknown_nodes_are_left_out():
    site = make_site()
    big = dgx_nodes(site, 2)  # 16 GPUs
    (small,) = dgx_nodes(site, 1, gpus=4)
    make_node(site=site)  # no GPUs: no cost per GPU-hour
    elsewhere = dgx_nodes(make_site(), 1)  # no contract: unknown
    for node in big:
        c = contract(Contract.Kind.RENTAL, end=TODAY + 50 * D, gpu_hour_cost=Decimal("1.90"))
        c.nodes.add(node)
    c = contract(Contract.Kind.RENTAL, end=TODAY + 50 * D, gpu_hour_cost=Decimal("2.50"))
    c.nodes.add(small)
    # (16 × 1.90 + 4 × 2.50) / 20 = 2.02
    assert costs.gpu_hour_cost_by_site() == {site.pk: Decimal("2.0200")}
    assert elsewhere[0].pk not in costs.gpu_hour_cost_by_node()


def test_costs_take_a_constant_number_of_queries(django_assert_max_num_queries):
    site = make_site()
    dgx_nodes(site, 2)
    contract(Contract.Kind.PURCHASE, [site], one_off_cost=Decimal("600000"))
    contract(Contract.Kind.SUPPORT, [site], end=TODAY + 300 * D, monthly_cost=Decimal("1000"))
    with django_assert_max_num_queries(5) as few:
        costs.gpu_hour_cost_by_node()
    dgx_nodes(site, 3)
    for _ in range(3):
        contract(Contract.Kind.SUPPORT, [make_site()], end=TODAY + 300 * D, monthly_cost=Decimal("1000"))
    with django_assert_max_num_queries(len(few)):
        costs.gpu_hour_cost_by_node()


def test_the_registry_is_empty_without_providers(monkeypatch):
    monkeypatch.setattr(inventory_costs, "_providers", [])
    assert inventory_costs.gpu_hour_costs() == {}
    inventory_costs.register_cost_provider(costs.node_gpu_hour_costs)
    inventory_costs.register_cost_provider(costs.node_gpu_hour_costs)
    assert inventory_costs._providers == [costs.node_gpu_hour_costs]


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_idle_cost_uses_the_contract_cost_where_known(monkeypatch):
    now = floor_hour(timezone.now()) + timedelta(minutes=30)
    monkeypatch.setattr(timezone, "now", lambda: now)
    owned, other = make_site(name="owned"), make_site(name="other")
    node_model = make_node_model(max_power_w=10200)
    a = make_node(site=owned, node_model=node_model, state=LifecycleState.IN_SERVICE)
    b = make_node(site=other, node_model=node_model)
    gpu_a, gpu_b = make_gpu(node=a), make_gpu(node=b)
    contract(Contract.Kind.RENTAL, [owned], end=TODAY + 50 * D, gpu_hour_cost=Decimal("3.00"))
    GPUHourly.objects.bulk_create([
        GPUHourly(gpu=gpu_a, hour=floor_hour(now) - timedelta(hours=1), util_mean=25, samples=60),
        GPUHourly(gpu=gpu_b, hour=floor_hour(now) - timedelta(hours=1), util_mean=25, samples=60),
    ])
    rollup_usage()
    sites = {g["name"]: g for g in queries.utilization_by("site", "24h")}
    # 0.75 idle GPU-hours each: at the rental's 3.00 (2.25), and at the default 2.0 (1.50).
    assert (sites["owned"]["idle_cost"], sites["other"]["idle_cost"]) == (2.25, 1.5)
    assert queries.totals(list(sites.values()))["idle_cost"] == 3.75


def test_the_hand_written_active_contracts_are_the_querysets():
    """``active_contracts_list`` (read by hand for the utilization figures) selects and orders what
    ``active_contracts`` does: a contract starting or ending on the day is active on it, one without an end stays
    active, one not started yet or ended the day before is not; by start (latest first), vendor, reference."""
    from planning.contracts.coverage import active_contracts, active_contracts_list

    kind = Contract.Kind
    for number, (k, start, end, vendor) in enumerate([
        (kind.RENTAL, TODAY - 10 * D, None, "Zeta"), (kind.RENTAL, TODAY - 10 * D, TODAY, "Acme"),
        (kind.SUPPORT, TODAY, TODAY + 10 * D, "Beta"), (kind.PURCHASE, TODAY + D, None, "Acme"),
        (kind.PURCHASE, TODAY - 40 * D, TODAY - D, "Acme"), (kind.EXPANSION, TODAY - 5 * D, None, "Acme"),
    ]):
        Contract.objects.create(kind=k, vendor=vendor, reference=f"R-{number}", start=start, end=end)
    for day in (None, TODAY - D, TODAY + D, TODAY + 11 * D):
        for kinds in ((), [kind.RENTAL], [kind.PURCHASE, kind.SUPPORT, kind.EXPANSION]):
            assert active_contracts_list(day, kinds) == list(active_contracts(day, kinds)), (day, kinds)
    assert [c.vendor for c in active_contracts_list()] == ["Beta", "Acme", "Acme", "Zeta"]
