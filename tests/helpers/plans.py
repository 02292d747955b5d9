"""Capacity plans through the API: a plan body with workloads and a bill of materials, creating one, acting on it;
and the fleet and plan of the bills-of-materials tests (``bom_plan``)."""

from datetime import date
from decimal import Decimal

from inventory.models import GPUModel, LifecycleState
from planning.models import CapacityPlan, PlanWorkload
from tests.factories import make_attachment, make_fabric, make_gpu, make_node, make_node_model, make_site, make_switch

PLANS = "/api/planning/plans/"


def plan_body(catalog, **overrides):
    return {
        "name": "2027 expansion", "first_month": "2027-01", "last_month": "2027-12",
        "workloads": [{"name": "70B pretraining", "start": "2027-03", "gpu_model": catalog["gpu_model"].pk,
                       "inputs": {"params_billion": 70, "tokens_billion": 2000, "num_gpus": 512}}],
        "items": [
            {"node_model": catalog["node_model"].pk, "quantity": 4, "unit_cost": "250000.00"},
            {"gpu_model": catalog["gpu_model"].pk, "quantity": 32, "unit_cost": "30000.00"},
            {"description": "400G switches", "quantity": 2, "unit_cost": "40000.00", "currency": "eur"},
        ],
        **overrides,
    }


def create_plan(api, catalog, **overrides):
    response = api.post(PLANS, plan_body(catalog, **overrides), format="json")
    assert response.status_code == 201, response.data
    return response.data


def act(client, plan_id, name, comment=""):
    return client.post(f"{PLANS}{plan_id}/{name}/", {"comment": comment}, format="json")


def bom_plan(**plan_fields):
    """Two in-service nodes of 8 H100s on QM9700 leaves at Zurich and a plan short of 30 nodes for a 70B pretraining
    (as ``test_plan_bom``), its node model priced at the catalog's list price: the bills of materials' tests."""
    site = make_site(name="Zurich", power_capacity_kw=Decimal("2000"))
    model = make_node_model(name="HGX H100 test", gpu_slots=8, max_power_w=10200, height_u=8,
                            list_price=Decimal("250000"))
    h100 = GPUModel.objects.get(name="H100 SXM 80GB")
    fabric = make_fabric(name="ib-zurich", site=site)
    leaf = make_switch(fabric=fabric, site=site, model="NVIDIA QM9700", ports=64, uplinks=32)
    for _ in range(2):
        node = make_node(site=site, node_model=model, state=LifecycleState.IN_SERVICE)
        for _ in range(8):
            make_gpu(node=node, gpu_model=h100, state=LifecycleState.IN_SERVICE)
        make_attachment(node=node, fabric=fabric, switch=leaf, ports=8, speed_gbps=400)
    plan = CapacityPlan.objects.create(name="2027 training", first_month=date(2027, 1, 1), horizon_months=12,
                                       site=site, node_model=model, **plan_fields)
    PlanWorkload.objects.create(plan=plan, name="70B", start=date(2027, 2, 1), gpu_model=h100,
                                inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 256,
                                        "mfu": 0.4, "goodput": 1})
    return plan
