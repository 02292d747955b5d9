"""The API as integrations use it: ETags and conditional writes, version pinning, request ids and change
reasons on the change records, cursor pages, bulk writes with errors per item, trimmed answers."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Node
from inventory.telemetry.models import GPUHourly
from tests.factories import bulk_make, make_gpu, make_node, make_site, make_team

pytestmark = pytest.mark.django_db

NODES = "/api/inventory/nodes/"


def node_url(node):
    return f"{NODES}{node.pk}/"


# --- Optimistic locking ------------------------------------------------------------------------------


def test_a_stale_if_match_is_refused_and_changes_nothing(manager_api):
    node = make_node(hostname="dgx-a01", owner_team="")
    make_team("vision"), make_team("nlp")
    read = manager_api.get(node_url(node))
    etag = read["ETag"]
    assert etag.startswith('"') and read.status_code == 200

    # Someone else changes the node: the ETag read before is stale now.
    first = manager_api.patch(node_url(node), {"owner_team": "vision"}, HTTP_IF_MATCH=etag)
    assert first.status_code == 200 and first["ETag"] != etag

    stale = manager_api.patch(node_url(node), {"owner_team": "nlp"}, HTTP_IF_MATCH=etag)
    assert stale.status_code == 412
    assert "has changed since you read it" in stale.json()["detail"]
    node.refresh_from_db()
    assert node.owner_team_id == "vision"
    assert manager_api.delete(node_url(node), HTTP_IF_MATCH=etag).status_code == 412
    assert Node.objects.filter(pk=node.pk).exists()

    # With the current ETag the write goes through; without If-Match too (locking is opt-in).
    assert manager_api.put(node_url(node), {**read.json(), "owner_team": "nlp"},
                           HTTP_IF_MATCH=first["ETag"]).status_code == 200
    assert manager_api.delete(node_url(node), HTTP_IF_MATCH=f'W/"x", {manager_api.get(node_url(node))["ETag"]}'
                              ).status_code == 204


def test_if_none_match_answers_304_while_unchanged(viewer_api):
    node = make_node(hostname="dgx-a01")
    etag = viewer_api.get(node_url(node))["ETag"]
    assert viewer_api.get(node_url(node), HTTP_IF_NONE_MATCH=etag).status_code == 304
    Node.objects.filter(pk=node.pk).update(owner_team=make_team("vision"))
    assert viewer_api.get(node_url(node), HTTP_IF_NONE_MATCH=etag).status_code == 200


def test_the_etag_follows_many_to_many_links(manager_api):
    from planning.models import Contract

    contract = Contract.objects.create(kind=Contract.Kind.SUPPORT, vendor="Acme", reference="C-1",
                                       start=timezone.localdate(), end=timezone.localdate() + timedelta(days=365))
    url = f"/api/planning/contracts/{contract.pk}/"
    before = manager_api.get(url)["ETag"]
    contract.sites.add(make_site())
    assert manager_api.get(url)["ETag"] != before


# --- Versions ------------------------------------------------------------------------------------------


def test_answers_carry_the_version_and_clients_can_pin_it(viewer_api):
    answer = viewer_api.get(NODES, HTTP_ACCEPT="application/json; version=1.0")
    assert answer.status_code == 200 and answer["API-Version"] == "1.0"
    refused = viewer_api.get(NODES, HTTP_ACCEPT="application/json; version=2.0")
    assert refused.status_code == 406
    assert "This server speaks version 1.0" in refused.json()["detail"]
    assert viewer_api.get(NODES)["API-Version"] == "1.0"  # no version asked: the current one


# --- Request ids and change reasons ---------------------------------------------------------------------


def test_changes_of_one_request_share_its_id_and_reason(manager_api):
    site = make_site()
    model = make_node().node_model
    items = [{"hostname": f"dgx-z0{i}", "site": site.pk, "node_model": model.pk} for i in range(3)]
    answer = manager_api.post(NODES, items, format="json", HTTP_X_REQUEST_ID="po-4711-sync",
                              HTTP_X_CHANGE_REASON="PO 4711 delivered")
    assert answer.status_code == 201 and answer["X-Request-ID"] == "po-4711-sync"
    records = Node.history.filter(hostname__startswith="dgx-z0")
    assert records.count() == 3
    assert {(r.request_id, r.history_change_reason) for r in records} == {("po-4711-sync", "PO 4711 delivered")}

    changes = manager_api.get("/api/changes/", {"request_id": "po-4711-sync"}).json()
    assert sorted(c["object"] for c in changes) == ["dgx-z00", "dgx-z01", "dgx-z02"]
    assert {c["model"] for c in changes} == {"inventory.node"} and changes[0]["user"] == "max"

    # A reason in the body, and a request id the portal makes up when the client sends none (or a bad one).
    node = Node.objects.get(hostname="dgx-z00")
    make_team("vision")
    patched = manager_api.patch(node_url(node), {"owner_team": "vision", "change_reason": "team moved"},
                                HTTP_X_REQUEST_ID="not valid!")
    assert patched.status_code == 200 and len(patched["X-Request-ID"]) == 32
    latest = node.history.first()
    assert (latest.history_change_reason, latest.request_id) == ("team moved", patched["X-Request-ID"])
    history = manager_api.get(f"{node_url(node)}history/").json()
    assert [r["type"] for r in history["results"]] == ["changed", "created"]
    latest = history["results"][0]
    assert latest["reason"] == "team moved" and latest["values"]["owner_team_id"] == "vision"  # by attname


def test_the_edit_form_stores_a_reason(manager_client):
    node = make_node(hostname="dgx-a01")
    make_team("vision")
    form = manager_client.get(node.get_edit_url()).context["form"]
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    data.update(owner_team="vision", change_reason="moved to the vision team")
    assert manager_client.post(node.get_edit_url(), data).status_code == 302
    assert node.history.first().history_change_reason == "moved to the vision team"
    assert "moved to the vision team" in manager_client.get("/changes/").content.decode()


# --- Cursor pages -----------------------------------------------------------------------------------------


def test_cursor_pages_walk_a_list_to_the_end(viewer_api, django_assert_max_num_queries):
    bulk_make("node", 7)
    seen, url = [], f"{NODES}?cursor=&page_size=3&ordering=-hostname"
    while url:
        with django_assert_max_num_queries(8):
            page = viewer_api.get(url).json()
        assert "count" not in page
        seen += [n["hostname"] for n in page["results"]]
        url = page["next"]
    assert seen == sorted(Node.objects.values_list("hostname", flat=True), reverse=True)
    assert viewer_api.get(f"{NODES}?cursor=garbage").status_code == 400
    assert "count" in viewer_api.get(NODES).json()  # page numbers stay the default


def test_telemetry_rows_by_cursor(viewer_api):
    gpu = make_gpu(node=make_node())
    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=10)
    GPUHourly.objects.bulk_create([GPUHourly(gpu=gpu, hour=start + timedelta(hours=h), util_mean=h * 10.0)
                                   for h in range(10)])
    since = f"{start + timedelta(hours=2):%Y-%m-%dT%H:%M:%SZ}"
    rows, url = [], f"/api/inventory/gpu-hourly/?cursor=&page_size=4&gpu={gpu.pk}&since={since}"
    while url:
        page = viewer_api.get(url).json()
        rows += page["results"]
        url = page["next"]
    assert [r["util_mean"] for r in rows] == [h * 10.0 for h in range(2, 10)]
    assert rows[0]["node"] == gpu.node_id


# --- Bulk -------------------------------------------------------------------------------------------------------


def test_bulk_create_is_all_or_nothing_with_errors_per_item(manager_api):
    site = make_site()
    model = make_node().node_model
    items = [
        {"hostname": "dgx-b01", "site": site.pk, "node_model": model.pk},
        {"hostname": "dgx-b01", "site": site.pk, "node_model": model.pk},  # the same hostname again
        {"hostname": "dgx-b03", "site": 999999, "node_model": model.pk},
    ]
    before = Node.objects.count()
    answer = manager_api.post(NODES, items, format="json")
    assert answer.status_code == 400
    body = answer.json()
    assert "2 of 3 items are invalid" in body["detail"]
    assert body["errors"][0] == {} and "hostname" in body["errors"][1] and "site" in body["errors"][2]
    assert Node.objects.count() == before


def test_bulk_update_and_delete(manager_api, viewer_api):
    nodes = [make_node(hostname=f"dgx-c0{i}") for i in range(3)]
    make_team("vision"), make_team("nlp")
    patch = [{"id": n.pk, "owner_team": "vision"} for n in nodes]
    answer = manager_api.patch(NODES, patch, format="json")
    assert answer.status_code == 200 and [n["owner_team"] for n in answer.json()] == ["vision"] * 3

    bad = manager_api.patch(NODES, [{"id": nodes[0].pk, "owner_team": "nlp"}, {"id": 999999}], format="json")
    assert bad.status_code == 400 and bad.json()["errors"][1] == {"id": ["No node with id 999999."]}
    assert Node.objects.get(pk=nodes[0].pk).owner_team_id == "vision"

    assert viewer_api.delete(NODES, [n.pk for n in nodes], format="json").status_code == 403
    assert manager_api.delete(NODES, [nodes[0].pk, {"id": nodes[1].pk}], format="json").status_code == 204
    assert list(Node.objects.values_list("hostname", flat=True)) == ["dgx-c02"]
    assert manager_api.post(NODES, [], format="json").status_code == 400


def test_bulk_delete_of_a_used_object_names_it(manager_api):
    node = make_node()
    make_gpu(node=node)
    answer = manager_api.delete("/api/inventory/sites/", [node.site_id], format="json")
    assert answer.status_code == 400 and "still used by" in answer.json()["errors"][0]["non_field_errors"][0]


# --- Trimmed answers --------------------------------------------------------------------------------------------


def test_fields_and_brief_trim_answers_without_extra_queries(viewer_api, django_assert_num_queries):
    bulk_make("node", 5)
    full = viewer_api.get(NODES).json()["results"][0]
    assert {"hostname", "state", "site", "gpu_count"} <= set(full)
    trimmed = viewer_api.get(NODES, {"fields": "id,hostname,state"}).json()["results"]
    assert all(set(n) == {"id", "hostname", "state"} for n in trimmed)
    assert set(viewer_api.get(NODES, {"brief": "1"}).json()["results"][0]) == {"id", "url", "display"}
    node = Node.objects.first()
    assert set(viewer_api.get(node_url(node), {"fields": "hostname"}).json()) == {"hostname"}
    unknown = viewer_api.get(NODES, {"fields": "hostname,secret_sauce"})
    assert unknown.status_code == 400 and "secret_sauce" in unknown.json()["fields"][0]
