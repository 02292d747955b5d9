"""A plan's analysis from the database: capacity month by month (owned, rented, incoming), demand from the
telemetry history and the planned workloads, the assumptions' sources, the page and the API."""

import html
from datetime import date, timedelta
from decimal import Decimal

import pytest

from inventory.models import GPUDaily, GPUModel, LifecycleState, NodeModel
from planning.models import CapacityPlan, Contract, OrderLine, PlanWorkload, PurchaseOrder
from planning.plans import analysis, capacity
from tests.factories import make_gpu, make_node, make_node_model, make_site

pytestmark = pytest.mark.django_db

TODAY = date(2026, 12, 2)
HOURS = 730


def node_with_gpus(state=LifecycleState.IN_SERVICE, gpus=8, **kw):
    node = make_node(state=state, **kw)
    for _ in range(gpus):
        make_gpu(node=node)
    return node


def test_capacity_counts_owned_rented_and_incoming_gpus():
    site = make_site()
    model = make_node_model()
    node_with_gpus(site=site, node_model=model)  # owned: 8
    node_with_gpus(site=site, node_model=model, state=LifecycleState.DEGRADED)  # out of service: named, not counted
    node_with_gpus(site=site, node_model=model, state=LifecycleState.IN_REPAIR)  # out of service too
    node_with_gpus(site=site, node_model=model, state=LifecycleState.BURN_IN)  # from next month: 8
    rented = node_with_gpus(site=site, node_model=model)  # on a rental that ends mid-February
    rental = Contract.objects.create(kind=Contract.Kind.RENTAL, vendor="Cloud", reference="R-1",
                                     start=date(2026, 6, 1), end=date(2027, 2, 14), rented_gpus=4,
                                     rented_gpu_model=GPUModel.objects.first())
    rental.nodes.add(rented)
    order = PurchaseOrder.objects.create(vendor="NVIDIA", reference="PO-7", site=site, ordered_on=date(2026, 11, 20))
    OrderLine.objects.create(order=order, node_model=model, quantity=2, unit_price=Decimal("300000"))

    cap = capacity.baseline(date(2027, 1, 1), 4, today=TODAY)
    assert cap.owned == [8.0] * 4  # as the capacity model counts them (issue 34)
    # max(4 rented GPUs, 8 in service on its node): 8 until 14 February (14 of 28 days), then none.
    assert cap.rented == pytest.approx([8, 4, 0, 0])
    # Burn-in joins in January; the order's 16 GPUs are due 90 days after 20 November: 18 February.
    assert cap.incoming == pytest.approx([8, 8 + 16 * 11 / 28, 24, 24])
    assert cap.hours[0] == (8 + 8 + 8) * HOURS
    assert "Out of service (degraded or in repair): 16 GPUs, not counted" in " ".join(cap.sources)
    assert any("PO-7" in line for line in cap.sources)


def test_delivered_order_lines_are_not_expected_again():
    from planning.models import Delivery, DeliveryItem

    site, model = make_site(), make_node_model()
    order = PurchaseOrder.objects.create(vendor="NVIDIA", reference="PO-8", site=site, ordered_on=date(2026, 6, 1))
    line = OrderLine.objects.create(order=order, node_model=model, quantity=2, unit_price=Decimal("1"))
    delivery = Delivery.objects.create(order=order)
    DeliveryItem.objects.create(delivery=delivery, line=line, serial="SN-1",
                                node=node_with_gpus(site=site, node_model=model, state=LifecycleState.DELIVERED))
    cap = capacity.baseline(date(2027, 1, 1), 2, today=TODAY)
    # The delivered node (8 GPUs) joins next month; one node (8 GPUs) is still due (its date has passed).
    assert cap.incoming == [16.0, 16.0]



def test_an_orders_gpu_line_for_its_nodes_gpus_is_not_counted_twice():
    # As a bill of materials lists them (and the demo's expansion order): the nodes, and their GPUs on a line of
    # their own so that deliveries record them. 2 nodes of 8 GPUs and the 16 GPUs they carry: 16 GPUs, not 32;
    # GPU lines beyond the nodes' slots count as GPUs of their own.
    site, model = make_site(), make_node_model(gpu_slots=8)
    order = PurchaseOrder.objects.create(vendor="NVIDIA", reference="PO-9", site=site, ordered_on=date(2026, 6, 1))
    OrderLine.objects.create(order=order, node_model=model, quantity=2, unit_price=Decimal("300000"))
    OrderLine.objects.create(order=order, gpu_model=GPUModel.objects.first(), quantity=16, unit_price=Decimal("0"))
    cap = capacity.baseline(date(2027, 1, 1), 2, today=TODAY)
    assert cap.incoming == [16.0, 16.0]
    assert [line for line in cap.sources if "PO-9" in line] == ["Order PO-9: 16 GPUs expected from Jan 2027."]
    OrderLine.objects.create(order=order, gpu_model=GPUModel.objects.first(), quantity=24, unit_price=Decimal("0"))
    assert capacity.baseline(date(2027, 1, 1), 2, today=TODAY).incoming == [40.0, 40.0]

def plan_with_workload(**kw):
    plan = CapacityPlan.objects.create(name="2027", first_month=date(2027, 1, 1), horizon_months=12, **kw)
    PlanWorkload.objects.create(plan=plan, name="70B", start=date(2027, 2, 1),
                                gpu_model=GPUModel.objects.get(name="H100 SXM 80GB"),
                                inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 256, "mfu": 0.4,
                                        "goodput": 1})  # the hand computations' MFU, no interruption allowance
    return plan


def test_workloads_are_spread_over_the_months_they_run():
    plan = plan_with_workload()
    [demand] = analysis.workload_demand(plan, 12)
    # 6 × 70e9 × 2e12 = 8.4e23 FLOPs / (989.4 TFLOP/s × 0.40) = 589,583 GPU-hours; on 256 GPUs 96 days: 4 months.
    assert demand.gpu_hours == pytest.approx(8.4e23 / (989.4e12 * 0.40) / 3600)
    assert demand.months == 4
    assert demand.per_month[0] == 0 and demand.per_month[5] == 0
    assert demand.per_month[1:5] == pytest.approx([demand.gpu_hours / 4] * 4)


def test_analysis_adds_workloads_to_the_forecast_and_recommends():
    site = make_site(power_capacity_kw=Decimal("1000"), pue=Decimal("1.2"))
    model = NodeModel.objects.get(name="DGX H100")
    gpus = [g for _ in range(4) for g in node_with_gpus(site=site, node_model=model).gpus.all()]
    # Three months of history: 32 GPUs at 50 % → 16 busy GPUs (a flat forecast from so short a history).
    days = [date(2026, 9, 1) + timedelta(days=i) for i in range(91)]
    GPUDaily.objects.bulk_create([GPUDaily(gpu=g, day=d, hours=24, util_mean=50.0) for g in gpus for d in days])
    plan = plan_with_workload()
    an = analysis.analyse(plan, today=TODAY)
    assert an.months[0] == date(2027, 1, 1)
    assert an.forecast.method.startswith("mean of 3 month(s)")
    assert an.forecast.mean[0] == pytest.approx(16 * HOURS)  # 16 busy GPUs for a 730-hour month
    assert an.demand[1] == pytest.approx(an.forecast.mean[1] + 589_583 / 4, rel=0.001)
    assert an.capacity.hours[0] == 32 * HOURS
    # 256 GPUs of training against 32 owned: a gap; the node price is DGX H100's list price.
    assert min(an.gaps) < 0
    assert ("Node price", "373,000 USD", "DGX H100's list price") in an.assumption_rows
    assert ("Site to expand", str(site), "the site with the most GPUs in service") in an.assumption_rows
    assert an.recommendation.kind in {"expand", "build", "rent", "hybrid"}
    expand = next(s for s in an.scenarios if s.kind == "expand")
    assert expand.nodes > 0 and expand.lead_months == plan.expand_lead_months


def test_plan_assumptions_win_over_the_fleet():
    site, model = make_site(), make_node_model(list_price=Decimal("1000"))
    plan = CapacityPlan.objects.create(name="p", site=site, node_model=model, node_price=Decimal("250000"),
                                       rental_gpu_hour_cost=Decimal("3.5"))
    rows = {name: (value, source) for name, value, source in analysis.assumptions_for(plan, TODAY)[1]}
    assert rows["Node price"] == ("250,000 USD", "the plan")
    assert rows["Rental"] == ("3.50 USD per GPU-hour", "the plan")
    assert rows["Site to expand"] == (str(site), "the plan")
    plan.node_price = None
    order = PurchaseOrder.objects.create(vendor="X", reference="PO-9", site=site, ordered_on=date(2026, 3, 1))
    OrderLine.objects.create(order=order, node_model=model, quantity=1, unit_price=Decimal("280000"))
    assert analysis.node_price_for(plan, model) == (280000.0, "order PO-9 (2026-03-01)")


def test_analysis_page_and_fragment(manager_client, viewer, django_assert_max_num_queries):
    from django.test import Client

    plan = plan_with_workload()
    node_with_gpus(node_model=NodeModel.objects.get(name="DGX H100"))
    url = f"/planning/capacity-plans/{plan.pk}/analysis/"
    page = manager_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    for text in ("Demand and capacity", "Scenarios over 12 months", "Expand an existing site", "Build a new cluster",
                 "Hybrid: own the base, rent the peak", "Cost per useful GPU-hour", "Meets demand from",
                 "Owned nodes used over the horizon", "Rented GPUs used", "Month by month",
                 'data-source="plan-capacity-chart"', 'id="plan-cost-chart"', "Change the assumptions",
                 "plotly.min.js"):
        assert text in html, text
    viewer_client = Client()
    viewer_client.force_login(viewer)
    fragment = viewer_client.get(url, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert "<html" not in fragment.content.decode() and "Change the assumptions" not in fragment.content.decode()
    for n in range(10):  # more workloads, same queries
        PlanWorkload.objects.create(plan=plan, name=f"w{n}", start=plan.first_month, gpu_model=GPUModel.objects.first(),
                                    inputs={"params_billion": 7, "tokens_billion": 100})
    with django_assert_max_num_queries(20):
        assert manager_client.get(url).status_code == 200
    assert Client().get(url).status_code == 302  # anonymous: to the login page


def test_plan_page_loads_the_analysis(manager_client):
    plan = plan_with_workload()
    html = manager_client.get(plan.get_absolute_url()).content.decode()
    assert f'hx-get="/planning/capacity-plans/{plan.pk}/analysis/"' in html
    assert "plan-changed from:body" in html


def test_analysis_api(viewer_api):
    plan = plan_with_workload()
    node_with_gpus(node_model=NodeModel.objects.get(name="DGX H100"))
    response = viewer_api.get(f"/api/planning/plans/{plan.pk}/analysis/")
    assert response.status_code == 200
    data = response.json()
    assert [s["kind"] for s in data["scenarios"]] == ["expand", "build", "rent", "hybrid"]
    assert [m["month"] for m in data["months"]] == [f"2027-{m:02}" for m in range(1, 13)]
    assert data["workloads"][0]["start"] == "2027-02"
    assert data["workloads"][0]["name"] == "70B" and data["workloads"][0]["months"] == 4
    assert data["recommendation"]["headline"]
    assert all(len(s["capacity_gpu_hours"]) == 12 for s in data["scenarios"])
    assert viewer_api.get("/api/planning/plans/999999/analysis/").status_code == 404


def test_absurd_assumptions_get_field_errors(manager_api):
    response = manager_api.post("/api/planning/plans/", {
        "name": "absurd", "horizon_months": 12, "target_utilization": 500, "expand_lead_months": 100,
        "node_price": "-1", "rental_gpu_hour_cost": "-2"}, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) >= {"target_utilization", "expand_lead_months", "node_price", "rental_gpu_hour_cost"}
    assert "less than or equal to 100" in errors["target_utilization"][0]
    assert not CapacityPlan.objects.filter(name="absurd").exists()
    ok = manager_api.post("/api/planning/plans/", {"name": "fine", "target_utilization": 70, "node_price": "350000"},
                          format="json")
    assert ok.status_code == 201, ok.json()
    assert ok.json()["target_utilization"] == 70 and CapacityPlan.objects.get(name="fine").node_price == 350000


def test_an_unknown_rental_rate_is_shown_unknown_not_0(viewer_api, manager_client, settings):
    settings.RENTAL_GPU_HOUR_COST = 0  # no rental contract and no default: nobody knows what renting costs
    plan = plan_with_workload()
    node_with_gpus(node_model=NodeModel.objects.get(name="DGX H100"))
    rows = {name: (value, source) for name, value, source in analysis.assumptions_for(plan, TODAY)[1]}
    assert rows["Rental"][0] == "unknown"
    data = viewer_api.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    rent = next(s for s in data["scenarios"] if s["kind"] == "rent")
    assert rent["rental"] is None and rent["total_cost"] is None and rent["total_cash"] is None
    assert rent["unmet_gpu_hours"] < 1  # it serves the demand; its cost is what is unknown
    # Only renting starts before the workload: it is the pick, at a cost said unknown.
    assert data["recommendation"]["kind"] == "rent"
    assert data["recommendation"]["reasons"][1].startswith("Rent: cost unknown (no rental rate) over 12 months")
    html = manager_client.get(f"/planning/capacity-plans/{plan.pk}/analysis/").content.decode()
    assert "<strong>unknown</strong>" in html


def test_owned_nodes_sized_to_a_short_peak_are_flagged_alike_on_the_page_and_in_the_api(viewer_api, manager_client):
    # Four months of training on 256 GPUs against a fleet of 8, and nothing after: at 20 per GPU-hour the hybrid
    # owns nodes that arrive (month 5) for the last month of the run and then sit idle.
    plan = plan_with_workload(rental_gpu_hour_cost=Decimal("20"))
    node_with_gpus(node_model=NodeModel.objects.get(name="DGX H100"))
    data = viewer_api.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    scenarios = {s["kind"]: s for s in data["scenarios"]}
    hybrid, rent = scenarios["hybrid"], scenarios["rent"]
    assert data["recommendation"]["kind"] == "hybrid"
    assert 0 < hybrid["nodes"] < scenarios["expand"]["nodes"]  # owns the base, rents the peak above it
    # The owned nodes' GPU-hours from arrival (month 5) to the horizon's end: nodes × 8 GPUs × 730 h × 8 months.
    assert hybrid["owned_from_month"] == "2027-05"  # the plan starts 2027-01
    assert hybrid["owned_gpu_hours"] == hybrid["nodes"] * 8 * HOURS * 8
    assert hybrid["owned_utilization"] == pytest.approx(hybrid["owned_useful_gpu_hours"] / hybrid["owned_gpu_hours"])
    assert hybrid["owned_utilization"] < 0.3 and hybrid["below_min_utilization"]
    assert rent["owned_utilization"] is None and not rent["below_min_utilization"]
    assert rent["rented_useful_gpu_hours"] == pytest.approx(rent["useful_gpu_hours"])
    used = f"{round(hybrid['owned_utilization'] * 100)} %"
    warning = f"Warning: the {hybrid['nodes']} added nodes would be {used} used over the horizon."
    assert data["recommendation"]["headline"].endswith(warning)
    reason = next(r for r in data["recommendation"]["reasons"] if "lowest utilization" in r)
    assert reason.startswith(f"The {hybrid['nodes']} added nodes would be {used} used over the horizon, below the "
                             "plan's lowest utilization of 30 %: sized to a peak of 4 months")
    assert {"name": "Lowest utilization of added nodes", "value": "30 % over the horizon, else flagged",
            "source": "the plan"} in data["assumptions"]

    # The page shows the same figures: the headline and reason, and per scenario the owned and rented use.
    page = html.unescape(manager_client.get(f"/planning/capacity-plans/{plan.pk}/analysis/").content.decode())
    assert data["recommendation"]["headline"] in page and reason in page
    for s in data["scenarios"]:
        if s["owned_utilization"] is not None:
            assert (f"{s['nodes']} nodes <strong>{round(s['owned_utilization'] * 100)} % used</strong><br>"
                    f'<span class="muted">({s["owned_useful_gpu_hours"]:,.0f} of {s["owned_gpu_hours"]:,.0f} '
                    f"GPU-hours from {s['owned_from_month']})</span>") in page
        if s["rented_utilization"] is not None:
            assert (f"{round(s['rented_utilization'] * 100)} %<br><span class=\"muted\">"
                    f"({s['rented_useful_gpu_hours']:,.0f} of {s['rented_gpu_hours']:,.0f} GPU-hours)") in page
    assert page.count('<span class="badge state-rejected">below 30 %</span>') == sum(
        s["below_min_utilization"] for s in data["scenarios"])


def test_the_lowest_utilization_is_set_on_the_form_and_in_the_api(manager_client, manager_api):
    plan = plan_with_workload(rental_gpu_hour_cost=Decimal("20"))
    node_with_gpus(node_model=NodeModel.objects.get(name="DGX H100"))
    form = {"name": plan.name, "first_month": "2027-01", "last_month": "2027-12", "target_utilization": 80,
            "build_lead_months": 9,
            "expand_lead_months": 4, "rent_lead_months": 1, "rental_gpu_hour_cost": "20"}
    edit = f"/planning/capacity-plans/{plan.pk}/edit/"
    assert 'name="min_utilization" value="30"' in manager_client.get(edit).content.decode()
    response = manager_client.post(edit, {**form, "min_utilization": 150})
    assert response.status_code == 200 and "less than or equal to 100" in response.content.decode()
    plan.refresh_from_db()
    assert plan.min_utilization == 30
    assert manager_client.post(edit, {**form, "min_utilization": 5}).status_code == 302
    plan.refresh_from_db()
    assert plan.min_utilization == 5
    assert manager_client.post(edit, form).status_code == 302  # left out: it stays
    plan.refresh_from_db()
    assert plan.min_utilization == 5
    # Only owned nodes used less than 5 % are flagged now: the recommended hybrid's are used more.
    data = manager_api.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    for s in data["scenarios"]:
        assert s["below_min_utilization"] == (s["owned_utilization"] is not None and s["owned_utilization"] < 0.05)
    assert data["recommendation"]["kind"] == "hybrid" and "Warning" not in data["recommendation"]["headline"]

    url = f"/api/planning/plans/{plan.pk}/"
    response = manager_api.patch(url, {"min_utilization": 101}, format="json")
    assert response.status_code == 400 and "less than or equal to 100" in response.json()["min_utilization"][0]
    assert manager_api.patch(url, {"min_utilization": 40}, format="json").json()["min_utilization"] == 40
    plan.refresh_from_db()
    assert plan.min_utilization == 40
