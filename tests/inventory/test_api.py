"""The REST API (/api/): authentication and roles, CRUD, validation, filters, the lifecycle actions,
change history and the OpenAPI schema (every endpoint's roles and query counts: tests/portal/test_battery.py)."""

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework import serializers
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.validators import UniqueValidator

from inventory.api import serializers as api_serializers
from inventory.models import (
    GPU,
    Fabric,
    FabricAttachment,
    GPUModel,
    LifecycleState,
    Node,
    NodeModel,
    Rack,
    Site,
    StateTransition,
    StorageSystem,
    Switch,
)
from portal.models import APIToken
from tests import factories as f
from tests.helpers.accounts import token_client

pytestmark = pytest.mark.django_db

INVENTORY_ENDPOINTS = {
    "sites": Site,
    "racks": Rack,
    "gpu-models": GPUModel,
    "node-models": NodeModel,
    "nodes": Node,
    "gpus": GPU,
    "fabrics": Fabric,
    "switches": Switch,
    "fabric-attachments": FabricAttachment,
    "storage-systems": StorageSystem,
}


def list_url(model):
    return reverse(f"inventory-api:{model._meta.model_name}-list")


def detail_url(obj, action="detail"):
    return reverse(f"inventory-api:{obj._meta.model_name}-{action}", args=[obj.pk])


@pytest.fixture
def rack():
    return f.make_rack(height_u=42)


@pytest.fixture
def node_model():
    return f.make_node_model(gpu_slots=8, height_u=8)


def node_body(site, node_model, **kw):
    return {"hostname": "gpu-a-001", "site": site.pk, "node_model": node_model.pk, **kw}


# --- Root, schema, docs, authentication --------------------------------------------------------------


def test_api_root_lists_apps_schema_and_docs(manager_api):
    response = manager_api.get("/api/")
    assert response.status_code == 200
    assert response.json() == {
        "inventory": "http://testserver/api/inventory/",
        "planning": "http://testserver/api/planning/",
        "support": "http://testserver/api/support/",
        "changes": "http://testserver/api/changes/",
        "tokens": "http://testserver/api/tokens/",
        "schema": "http://testserver/api/schema/",
        "docs": "http://testserver/api/docs/",
        "redoc": "http://testserver/api/redoc/",
    }


def test_inventory_root_lists_every_endpoint(manager_api):
    response = manager_api.get("/api/inventory/")
    assert response.status_code == 200
    # the telemetry endpoints: tests/inventory/telemetry/test_telemetry_api.py, tests/portal/test_api_integration.py
    telemetry = {"telemetry-sources", "unknown-series", "slurm-jobs", "gpu-hourly"}
    goodput = {"interruptions"}  # tests/inventory/goodput/
    teams = {"teams"}  # tests/inventory/teams/
    allocations = {"team-allocations", "allocation-requests", "slurm-syncs"}  # tests/inventory/allocations/
    statements = {"statements", "rate-cards"}  # tests/inventory/statements/
    moves = {"partition-moves"}  # tests/inventory/partitionmoves/
    assert set(response.json()) == (set(INVENTORY_ENDPOINTS) | telemetry | goodput | teams | allocations | statements
                                    | moves)
    for route, model in INVENTORY_ENDPOINTS.items():
        assert list_url(model) == f"/api/inventory/{route}/"


@pytest.mark.parametrize(
    "url", ["/api/", "/api/inventory/", "/api/inventory/nodes/", "/api/schema/", "/api/docs/", "/api/redoc/"]
)
def test_anonymous_is_refused(client, url):
    response = client.get(url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_anonymous_cannot_write(client):
    response = client.post("/api/inventory/sites/", {"name": "x"}, content_type="application/json")
    assert response.status_code == 401
    assert not Site.objects.exists()


def test_bad_or_revoked_token_is_refused(manager):
    token, key = APIToken.issue(manager, "ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/inventory/nodes/").status_code == 200

    token.delete()  # revoked on the Tokens page
    response = client.get("/api/inventory/nodes/")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]

    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")
    assert client.get("/api/inventory/nodes/").status_code == 401


def test_expired_token_is_refused(manager):
    _, key = APIToken.issue(manager, "old", expires=timezone.now() - timezone.timedelta(minutes=1))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.get("/api/inventory/nodes/")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_user_without_role_cannot_read(db):
    from django.contrib.auth.models import User

    nobody = User.objects.create_user("nobody", password="pw")
    assert token_client(nobody).get("/api/inventory/nodes/").status_code == 403


def test_schema_is_openapi_3_for_authenticated_users(manager_api):
    response = manager_api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for route in INVENTORY_ENDPOINTS:
        assert f"/api/inventory/{route}/" in paths
        assert f"/api/inventory/{route}/{{id}}/" in paths
    transition = paths["/api/inventory/nodes/{id}/transition/"]["post"]
    assert transition["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/TransitionRequest")
    assert transition["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Node")
    assert "LifecycleStateEnum" in schema["components"]["schemas"]
    assert "tokenAuth" in schema["components"]["securitySchemes"]


@pytest.mark.parametrize("url, marker", [("/api/docs/", "swagger-ui"), ("/api/redoc/", "redoc")])
def test_docs_are_served_offline(viewer_client, url, marker):
    response = viewer_client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert marker in html.lower()
    assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn." not in html and "unpkg" not in html


def test_browsable_api_renders_for_a_session_user(manager_client):
    node = f.make_node()
    for url in ["/api/", "/api/inventory/", "/api/inventory/nodes/", detail_url(node), detail_url(node, "transitions"),
                "/api/inventory/fabric-attachments/"]:
        response = manager_client.get(url, HTTP_ACCEPT="text/html")
        assert response.status_code == 200, url
        assert response["Content-Type"].startswith("text/html")


# --- CRUD ------------------------------------------------------------------------------------------


def test_node_crud_with_token(manager_api, rack, node_model):
    site = rack.site
    response = manager_api.post(
        "/api/inventory/nodes/", node_body(site, node_model, rack=rack.pk, position=1, serial="SN1"), format="json"
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    node = Node.objects.get(hostname="gpu-a-001")
    assert data["id"] == node.pk
    assert data["url"] == f"http://testserver/api/inventory/nodes/{node.pk}/"
    assert data["display"] == "gpu-a-001"
    assert data["state"] == LifecycleState.DELIVERED
    assert (data["site"], data["site_name"]) == (site.pk, site.name)
    assert (data["rack"], data["rack_name"]) == (rack.pk, rack.name)
    assert data["node_model_name"] == node_model.name
    assert data["gpu_count"] == 0

    f.make_gpu(node=node)
    response = manager_api.get(detail_url(node))
    assert response.status_code == 200
    assert response.json()["gpu_count"] == 1

    f.make_team("llm")
    response = manager_api.patch(detail_url(node), {"partition": "train", "owner_team": "llm"}, format="json")
    assert response.status_code == 200, response.json()
    node.refresh_from_db()
    assert (node.partition, node.owner_team_id) == ("train", "llm")

    body = {**response.json(), "hostname": "gpu-a-002", "position": 9}
    response = manager_api.put(detail_url(node), body, format="json")
    assert response.status_code == 200, response.json()
    node.refresh_from_db()
    assert (node.hostname, node.position, node.partition) == ("gpu-a-002", 9, "train")

    node.gpus.all().delete()
    assert manager_api.delete(detail_url(node)).status_code == 204
    assert not Node.objects.filter(pk=node.pk).exists()
    assert manager_api.get(detail_url(node)).status_code == 404


def test_site_and_rack_crud_with_session(manager_client):
    response = manager_client.post(
        "/api/inventory/sites/",
        {"name": "Frankfurt", "location": "FRA1", "power_capacity_kw": "5000.0", "cooling_capacity_kw": "5200.0"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.json()
    site = Site.objects.get(name="Frankfurt")
    assert response.json()["power_capacity_kw"] == "5000.0"

    response = manager_client.post(
        "/api/inventory/racks/", {"site": site.pk, "name": "A01", "power_budget_kw": "40.0"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.json()
    rack = Rack.objects.get(site=site, name="A01")
    assert rack.height_u == 42
    assert response.json()["display"] == "Frankfurt / A01"

    response = manager_client.get("/api/inventory/sites/")
    [row] = response.json()["results"]
    assert (row["name"], row["rack_count"], row["node_count"]) == ("Frankfurt", 1, 0)

    response = manager_client.patch(detail_url(rack), {"height_u": 48}, content_type="application/json")
    assert response.status_code == 200
    rack.refresh_from_db()
    assert rack.height_u == 48

    assert manager_client.delete(detail_url(rack)).status_code == 204
    assert manager_client.delete(detail_url(site)).status_code == 204
    assert not Site.objects.exists()


def test_storage_crud_with_token(manager_api):
    site = f.make_site()
    body = {"name": "lustre-1", "site": site.pk, "kind": "parallel_fs", "tier": "hot", "capacity_tb": "2000.0",
            "used_tb": "500.0", "read_gbs": "400.0", "write_gbs": "300.0"}
    response = manager_api.post("/api/inventory/storage-systems/", body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["used_percent"] == 25.0
    storage = StorageSystem.objects.get(name="lustre-1")

    response = manager_api.patch(detail_url(storage), {"used_tb": "2500.0"}, format="json")
    assert response.status_code == 400
    assert "exceeds capacity" in response.json()["used_tb"][0]

    response = manager_api.patch(detail_url(storage), {"used_tb": "1000.0"}, format="json")
    assert response.status_code == 200
    assert response.json()["used_percent"] == 50.0

    assert manager_api.delete(detail_url(storage)).status_code == 204
    assert not StorageSystem.objects.exists()


def test_gpu_fabric_switch_and_attachment_create(manager_api):
    node = f.make_node()
    gpu_model = f.make_gpu_model()
    response = manager_api.post(
        "/api/inventory/gpus/", {"node": node.pk, "slot": 3, "gpu_model": gpu_model.pk, "uuid": "GPU-abc"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["node_hostname"], data["site"], data["gpu_model_name"]) == (node.hostname, node.site_id,
                                                                           gpu_model.name)
    spare = manager_api.post("/api/inventory/gpus/", {"gpu_model": gpu_model.pk, "serial": "S-1"}, format="json")
    assert spare.status_code == 201, spare.json()
    assert (spare.json()["node"], spare.json()["slot"], spare.json()["site"]) == (None, None, None)

    response = manager_api.post("/api/inventory/fabrics/", {"name": "ib-compute", "kind": "infiniband",
                                                            "link_speed_gbps": 400, "site": node.site_id})
    assert response.status_code == 201, response.json()
    fabric = Fabric.objects.get(name="ib-compute")
    response = manager_api.post("/api/inventory/switches/", {"name": "leaf-1", "fabric": fabric.pk,
                                                             "site": node.site_id, "ports": 64, "uplinks": 32})
    assert response.status_code == 201, response.json()
    switch = Switch.objects.get(name="leaf-1")
    response = manager_api.post("/api/inventory/fabric-attachments/", {"node": node.pk, "fabric": fabric.pk,
                                                                       "switch": switch.pk, "ports": 8,
                                                                       "speed_gbps": 400})
    assert response.status_code == 201, response.json()
    assert response.json()["bandwidth_gbps"] == 3200
    assert response.json()["display"] == f"{node.hostname} ↔ ib-compute"

    again = manager_api.post("/api/inventory/fabric-attachments/", {"node": node.pk, "fabric": fabric.pk,
                                                                    "speed_gbps": 400})
    assert again.status_code == 400
    assert again.json()["non_field_errors"] == ["This node is already attached to this fabric."]


def test_delete_of_a_protected_object_is_a_conflict(manager_api):
    node = f.make_node()
    response = manager_api.delete(detail_url(node.site))
    assert response.status_code == 409
    assert node.hostname in response.json()["detail"]
    assert Site.objects.filter(pk=node.site_id).exists()


def test_viewer_reads_but_cannot_write(viewer_api):
    node = f.make_node()
    assert viewer_api.get("/api/inventory/nodes/").json()["count"] == 1
    assert viewer_api.get(detail_url(node)).status_code == 200
    assert viewer_api.get(detail_url(node, "transitions")).status_code == 200

    body = node_body(node.site, node.node_model, hostname="gpu-new")
    assert viewer_api.post("/api/inventory/nodes/", body, format="json").status_code == 403
    assert viewer_api.patch(detail_url(node), {"partition": "x"}, format="json").status_code == 403
    assert viewer_api.put(detail_url(node), body, format="json").status_code == 403
    assert viewer_api.delete(detail_url(node)).status_code == 403
    response = viewer_api.post(detail_url(node, "transition"), {"to": "burn_in"}, format="json")
    assert response.status_code == 403

    node.refresh_from_db()
    assert (node.partition, node.state) == ("", LifecycleState.DELIVERED)
    assert Node.objects.count() == 1
    assert not StateTransition.objects.exists()


def test_viewer_with_session_cannot_write(viewer_client):
    site = f.make_site()
    response = viewer_client.patch(detail_url(site), {"location": "x"}, content_type="application/json")
    assert response.status_code == 403
    site.refresh_from_db()
    assert site.location != "x"


# --- Validation ------------------------------------------------------------------------------------


def test_duplicate_hostname_is_a_field_error(manager_api, node_model):
    node = f.make_node(hostname="gpu-dup", node_model=node_model)
    response = manager_api.post("/api/inventory/nodes/", node_body(node.site, node_model, hostname="gpu-dup"),
                                format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["hostname"]
    assert Node.objects.count() == 1


def test_node_serial_unique_when_set(manager_api, node_model):
    node = f.make_node(serial="SN-1", node_model=node_model)
    response = manager_api.post(
        "/api/inventory/nodes/", node_body(node.site, node_model, hostname="b", serial="SN-1"), format="json"
    )
    assert response.status_code == 400
    assert "serial" in response.json()
    # Blank serials may repeat (conditional constraint).
    for hostname in ("c", "d"):
        response = manager_api.post(
            "/api/inventory/nodes/", node_body(node.site, node_model, hostname=hostname, serial=""), format="json"
        )
        assert response.status_code == 201, response.json()


@pytest.mark.parametrize("field", ["uuid", "serial"])
def test_duplicate_gpu_uuid_or_serial_is_a_field_error(manager_api, field):
    gpu = f.make_gpu()
    response = manager_api.post(
        "/api/inventory/gpus/", {"gpu_model": gpu.gpu_model_id, field: getattr(gpu, field)}, format="json"
    )
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert GPU.objects.count() == 1


def test_gpu_slot_beyond_the_node_model(manager_api):
    node = f.make_node(node_model=f.make_node_model(gpu_slots=4))
    response = manager_api.post("/api/inventory/gpus/", {"node": node.pk, "slot": 4,
                                                         "gpu_model": f.make_gpu_model().pk}, format="json")
    assert response.status_code == 400
    assert response.json()["slot"] == [f"{node.node_model} has slots 0-3."]
    assert not GPU.objects.exists()


def test_gpu_slot_taken(manager_api):
    gpu = f.make_gpu(node=f.make_node(), slot=0)
    response = manager_api.post("/api/inventory/gpus/", {"node": gpu.node_id, "slot": 0,
                                                         "gpu_model": gpu.gpu_model_id}, format="json")
    assert response.status_code == 400
    assert response.json()["non_field_errors"] == ["This slot of the node already holds a GPU."]


def test_node_position_above_rack_height(manager_api, node_model):
    rack = f.make_rack(height_u=42)
    body = node_body(rack.site, node_model, rack=rack.pk, position=40)  # 8U at U40 reaches U47
    response = manager_api.post("/api/inventory/nodes/", body, format="json")
    assert response.status_code == 400
    assert "above the rack's 42U" in response.json()["position"][0]
    assert not Node.objects.exists()


def test_rack_cannot_shrink_below_its_nodes(manager_api, node_model):
    rack = f.make_rack(height_u=42)
    f.make_node(rack=rack, position=30, node_model=node_model)  # reaches U37
    response = manager_api.patch(detail_url(rack), {"height_u": 36}, format="json")
    assert response.status_code == 400
    assert "U37" in response.json()["height_u"][0]
    rack.refresh_from_db()
    assert rack.height_u == 42


def test_conditional_unique_constraint_is_checked_by_the_shared_serializer():
    """Even where DRF adds no validator for a conditional constraint (here: a serial field declared
    by hand), ``PortalModelSerializer.validate`` turns the violation into a field error."""

    class PlainSerialGPUSerializer(api_serializers.GPUSerializer):
        serial = serializers.CharField(required=False, allow_blank=True)

    gpu = f.make_gpu(serial="SN-X")
    request = APIRequestFactory().post("/api/inventory/gpus/")
    serializer = PlainSerialGPUSerializer(
        data={"gpu_model": gpu.gpu_model_id, "serial": "SN-X"}, context={"request": request}
    )
    assert not serializer.is_valid()
    assert serializer.errors == {"serial": ["Another gpu already has this serial."]}

    serializer = PlainSerialGPUSerializer(data={"gpu_model": gpu.gpu_model_id, "serial": ""},
                                          context={"request": request})
    assert serializer.is_valid(), serializer.errors


def test_database_constraint_race_is_a_400_not_a_500(manager_api, monkeypatch):
    """Two requests racing for the same serial both pass validation; the database refuses the second,
    and the client gets a 400, not a server error."""
    gpu = f.make_gpu(serial="RACE")
    monkeypatch.setattr(UniqueValidator, "__call__", lambda self, value, serializer_field: None)
    monkeypatch.setattr("portal.api.serializers.constraint_errors", lambda instance: {})
    response = manager_api.post("/api/inventory/gpus/", {"gpu_model": gpu.gpu_model_id, "serial": "RACE"},
                                format="json")
    assert response.status_code == 400
    assert "gpu_unique_serial" in response.json()["non_field_errors"][0]
    assert GPU.objects.filter(serial="RACE").count() == 1


# --- Filters, ordering, pagination ----------------------------------------------------------------


def test_filters_search_ordering_and_pagination(manager_api, node_model):
    site_a, site_b = f.make_site(), f.make_site()
    f.make_node(hostname="a-1", site=site_a, node_model=node_model, state=LifecycleState.IN_SERVICE)
    f.make_node(hostname="a-2", site=site_a, node_model=node_model, state=LifecycleState.DEGRADED)
    f.make_node(hostname="b-1", site=site_b, node_model=node_model, partition="Train")

    def hostnames(**params):
        response = manager_api.get("/api/inventory/nodes/", params)
        assert response.status_code == 200, response.json()
        return [row["hostname"] for row in response.json()["results"]]

    assert hostnames(state="in_service") == ["a-1"]
    assert sorted(hostnames(state=["in_service", "degraded"])) == ["a-1", "a-2"]
    assert sorted(hostnames(site=site_a.pk)) == ["a-1", "a-2"]
    assert hostnames(q="B-") == ["b-1"]
    assert hostnames(partition="train") == ["b-1"]
    assert hostnames(ordering="-hostname") == ["b-1", "a-2", "a-1"]

    response = manager_api.get("/api/inventory/nodes/", {"state": "not-a-state"})
    assert response.status_code == 400
    assert "state" in response.json()

    response = manager_api.get("/api/inventory/nodes/", {"page_size": 2, "ordering": "hostname"})
    data = response.json()
    assert data["count"] == 3
    assert [row["hostname"] for row in data["results"]] == ["a-1", "a-2"]
    assert data["next"].endswith("page=2&page_size=2") or "page=2" in data["next"]


def test_gpu_site_and_spare_filters(manager_api):
    node = f.make_node()
    in_node = f.make_gpu(node=node)
    spare = f.make_gpu()
    response = manager_api.get("/api/inventory/gpus/", {"site": node.site_id})
    assert [row["id"] for row in response.json()["results"]] == [in_node.pk]
    response = manager_api.get("/api/inventory/gpus/", {"spare": "true"})
    assert [row["id"] for row in response.json()["results"]] == [spare.pk]


# --- Lifecycle ----------------------------------------------------------------------------------------


def test_state_is_writable_on_create_only(manager_api, node_model):
    site = f.make_site()
    response = manager_api.post("/api/inventory/nodes/", node_body(site, node_model, state="ordered"), format="json")
    assert response.status_code == 201, response.json()
    node = Node.objects.get()
    assert node.state == LifecycleState.ORDERED

    response = manager_api.patch(detail_url(node), {"state": "in_service", "partition": "p"}, format="json")
    assert response.status_code == 400
    [message] = response.json()["state"]
    assert f"POST /api/inventory/nodes/{node.pk}/transition/" in message
    node.refresh_from_db()
    assert (node.state, node.partition) == (LifecycleState.ORDERED, "")

    # Sending the unchanged state back (a PUT of what GET returned) is fine.
    body = {**manager_api.get(detail_url(node)).json(), "partition": "p"}
    assert manager_api.put(detail_url(node), body, format="json").status_code == 200


@pytest.mark.parametrize("kind", ["node", "gpu"])
def test_transition_happy_path(manager_api, manager, kind):
    obj = f.make_node() if kind == "node" else f.make_gpu()
    response = manager_api.post(detail_url(obj, "transition"), {"to": "burn_in", "reason": "racked"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["state"] == "burn_in"
    assert response.json()["id"] == obj.pk
    obj.refresh_from_db()
    assert obj.state == LifecycleState.BURN_IN

    record = StateTransition.objects.get(object_id=obj.pk)
    assert record.obj == obj
    assert (record.from_state, record.to_state) == ("delivered", "burn_in")
    assert (record.user, record.username, record.reason) == (manager, manager.username, "racked")

    history = obj.history.first()
    assert (history.state, history.history_user, history.history_change_reason) == ("burn_in", manager, "racked")

    response = manager_api.get(detail_url(obj, "transitions"))
    assert response.status_code == 200
    [row] = response.json()
    assert (row["from_state"], row["to_state"], row["username"], row["reason"]) == (
        "delivered", "burn_in", manager.username, "racked")


def test_refused_transition_changes_nothing(manager_api):
    node = f.make_node(state=LifecycleState.RETIRED)
    history_before = node.history.count()
    response = manager_api.post(detail_url(node, "transition"), {"to": "in_service", "reason": "x"}, format="json")
    assert response.status_code == 400
    [message] = response.json()["to"]
    assert message.startswith("Cannot go from Retired to In service")
    node.refresh_from_db()
    assert node.state == LifecycleState.RETIRED
    assert not StateTransition.objects.exists()
    assert node.history.count() == history_before


def test_transition_body_is_validated(manager_api):
    node = f.make_node()
    response = manager_api.post(detail_url(node, "transition"), {"to": "flying"}, format="json")
    assert response.status_code == 400
    assert "to" in response.json()
    assert manager_api.post(detail_url(node, "transition"), {}, format="json").status_code == 400
    node.refresh_from_db()
    assert node.state == LifecycleState.DELIVERED


def test_transition_of_unknown_object_is_404(manager_api):
    response = manager_api.post("/api/inventory/nodes/999999/transition/", {"to": "burn_in"}, format="json")
    assert response.status_code == 404


# --- Change history ----------------------------------------------------------------------------------


def test_history_records_the_token_user(manager_api, manager, node_model):
    site = f.make_site()
    response = manager_api.post("/api/inventory/nodes/", node_body(site, node_model), format="json")
    assert response.status_code == 201
    node = Node.objects.get()
    created = node.history.first()
    assert (created.history_type, created.history_user) == ("+", manager)

    f.make_team("vision")
    manager_api.patch(detail_url(node), {"owner_team": "vision"}, format="json")
    changed = node.history.first()
    assert (changed.history_type, changed.history_user, changed.owner_team_id) == ("~", manager, "vision")

    manager_api.delete(detail_url(node))
    deleted = Node.history.filter(id=node.pk).first()
    assert (deleted.history_type, deleted.history_user) == ("-", manager)


def test_history_records_the_session_user(manager_client, manager):
    site = f.make_site()
    response = manager_client.patch(detail_url(site), {"description": "new hall"}, content_type="application/json")
    assert response.status_code == 200
    assert site.history.first().history_user == manager
