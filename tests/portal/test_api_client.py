"""An integration client generated from the OpenAPI schema works unmodified: ``openapi-python-client`` generates
a package from ``manage.py spectacular``'s schema (offline: the schema file is all it reads), and the procurement
round trip runs through that package against a live server: the approved plan's bill of materials, a purchase
order from it, a delivery of nodes and GPUs by serial and UUID, the delivered nodes in the inventory, and the
error answers (400 with field errors, 409) parsed into the generated error models."""

import json
from decimal import Decimal

import pytest

from inventory.models import GPU, LifecycleState, Node
from planning.models import CapacityPlan, Delivery, PlanItem, PurchaseOrder
from planning.plans import workflow as plans
from portal.models import APIToken
from portal.roles import MANAGER
from tests.factories import make_gpu_model, make_node_model, make_site
from tests.helpers.accounts import make_user
from tests.helpers.api_client import write_schema


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory):
    """The schema as ``manage.py spectacular`` writes it (what ``/api/schema/`` serves)."""
    return write_schema(tmp_path_factory.mktemp("schema") / "schema.json")


@pytest.fixture
def approved_plan(transactional_db):
    """A plan for two 4-GPU nodes and their eight GPUs, submitted by one manager and approved by another."""
    site, node_model, gpu_model = make_site(name="Lugano"), make_node_model(gpu_slots=4), make_gpu_model()
    plan = CapacityPlan.objects.create(name="2027 expansion", horizon_months=12, site=site)
    PlanItem.objects.create(plan=plan, node_model=node_model, quantity=2, unit_cost=Decimal("250000.00"))
    PlanItem.objects.create(plan=plan, gpu_model=gpu_model, quantity=8, unit_cost=Decimal("0.00"),
                            description="in the node price")
    plans.submit(plan, make_user("sam", MANAGER))
    plans.approve(plan, make_user("mia", MANAGER), "go ahead")
    return plan


@pytest.fixture
def api(generated, live_server, approved_plan):
    """The generated client, authenticated as a manager with an API token."""
    _, key = APIToken.issue(make_user("max", MANAGER), "integration")
    return generated().AuthenticatedClient(base_url=live_server.url, token=key, prefix="Token",
                                           raise_on_unexpected_status=True)


def test_procurement_round_trip_through_the_generated_client(generated, api, approved_plan):
    models = generated("models")
    bom = generated("api.planning.planning_plans_bom_retrieve").sync_detailed(approved_plan.pk, client=api)
    assert bom.status_code == 200
    assert isinstance(bom.parsed, models.BillOfMaterials)
    assert [(line.quantity, line.unit_cost) for line in bom.parsed.lines] == [(2, "250000.00"), (8, "0.00")]
    assert bom.parsed.totals["USD"] == "500000.00"

    order_body = models.PurchaseOrderRequest(
        plan=approved_plan.pk, vendor="Supermicro", reference="PO-2027-1", site=approved_plan.site_id,
        external_id="erp-4711",
        lines=[models.OrderLineRequest(node_model=line.node_model, gpu_model=line.gpu_model, quantity=line.quantity,
                                       unit_price=line.unit_cost, description=line.description)
               for line in bom.parsed.lines],
    )
    created = generated("api.planning.planning_purchase_orders_create").sync_detailed(client=api, body=order_body)
    assert created.status_code == 201, created.content
    order = created.parsed
    assert isinstance(order, models.PurchaseOrder)
    assert (order.status, order.plan, order.created_by) == (models.StatusEnum.OPEN, approved_plan.pk, "max")
    node_line, = (line for line in order.lines if line.node_model)
    gpu_line, = (line for line in order.lines if line.gpu_model)
    assert (node_line.remaining, gpu_line.remaining) == (2, 8)

    # Nodes by serial and hostname, GPUs by serial and UUID, installed in the nodes of the same delivery.
    items = [models.DeliveryItemInRequest(line=node_line.id, serial=f"N-{n}", hostname=f"lug-{n}") for n in (1, 2)]
    items += [models.DeliveryItemInRequest(line=gpu_line.id, serial=f"G-{n}", uuid=f"GPU-{n:08d}",
                                           node=f"lug-{n // 4 + 1}", slot=n % 4) for n in range(8)]
    delivery_body = models.DeliveryCreateRequest(order=order.id, items=items, external_id="erp-4711-d1")
    deliveries = generated("api.planning.planning_deliveries_create")
    delivered = deliveries.sync_detailed(client=api, body=delivery_body)
    assert delivered.status_code == 201, delivered.content
    assert isinstance(delivered.parsed, models.Delivery)
    placed = {item.serial: (item.installed_in, item.slot) for item in delivered.parsed.items}
    assert (placed["G-0"], placed["G-5"], placed["N-1"]) == (("lug-1", 0), ("lug-2", 1), (None, None))

    nodes = generated("api.inventory.inventory_nodes_list").sync_detailed(client=api, site=approved_plan.site_id,
                                                                          ordering="hostname")
    assert nodes.status_code == 200
    delivered_state = models.LifecycleStateEnum.DELIVERED
    assert [(node.hostname, node.serial, node.state, node.gpu_count) for node in nodes.parsed.results] == [
        ("lug-1", "N-1", delivered_state, 4), ("lug-2", "N-2", delivered_state, 4)]
    assert PurchaseOrder.objects.get().status == PurchaseOrder.Status.DELIVERED
    assert sorted(GPU.objects.filter(node__hostname="lug-2").values_list("uuid", flat=True)) == [
        f"GPU-{n:08d}" for n in range(4, 8)]

    # A second delivery of the same units: 400, the errors per item parsed into the generated error model.
    again = models.DeliveryCreateRequest(order=order.id, items=items[:1])
    refused = deliveries.sync_detailed(client=api, body=again)
    assert refused.status_code == 400
    assert isinstance(refused.parsed, models.FieldErrors)
    assert set(refused.parsed["items"][0]) == {"line", "serial", "hostname"}
    assert Delivery.objects.count() == 1 and Node.objects.filter(state=LifecycleState.DELIVERED).count() == 2


def test_error_answers_parse_into_the_generated_models(generated, api, approved_plan):
    models = generated("models")
    draft = CapacityPlan.objects.create(name="not yet", horizon_months=6)
    bom = generated("api.planning.planning_plans_bom_retrieve").sync_detailed(draft.pk, client=api)
    assert bom.status_code == 409
    assert isinstance(bom.parsed, models.Error) and "only an approved plan" in bom.parsed.detail

    body = models.PurchaseOrderRequest(
        plan=draft.pk, vendor="Supermicro", reference="PO-X", site=approved_plan.site_id,
        lines=[models.OrderLineRequest(quantity=0, unit_price="1.00")],
    )
    refused = generated("api.planning.planning_purchase_orders_create").sync_detailed(client=api, body=body)
    assert refused.status_code == 400
    assert isinstance(refused.parsed, models.FieldErrors)
    assert "approved plans only" in refused.parsed["plan"][0]
    assert PurchaseOrder.objects.count() == 0


def test_request_bodies_are_json_only(schema_file):
    schema = json.loads(schema_file.read_text())
    media = {media for operations in schema["paths"].values() for operation in operations.values()
             if isinstance(operation, dict) for media in operation.get("requestBody", {}).get("content", {})}
    assert media == {"application/json"}


def test_documented_defaults_are_accepted(schema_file):
    """A default the schema documents is one the field accepts: generated clients send it when the caller
    leaves the field out."""
    schema = json.loads(schema_file.read_text())
    refused = []
    for name, component in schema["components"]["schemas"].items():
        for field, spec in component.get("properties", {}).items():
            if "default" not in spec:
                continue
            default = spec["default"]
            if (default is None and not spec.get("nullable")
                    or isinstance(default, str) and len(default) < spec.get("minLength", 0)
                    or "enum" in spec and default not in spec["enum"]):
                refused.append(f"{name}.{field}")
    assert refused == []


def test_error_codes_document_their_json_body(schema_file):
    schema = json.loads(schema_file.read_text())
    bare = [f"{method.upper()} {path} {code}" for path, operations in schema["paths"].items()
            for method, operation in operations.items() if isinstance(operation, dict)
            for code, response in operation.get("responses", {}).items()
            if code[0] in "45" and "application/json" not in response.get("content", {})]
    assert bare == []
    orders = schema["paths"]["/api/planning/purchase-orders/"]["post"]["responses"]
    assert {code: orders[code]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            for code in ("400", "409", "422")} == {"400": "ValidationError", "409": "Error", "422": "Error"}


def test_form_and_multipart_bodies_are_refused_with_415(manager_api):
    for media in ("multipart", None):  # None: the test client's form encoding
        body = {"vendor": "Supermicro", "reference": "PO-F"}
        response = (manager_api.post("/api/planning/purchase-orders/", body, format=media) if media else
                    manager_api.post("/api/planning/purchase-orders/", "vendor=Supermicro",
                                     content_type="application/x-www-form-urlencoded"))
        assert response.status_code == 415
        assert "Unsupported media type" in response.json()["detail"]
    assert PurchaseOrder.objects.count() == 0
