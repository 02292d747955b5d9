"""The procurement flow through the API with a procurement system's token: contracts, purchase orders,
deliveries (which create the delivered nodes and GPUs), idempotent retries and permissions."""

from datetime import date

import pytest

from inventory.models import GPU, LifecycleState, Node, StateTransition
from planning.models import Contract, Delivery, DeliveryItem, PurchaseOrder, Webhook
from portal.models import IdempotentRequest
from portal.roles import PROCUREMENT
from tests.factories import make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.accounts import make_user, token_client

ORDERS = "/api/planning/purchase-orders/"
DELIVERIES = "/api/planning/deliveries/"
CONTRACTS = "/api/planning/contracts/"


@pytest.fixture
def setup(db):
    site, node_model, gpu_model = make_site(), make_node_model(gpu_slots=4), make_gpu_model()
    contract = Contract.objects.create(kind="purchase", vendor="Supermicro", reference="C-1", start=date(2025, 1, 1))
    user = make_user("procure", PROCUREMENT)
    return {"site": site, "node_model": node_model, "gpu_model": gpu_model, "contract": contract, "user": user,
            "client": token_client(user)}


def order_body(setup, **overrides):
    return {
        "contract": setup["contract"].pk, "vendor": "Supermicro", "reference": "PO-100", "site": setup["site"].pk,
        "lines": [
            {"node_model": setup["node_model"].pk, "quantity": 2, "unit_price": "250000.00"},
            {"gpu_model": setup["gpu_model"].pk, "quantity": 3, "unit_price": "30000.00"},
        ],
        **overrides,
    }


def create_order(setup, **overrides):
    response = setup["client"].post(ORDERS, order_body(setup, **overrides), format="json")
    assert response.status_code == 201, response.data
    return response.data


def node_item(line, n):
    return {"line": line, "serial": f"N-SN-{n}", "hostname": f"new-{n}"}


def gpu_item(line, n, **kw):
    return {"line": line, "serial": f"G-SN-{n}", "uuid": f"GPU-{n:08d}", **kw}


def counts():
    return Node.objects.count(), GPU.objects.count(), Delivery.objects.count(), DeliveryItem.objects.count()


def test_whole_flow_order_partial_full_and_over_delivery(setup):
    client = setup["client"]
    order = create_order(setup)
    node_line, gpu_line = (line["id"] for line in order["lines"])
    assert order["status"] == "open"
    ordered = [(line["quantity"], line["delivered"], line["remaining"]) for line in order["lines"]]
    assert ordered == [(2, 0, 2), (3, 0, 3)]

    first = client.post(DELIVERIES, {"order": order["id"], "items": [
        node_item(node_line, 1), gpu_item(gpu_line, 1, node="new-1", slot=0), gpu_item(gpu_line, 2),
    ]}, format="json")
    assert first.status_code == 201, first.data
    assert first.data["items"][1]["installed_in"] == "new-1" and first.data["items"][1]["slot"] == 0
    node = Node.objects.get(hostname="new-1")
    assert (node.state, node.site, node.node_model, node.serial) == (
        LifecycleState.DELIVERED, setup["site"], setup["node_model"], "N-SN-1")
    gpu = GPU.objects.get(uuid="GPU-00000001")
    assert (gpu.state, gpu.node, gpu.slot, gpu.gpu_model) == (LifecycleState.DELIVERED, node, 0, setup["gpu_model"])
    record = node.transitions.get()
    assert (record.from_state, record.to_state, record.username) == ("", "delivered", "procure")
    assert record.reason == f"delivery {first.data['id']} of PO PO-100"
    assert gpu.transitions.count() == 1
    partial = client.get(f"{ORDERS}{order['id']}/").data
    assert partial["status"] == "partial"
    assert [(line["delivered"], line["remaining"]) for line in partial["lines"]] == [(1, 1), (2, 1)]

    before = counts(), StateTransition.objects.count()
    over = client.post(DELIVERIES, {"order": order["id"], "items": [
        node_item(node_line, 2), gpu_item(gpu_line, 3), gpu_item(gpu_line, 4),
    ]}, format="json")
    assert over.status_code == 400
    assert "Exceeds the order" in over.data["items"][2]["line"][0]
    assert over.data["items"][0] == {} and over.data["items"][1] == {}
    assert (counts(), StateTransition.objects.count()) == before

    full = client.post(DELIVERIES, {"order": order["id"], "items": [node_item(node_line, 2), gpu_item(gpu_line, 3)]},
                       format="json")
    assert full.status_code == 201, full.data
    done = client.get(f"{ORDERS}{order['id']}/").data
    assert done["status"] == "delivered" and len(done["deliveries"]) == 2
    assert all(line["remaining"] == 0 for line in done["lines"])
    assert client.post(DELIVERIES, {"order": order["id"], "items": [gpu_item(gpu_line, 9)]},
                       format="json").status_code == 400
    assert client.get(ORDERS, {"status": "delivered"}).data["count"] == 1


def test_duplicate_serials_uuids_and_hostnames_are_refused_per_item(setup):
    make_node(hostname="taken", serial="OLD-SN")
    order = create_order(setup)
    node_line, gpu_line = (line["id"] for line in order["lines"])
    response = setup["client"].post(DELIVERIES, {"order": order["id"], "items": [
        {"line": node_line, "serial": "OLD-SN", "hostname": "taken"},
        gpu_item(gpu_line, 1), gpu_item(gpu_line, 1),
    ]}, format="json")
    assert response.status_code == 400
    items = response.data["items"]
    assert set(items[0]) == {"serial", "hostname"}
    assert set(items[1]) == {"serial", "uuid"} == set(items[2])
    assert Delivery.objects.count() == 0 and Node.objects.count() == 1


def test_items_must_belong_to_the_order_and_fit_the_line(setup):
    order, other = create_order(setup), create_order(setup, reference="PO-200")
    response = setup["client"].post(DELIVERIES, {"order": order["id"], "items": [
        node_item(other["lines"][0]["id"], 1),
        {"line": order["lines"][0]["id"], "serial": "X"},  # a node without a hostname
        {"line": order["lines"][1]["id"], "serial": "Y", "uuid": "GPU-Y", "node": "nowhere", "slot": 0},
    ]}, format="json")
    assert response.status_code == 400
    assert "another order" in response.data["items"][0]["line"][0]
    assert "hostname" in response.data["items"][1]
    assert "nowhere" in response.data["items"][2]["node"][0]
    assert counts() == (0, 0, 0, 0)


def test_gpu_slot_rules_come_from_the_model(setup):
    order = create_order(setup)
    node_line, gpu_line = (line["id"] for line in order["lines"])
    response = setup["client"].post(DELIVERIES, {"order": order["id"], "items": [
        node_item(node_line, 1), gpu_item(gpu_line, 1, node="new-1", slot=7),
    ]}, format="json")
    assert response.status_code == 400
    assert "slots 0-3" in response.data["items"][1]["slot"][0]
    assert counts() == (0, 0, 0, 0)


def test_same_idempotency_key_replays_the_first_answer(setup):
    client = setup["client"]
    first = client.post(ORDERS, order_body(setup), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = client.post(ORDERS, order_body(setup), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert PurchaseOrder.objects.count() == 1

    lines = first.data["lines"]
    body = {"order": first.data["id"], "items": [node_item(lines[0]["id"], 1)]}
    delivered = client.post(DELIVERIES, body, format="json", HTTP_IDEMPOTENCY_KEY="d-1")
    repeat = client.post(DELIVERIES, body, format="json", HTTP_IDEMPOTENCY_KEY="d-1")
    assert delivered.status_code == repeat.status_code == 201 and repeat.json() == delivered.json()
    assert counts() == (1, 0, 1, 1)

    other = client.post(ORDERS, order_body(setup, reference="PO-999"), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert other.status_code == 422 and "Idempotency-Key" in other.data["detail"]
    assert PurchaseOrder.objects.count() == 1


def test_a_refused_request_stores_no_key(setup):
    client = setup["client"]
    bad = client.post(ORDERS, order_body(setup, lines=[]), format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    assert bad.status_code == 400 and not IdempotentRequest.objects.exists()
    assert client.post(ORDERS, order_body(setup), format="json", HTTP_IDEMPOTENCY_KEY="k-2").status_code == 201


def test_keys_are_per_user(setup):
    other = token_client(make_user("procure2", PROCUREMENT))
    assert setup["client"].post(ORDERS, order_body(setup), format="json", HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    response = other.post(ORDERS, order_body(setup, reference="PO-2"), format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 201 and PurchaseOrder.objects.count() == 2


def test_external_id_repeat_replays_the_first_answer(setup):
    client = setup["client"]
    first = client.post(ORDERS, order_body(setup, external_id="erp-1"), format="json")
    again = client.post(ORDERS, order_body(setup, external_id="erp-1"), format="json")
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert PurchaseOrder.objects.count() == 1
    changed = client.post(ORDERS, order_body(setup, external_id="erp-1", vendor="Other"), format="json")
    assert changed.status_code == 409

    line = first.data["lines"][0]["id"]
    body = {"order": first.data["id"], "external_id": "dn-1", "items": [node_item(line, 1)]}
    assert client.post(DELIVERIES, body, format="json").status_code == 201
    repeat = client.post(DELIVERIES, body, format="json")
    assert repeat.status_code == 201 and repeat.json()["items"][0]["hostname"] == "new-1"
    assert counts() == (1, 0, 1, 1)


def test_procurement_token_creates_orders_but_cannot_edit_inventory(setup):
    client = setup["client"]
    node = make_node()
    assert client.patch(f"/api/inventory/nodes/{node.pk}/", {"partition": "x"}, format="json").status_code == 403
    direct = {"hostname": "direct", "site": setup["site"].pk, "node_model": setup["node_model"].pk}
    assert client.post("/api/inventory/nodes/", direct, format="json").status_code == 403
    assert client.get("/api/inventory/nodes/").status_code == 200
    order = create_order(setup)
    assert client.patch(f"{ORDERS}{order['id']}/", {"vendor": "x"}, format="json").status_code == 403
    assert client.post(f"{ORDERS}{order['id']}/cancel/").status_code == 403


def test_viewer_cannot_create_orders(setup, viewer):
    response = token_client(viewer).post(ORDERS, order_body(setup), format="json")
    assert response.status_code == 403 and not PurchaseOrder.objects.exists()


def test_order_needs_a_purchase_or_expansion_contract(setup):
    support = Contract.objects.create(kind="support", vendor="S", reference="S-1", start=date(2025, 1, 1),
                                      end=date(2027, 1, 1))
    response = setup["client"].post(ORDERS, order_body(setup, contract=support.pk), format="json")
    assert response.status_code == 400 and "purchase or expansion" in response.data["contract"][0]
    bad_line = order_body(setup, lines=[{"quantity": 1, "unit_price": "1.00"}])
    assert setup["client"].post(ORDERS, bad_line, format="json").status_code == 400
    assert not PurchaseOrder.objects.exists()


def test_manager_cancels_an_undelivered_order(setup, manager):
    client = token_client(manager)
    order = create_order(setup)
    assert client.patch(f"{ORDERS}{order['id']}/", {"vendor": "x"}, format="json").status_code == 405
    assert client.delete(f"{ORDERS}{order['id']}/").status_code == 405
    response = client.post(f"{ORDERS}{order['id']}/cancel/")
    assert response.status_code == 200 and response.data["status"] == "cancelled"
    assert client.post(f"{ORDERS}{order['id']}/cancel/").status_code == 409
    refused = setup["client"].post(DELIVERIES, {"order": order["id"], "items": [node_item(order["lines"][0]["id"], 1)]},
                                   format="json")
    assert refused.status_code == 400 and "cancelled" in refused.data["order"][0]


def test_contract_with_sla_terms_and_coverage(setup, manager):
    client = token_client(manager)
    node = make_node()
    body = {"kind": "support", "vendor": "Dell", "reference": "SUP-1", "start": "2025-01-01", "end": "2027-12-31",
            "nodes": [node.pk], "sites": [setup["site"].pk],
            "sla_terms": [{"priority": "P1", "response_hours": "1", "resolution_hours": "8"},
                          {"priority": "P2", "response_hours": "4", "resolution_hours": "24"}]}
    created = client.post(CONTRACTS, body, format="json")
    assert created.status_code == 201, created.data
    assert created.data["nodes"] == [node.pk] and len(created.data["sla_terms"]) == 2
    url = f"{CONTRACTS}{created.data['id']}/"
    patched = client.patch(url, {"sla_terms": [{"priority": "P3", "response_hours": "8", "resolution_hours": "48"}]},
                           format="json")
    assert [t["priority"] for t in patched.data["sla_terms"]] == ["P3"]
    assert client.patch(url, {"end": "2024-01-01"}, format="json").data["end"]
    repeated = {**body, "reference": "SUP-2", "sla_terms": body["sla_terms"] * 2}
    assert "sla_terms" in client.post(CONTRACTS, repeated, format="json").data
    bad = {**body, "reference": "SUP-3", "sla_terms": [{"priority": "P1", "response_hours": "9",
                                                         "resolution_hours": "2"}]}
    assert client.post(CONTRACTS, bad, format="json").status_code == 400
    assert client.post(CONTRACTS, {**body, "reference": "R", "kind": "rental", "end": None},
                       format="json").data["end"]


def test_delivery_emits_a_webhook_event(setup, django_capture_on_commit_callbacks, monkeypatch):
    hook = Webhook.objects.create(name="erp", url="http://127.0.0.1:9/", secret="s", events=["delivery.received"])
    Webhook.objects.create(name="plans", url="http://127.0.0.1:9/", secret="s", events=["plan.approved"])
    queued = []
    monkeypatch.setattr("planning.webhooks.delivery.send_webhook.delay", queued.append)
    order = create_order(setup)
    with django_capture_on_commit_callbacks(execute=True):
        response = setup["client"].post(DELIVERIES, {"order": order["id"], "items": [
            node_item(order["lines"][0]["id"], 1)]}, format="json")
    assert response.status_code == 201
    delivery = hook.deliveries.get()
    assert queued == [delivery.pk]
    assert delivery.payload["order"]["reference"] == "PO-100"
    assert delivery.payload["items"][0]["node"]["hostname"] == "new-1"


def test_order_and_delivery_pages(setup, manager_client):
    order = create_order(setup)
    setup["client"].post(DELIVERIES, {"order": order["id"], "items": [node_item(order["lines"][0]["id"], 1)]},
                         format="json")
    delivery = Delivery.objects.get()
    listing = manager_client.get("/planning/purchase-orders/")
    assert listing.status_code == 200 and "PO-100" in listing.content.decode()
    page = manager_client.get(f"/planning/purchase-orders/{order['id']}/").content.decode()
    assert "Lines" in page and "Deliveries" in page and "/edit/" not in page
    items = manager_client.get(f"/planning/deliveries/{delivery.pk}/").content.decode()
    assert f'href="/inventory/nodes/{Node.objects.get().pk}/"' in items
    assert manager_client.get("/planning/deliveries/").status_code == 200
