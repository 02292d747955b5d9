"""A plan's bill of materials filled from its build / expand / hybrid scenario (``planning.plans.bom``): quantities and
prices computed by hand on a small plan, the total equal to the scenario's capex, the refusals, the plan page's
button and confirmation, and the API action; the approved plan's ``/bom/`` then serves the lines."""

from datetime import date
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from inventory.models import GPU, GPUModel, LifecycleState, NodeModel
from planning.models import CapacityPlan, PlanItem, PlanWorkload
from planning.plans import analysis, bom
from planning.plans import workflow as plans
from portal.roles import MANAGER, PROCUREMENT
from tests.factories import make_attachment, make_fabric, make_gpu, make_node, make_node_model, make_site, make_switch
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db

TODAY = date(2026, 12, 2)
PLANS = "/api/planning/plans/"


@pytest.fixture(autouse=True)
def shares(settings):
    """The scenario's price assumptions, fixed so the hand computations below hold whatever the environment."""
    settings.NETWORK_SHARE_OF_NODE_PRICE = 0.15
    settings.STORAGE_SHARE_OF_NODE_PRICE = 0.10
    settings.BUILD_COST_PER_KW = 10000.0
    settings.COST_CURRENCY = "USD"
    settings.RENTAL_GPU_HOUR_COST = 2.50


@pytest.fixture
def fleet(db):
    """A site with two in-service nodes of 8 H100s, cabled with 8 InfiniBand ports each to QM9700 leaves that
    have 64 ports, 32 of them up to the spine."""
    site = make_site(name="Zurich", power_capacity_kw=Decimal("2000"))
    model = make_node_model(name="HGX H100 test", gpu_slots=8, max_power_w=10200, height_u=8)
    h100 = GPUModel.objects.get(name="H100 SXM 80GB")
    fabric = make_fabric(name="ib-zurich", site=site)
    leaf = make_switch(fabric=fabric, site=site, model="NVIDIA QM9700", ports=64, uplinks=32)
    make_switch(fabric=fabric, site=site, model="NVIDIA QM9700", ports=64, uplinks=32)
    for _ in range(2):
        node = make_node(site=site, node_model=model, state=LifecycleState.IN_SERVICE)
        for _ in range(8):
            make_gpu(node=node, gpu_model=h100, state=LifecycleState.IN_SERVICE)
        make_attachment(node=node, fabric=fabric, switch=leaf, ports=8, speed_gbps=400)
    return {"site": site, "node_model": model, "h100": h100}


def make_plan(fleet, name="2027 training", **kw):
    fields = {"site": fleet["site"], "node_model": fleet["node_model"], "node_price": Decimal("250000"), **kw}
    plan = CapacityPlan.objects.create(name=name, first_month=date(2027, 1, 1), horizon_months=12, **fields)
    PlanWorkload.objects.create(plan=plan, name="70B", start=date(2027, 2, 1), gpu_model=fleet["h100"],
                                inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 256,
                                        "mfu": 0.4, "goodput": 1})
    return plan


# The hand computation for make_plan on the fleet (no telemetry history: demand is the workload alone; MFU and
# goodput given, not the calibrated defaults):
# 6 × 70e9 parameters × 2e12 tokens = 8.4e23 FLOPs / (989.4 TFLOP/s × MFU 0.40) / 3600 = 589,583 GPU-hours;
# on 256 GPUs 96 days: 4 months of 147,396 GPU-hours. At 80 % of 730 h that is 252.4 GPUs, against 16 in
# service: 236.4 GPUs short at the peak → 236.4 / 8 = 29.6 → 30 nodes.
NODES = 30
NODE_PRICE = Decimal("250000.00")
SWITCHES = 8  # 30 nodes × 8 ports = 240 ports / 32 node ports per leaf = 7.5 → 8
NETWORK = Decimal("1125000.00")  # 30 × 250,000 × 15 %
STORAGE = Decimal("750000.00")  # 30 × 250,000 × 10 %
FACILITY = Decimal("3060000.00")  # 30 × 10.2 kW = 306 kW × 10,000 per kW


def rows(bill):
    return [(line.item, line.quantity, line.unit_cost, line.total) for line in bill.lines]


def test_expand_scenario_lines_computed_by_hand(fleet):
    plan = make_plan(fleet)
    bill = bom.derive(plan, "expand", today=TODAY)
    nodes, gpus, switches, storage = bill.lines
    assert (nodes.node_model, nodes.quantity, nodes.unit_cost) == (fleet["node_model"], NODES, NODE_PRICE)
    assert "peak shortfall 236.4 GPUs at 80% utilization / 8 per node, rounded up" in nodes.description
    assert "8 × H100 SXM 80GB included" in nodes.description
    # The node price carries its GPUs: their line costs nothing, and is there for the order's deliveries.
    assert (str(gpus.gpu_model), gpus.quantity, gpus.unit_cost) == ("H100 SXM 80GB", NODES * 8, Decimal("0.00"))
    assert "serial and UUID" in gpus.description
    assert (switches.quantity, switches.unit_cost, switches.total) == (SWITCHES, NETWORK / SWITCHES, NETWORK)
    assert switches.description.startswith("Leaf switch NVIDIA QM9700, 64 ports (32 to nodes; as on ib-zurich): "
                                           "30 nodes × 8 ports (as cabled now) = 240 / 32 → 8; 15% of the node "
                                           "price with cables and optics")
    # 256 GPUs × 989.4 TFLOP/s × 0.40 / (6 × 70e9) = 241,225 tokens/s × 4 bytes = 0.96 MB/s; checkpoints of
    # 14 bytes × 70e9 = 980 GB in 5 minutes = 3.3 GB/s; 2e12 tokens × 4 bytes = 8 TB of data + 0.98 TB.
    assert (storage.quantity, storage.unit_cost) == (1, STORAGE)
    assert ("1.0 MB/s read at peak (1 workload(s) at once), 3.3 GB/s checkpoint writes, 9.0 TB for data and a "
            "checkpoint each") in storage.description
    assert bill.total == NODES * NODE_PRICE + NETWORK + STORAGE == Decimal("9375000.00")
    assert all(len(line.description) <= bom.DESCRIPTION_LENGTH for line in bill.lines)


@pytest.mark.parametrize("kind", ["expand", "build", "hybrid"])
def test_total_equals_the_scenarios_capex(fleet, kind):
    # Renting dear: the hybrid owns nodes too; a new cluster built in a month, before the run starts.
    plan = make_plan(fleet, rental_gpu_hour_cost=Decimal("20"), build_lead_months=1)
    an = analysis.analyse(plan, today=TODAY)
    scenario = next(s for s in an.scenarios if s.kind == kind)
    bill = bom.derive(plan, kind, an=an)
    assert scenario.nodes == NODES if kind != "hybrid" else 0 < scenario.nodes <= NODES
    assert bill.lines[0].quantity == scenario.nodes
    assert float(bill.total) == pytest.approx(scenario.capex, abs=0.01)
    assert bill.capex == scenario.capex


def test_build_adds_the_facility(fleet):
    # Built in 9 months (the default), the cluster arrives after the four-month run: it is sized from its arrival,
    # so it buys nothing. Built in one month, it is the run's 30 nodes and the facility.
    with pytest.raises(ValidationError, match="The build scenario adds no nodes"):
        bom.derive(make_plan(fleet, name="late"), "build", today=TODAY)
    bill = bom.derive(make_plan(fleet, build_lead_months=1), "build", today=TODAY)
    facility = bill.lines[-1]
    assert (facility.quantity, facility.unit_cost) == (1, FACILITY)
    assert "30 nodes × 10.2 kW = 306.0 kW of IT load × 10,000 USD per kW" in facility.description
    assert bill.total == Decimal("9375000.00") + FACILITY


def test_without_recorded_cabling_one_port_per_gpu_and_a_default_switch(fleet):
    model = make_node_model(name="Bare", gpu_slots=4, max_power_w=5000, list_price=Decimal("100000"))
    plan = make_plan(fleet, node_model=model, site=make_site(name="Empty"))
    bill = bom.derive(plan, "expand", today=TODAY)
    nodes, gpus, switches, _ = bill.lines
    # 236.4 GPUs short / 4 per node = 59.1 → 60 nodes × 4 ports (one per GPU) = 240 / 32 = 7.5 → 8 switches.
    # No node of this model has GPUs yet: they are the GPU model the plan's workload is sized for.
    assert nodes.quantity == 60 and "4 × H100 SXM 80GB included" in nodes.description
    assert (str(gpus.gpu_model), gpus.quantity, gpus.total) == ("H100 SXM 80GB", 240, 0)
    assert switches.quantity == 8
    assert "64-port switch, 64 ports (32 to nodes; none recorded)" in switches.description
    assert "(one per GPU)" in switches.description
    assert any("No switch is recorded" in note for note in bill.notes)


def test_recommended_scenario_by_default(fleet):
    # Rented GPUs at the default 2.50 per GPU-hour beat buying 30 nodes for a four-month run: nothing to buy.
    plan = make_plan(fleet)
    assert analysis.analyse(plan, today=TODAY).recommendation.kind == "rent"
    with pytest.raises(ValidationError, match="Renting buys nothing"):
        bom.derive(plan, today=TODAY)
    # At 20 per GPU-hour renting loses; expanding alone arrives after the workload starts, so the hybrid (rent
    # until the nodes arrive) is recommended: the bill is its nodes, the expand scenario's.
    dear = make_plan(fleet, name="dear rental", rental_gpu_hour_cost=Decimal("20"))
    assert analysis.analyse(dear, today=TODAY).recommendation.kind == "hybrid"
    bill = bom.derive(dear, today=TODAY)
    assert bill.kind == "hybrid" and bill.total == Decimal("9375000.00")


def test_refusals(fleet):
    plan = make_plan(fleet)
    with pytest.raises(ValidationError, match="Renting buys nothing"):
        bom.derive(plan, "rent", today=TODAY)
    with pytest.raises(ValidationError, match="Unknown scenario 'shop'"):
        bom.derive(plan, "shop", today=TODAY)
    idle = CapacityPlan.objects.create(name="idle", site=fleet["site"], node_model=fleet["node_model"],
                                       node_price=Decimal("1"))
    with pytest.raises(ValidationError, match="No new capacity needed within the horizon"):
        bom.derive(idle, today=TODAY)
    with pytest.raises(ValidationError, match="adds no nodes"):
        bom.derive(idle, "expand", today=TODAY)
    unpriced = make_plan(fleet, name="unpriced", node_model=make_node_model(list_price=None))
    unpriced.node_price = None
    unpriced.save()
    with pytest.raises(ValidationError, match="No node price is known"):
        bom.derive(unpriced, "expand", today=TODAY)
    tight = make_plan(fleet, name="tight", site=make_site(power_capacity_kw=Decimal("100")))
    with pytest.raises(ValidationError, match="expand scenario is not possible"):
        bom.derive(tight, "expand", today=TODAY)


def test_no_node_model_is_refused(db):
    NodeModel.objects.update(list_price=None)  # no fleet, no priced catalog model: nothing to buy from
    plan = CapacityPlan.objects.create(name="empty", horizon_months=12, node_price=Decimal("250000"),
                                       expand_lead_months=0)
    PlanWorkload.objects.create(plan=plan, name="70B", start=plan.first_month, gpu_model=GPUModel.objects.get(
        name="H100 SXM 80GB"), inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 256,
                                        "mfu": 0.4, "goodput": 1})
    with pytest.raises(ValidationError, match="No node model is known"):
        bom.derive(plan, "expand", today=TODAY)


def test_fill_replaces_every_line_and_keeps_the_history(fleet):
    plan = make_plan(fleet)
    hand = PlanItem.objects.create(plan=plan, description="Cables", quantity=10, unit_cost=Decimal("50"))
    bill, replaced = bom.fill(plan, "expand", today=TODAY)
    assert replaced == 1
    items = list(plan.items.order_by("pk"))
    assert [(i.what, i.quantity, i.unit_cost, i.currency) for i in items] == [
        (line.item, line.quantity, line.unit_cost, "USD") for line in bill.lines]
    assert sum(i.total for i in items) == Decimal("9375000.00")
    removed = PlanItem.history.filter(id=hand.pk, history_type="-").get()
    assert removed.history_change_reason == "Bill of materials from the expand scenario"
    assert PlanItem.history.filter(plan_id=plan.pk, history_type="+").count() == 5  # the hand line, then 4


def test_fill_refuses_a_plan_that_is_not_a_draft(fleet):
    plan = make_plan(fleet)
    PlanItem.objects.create(plan=plan, description="Cables", quantity=1, unit_cost=Decimal("1"))
    plans.submit(plan, make_user("ana", MANAGER))
    with pytest.raises(ValidationError, match="only a draft plan can be changed"):
        bom.fill(plan, "expand", today=TODAY)
    assert plan.items.count() == 1


# --- the plan page ----------------------------------------------------------------------------------------


def page(plan, suffix=""):
    return f"/planning/capacity-plans/{plan.pk}/{suffix}"


def messages_of(response):
    return " ".join(str(m) for m in response.context["messages"])


def test_page_buttons_confirmation_and_fill(fleet, manager_client, manager):
    plan = make_plan(fleet, owner=manager, build_lead_months=1)
    PlanItem.objects.create(plan=plan, description="Cables", quantity=10, unit_cost=Decimal("50"))
    analysis_part = manager_client.get(page(plan, "analysis/"), HTTP_HX_REQUEST="true").content.decode()
    fill = page(plan, "bom/fill/")
    for kind in ("expand", "build"):
        assert f'href="{fill}?scenario={kind}">Fill the bill of materials from the {kind} scenario</a>' in analysis_part
    # Renting at 2.50 per GPU-hour is cheaper than owning any node for a four-month run: the hybrid owns none.
    assert "?scenario=rent" not in analysis_part and "?scenario=hybrid" not in analysis_part
    with pytest.raises(ValidationError, match="The hybrid scenario owns no nodes: renting all the shortfall is "
                                              "cheapest"):
        bom.derive(plan, "hybrid", today=TODAY)

    confirm = manager_client.get(f"{fill}?scenario=expand")
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert ("This replaces all 1 line of the bill of materials, hand-entered ones included, with the 4 lines "
            "below; the replaced lines stay in the plan's history.") in text
    assert "9,375,000.00" in text and "10 × Cables" in text and 'value="expand"' in text
    assert "<td>H100 SXM 80GB</td>" in text  # the GPU line names its catalog model
    assert plan.items.count() == 1  # GET only shows

    response = manager_client.post(fill, {"scenario": "expand"}, follow=True)
    assert response.redirect_chain[-1][0].endswith(f"{page(plan)}#bill-of-materials")
    assert ("Filled the bill of materials from the expand scenario: 4 lines, 9,375,000.00 USD (the scenario's "
            "capex); replaced 1 line(s), which stay in the history.") in messages_of(response)
    assert sum(i.total for i in plan.items.all()) == Decimal("9375000.00")
    text = response.content.decode()
    assert "30 nodes: peak shortfall 236.4 GPUs" in text  # the derivation is shown with the line
    assert "Bill of materials from the expand scenario" in text  # the history table names the change


def test_page_refusals(fleet, manager_client, manager, viewer):
    plan = make_plan(fleet, owner=manager)
    fill = page(plan, "bom/fill/")
    response = manager_client.post(fill, {"scenario": "rent"}, follow=True)
    assert "Renting buys nothing" in messages_of(response)
    response = manager_client.get(f"{fill}?scenario=rent", follow=True)
    assert "Renting buys nothing" in messages_of(response)

    viewer_client = Client()
    viewer_client.force_login(viewer)
    assert viewer_client.get(f"{fill}?scenario=expand").status_code == 403
    assert viewer_client.post(fill, {"scenario": "expand"}).status_code == 403
    assert "bom-fill-buttons" not in viewer_client.get(page(plan, "analysis/"), HTTP_HX_REQUEST="true").content.decode()

    PlanItem.objects.create(plan=plan, description="Cables", quantity=1, unit_cost=Decimal("1"))
    plans.submit(plan, manager)
    response = manager_client.post(fill, {"scenario": "expand"}, follow=True)
    assert "only a draft plan can be changed" in messages_of(response)
    assert [i.what for i in plan.items.all()] == ["Cables"]
    analysis_part = manager_client.get(page(plan, "analysis/"), HTTP_HX_REQUEST="true").content.decode()
    assert "bom-fill-buttons" not in analysis_part


def test_page_needs_csrf(fleet, manager):
    plan = make_plan(fleet, owner=manager)
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    assert client.post(page(plan, "bom/fill/"), {"scenario": "expand"}).status_code == 403
    assert not plan.items.exists()


# --- the API ----------------------------------------------------------------------------------------------


def test_api_fill_then_approved_plan_serves_the_lines(fleet, manager, manager_api):
    plan = make_plan(fleet, owner=manager, build_lead_months=1)
    response = manager_api.post(f"{PLANS}{plan.pk}/bom/fill/", {"scenario": "build"}, format="json")
    assert response.status_code == 200, response.data
    data = response.json()
    assert data["scenario"] == "build" and data["replaced_lines"] == 0
    assert data["scenario_capex"] == pytest.approx(12_435_000)
    assert data["totals"] == {"USD": "12435000.00"}
    assert [(line["item"][:11], line["quantity"], line["unit_cost"]) for line in data["lines"]] == [
        ("HGX H100 te", 30, "250000.00"), ("H100 SXM 80", 240, "0.00"), ("Leaf switch", 8, "140625.00"),
        ("Storage for", 1, "750000.00"), ("New cluster", 1, "3060000.00")]

    plans.submit(plan, manager)
    second = make_user("mia", MANAGER)
    plans.approve(plan, second, "go")
    served = token_client(second).get(f"{PLANS}{plan.pk}/bom/")
    assert served.status_code == 200
    assert served.json()["lines"] == data["lines"] and served.json()["totals"] == {"USD": "12435000.00"}

    # Procurement orders the bill as it is, and the vendor's delivery records a node and one of its GPUs by UUID.
    procurement = token_client(make_user("pat", PROCUREMENT))
    lines = [{key: line[key] for key in ("node_model", "gpu_model", "description", "quantity")}
             | {"unit_price": line["unit_cost"]} for line in served.json()["lines"]]
    order = procurement.post("/api/planning/purchase-orders/", {
        "plan": plan.pk, "vendor": "Supermicro", "reference": "PO-BOM", "site": plan.site_id, "lines": lines,
    }, format="json")
    assert order.status_code == 201, order.data
    node_line, gpu_line = order.data["lines"][0]["id"], order.data["lines"][1]["id"]
    delivery = procurement.post("/api/planning/deliveries/", {"order": order.data["id"], "items": [
        {"line": node_line, "serial": "N-1", "hostname": "zrh-new-001"},
        {"line": gpu_line, "serial": "G-1", "uuid": "GPU-0000-0001", "node": "zrh-new-001", "slot": 0},
    ]}, format="json")
    assert delivery.status_code == 201, delivery.data
    gpu = GPU.objects.get(uuid="GPU-0000-0001")
    assert (gpu.node.hostname, str(gpu.gpu_model), gpu.state) == ("zrh-new-001", "H100 SXM 80GB", "delivered")


def test_api_refusals(fleet, manager, manager_api, viewer_api):
    plan = make_plan(fleet, owner=manager)
    url = f"{PLANS}{plan.pk}/bom/fill/"
    assert viewer_api.post(url, {"scenario": "expand"}, format="json").status_code == 403
    response = manager_api.post(url, {"scenario": "rent"}, format="json")
    assert response.status_code == 400 and response.json()["detail"].startswith("Renting buys nothing")
    response = manager_api.post(url, {"scenario": "shop"}, format="json")
    assert response.status_code == 400
    assert response.json()["scenario"] == ['"shop" is not a scenario: choose expand, build or hybrid.']
    idle = CapacityPlan.objects.create(name="idle", site=fleet["site"], node_model=fleet["node_model"],
                                       node_price=Decimal("1"))
    response = manager_api.post(f"{PLANS}{idle.pk}/bom/fill/", {"scenario": "expand"}, format="json")
    assert response.status_code == 400 and "adds no nodes" in response.json()["detail"]
    PlanItem.objects.create(plan=plan, description="Cables", quantity=1, unit_cost=Decimal("1"))
    plans.submit(plan, manager)
    response = manager_api.post(url, {"scenario": "expand"}, format="json")
    assert response.status_code == 400 and "only a draft plan can be changed" in response.json()["detail"]
    assert not PlanItem.objects.filter(plan=idle).exists()


def test_api_schema_documents_the_action(viewer_api):
    schema = viewer_api.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/planning/plans/{id}/bom/fill/"]["post"]
    assert set(operation["responses"]) >= {"200", "400"}
    assert "requestBody" in operation
