"""The inventory pages as a user meets them: login, roles, lists, filters, forms, lifecycle, search."""

import csv
import io
from collections import Counter

import pytest
from django.urls import get_resolver, reverse

from inventory.models import GPU, LifecycleState, Node, Site, StateTransition
from portal.models import APIToken
from tests.factories import bulk_make, make_gpu, make_node, make_rack, make_site, make_team


def list_url(model):
    return reverse(f"inventory:{model}_list")


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/inventory/nodes/", "/inventory/sites/1/", "/search/?q=x", "/tokens/"])
def test_anonymous_is_sent_to_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


@pytest.mark.django_db
def test_login_page_logs_in(client, viewer):
    response = client.post(reverse("login"), {"username": "vera", "password": "pw-vera"}, follow=True)
    assert response.status_code == 200
    assert b"Fleet dashboard" in response.content


def test_manager_creates_a_node_with_the_form(manager_client, manager):
    rack = make_rack()
    node_model = make_node(site=rack.site).node_model
    response = manager_client.post(reverse("inventory:node_add"), {
        "hostname": "gpu-new-01", "site": rack.site.pk, "rack": rack.pk, "position": 10,
        "node_model": node_model.pk, "state": "delivered", "partition": "train",
    })
    node = Node.objects.get(hostname="gpu-new-01")
    assert response.status_code == 302 and response.url == node.get_absolute_url()
    assert node.rack == rack and node.state == LifecycleState.DELIVERED
    assert node.history.first().history_user == manager


def test_invalid_form_re_renders_with_the_message_and_saves_nothing(manager_client):
    rack = make_rack(height_u=10)
    node_model = make_node(site=rack.site).node_model
    response = manager_client.post(reverse("inventory:node_add"), {
        "hostname": "gpu-too-high", "site": rack.site.pk, "rack": rack.pk, "position": 11,
        "node_model": node_model.pk, "state": "delivered",
    })
    assert response.status_code == 200
    assert "above the rack" in response.content.decode()
    assert response.context["form"]["hostname"].value() == "gpu-too-high"
    assert not Node.objects.filter(hostname="gpu-too-high").exists()


def test_edit_form_hides_state_and_keeps_it(manager_client):
    node = make_node(state=LifecycleState.IN_SERVICE)
    make_team("vision")
    page = manager_client.get(node.get_edit_url())
    assert "state" not in page.context["form"].fields
    response = manager_client.post(node.get_edit_url(), {
        "hostname": node.hostname, "site": node.site.pk, "node_model": node.node_model.pk, "owner_team": "vision",
    })
    assert response.status_code == 302
    node.refresh_from_db()
    assert node.owner_team_id == "vision" and node.state == LifecycleState.IN_SERVICE
    detail = manager_client.get(node.get_absolute_url()).content.decode()
    assert "owner_team" in detail and "vision" in detail  # the change shows in the history


def test_delete_refused_while_referenced_says_why(manager_client):
    node = make_node()
    response = manager_client.post(node.site.get_delete_url(), follow=True)
    assert Site.objects.filter(pk=node.site.pk).exists()
    assert "cannot be deleted" in response.content.decode()
    empty_site = make_site()
    manager_client.post(empty_site.get_delete_url())
    assert not Site.objects.filter(pk=empty_site.pk).exists()


def test_filters_and_htmx_fragment(manager_client):
    site = make_site()
    make_node(site=site, state=LifecycleState.IN_SERVICE, hostname="gpu-a")
    make_node(site=site, state=LifecycleState.DEGRADED, hostname="gpu-b")
    make_node(state=LifecycleState.DEGRADED, hostname="gpu-c")
    response = manager_client.get(list_url("node"), {"state": "degraded", "site": site.pk})
    rows = [row.record.hostname for row in response.context["table"].paginated_rows]
    assert rows == ["gpu-b"]
    assert "State: Degraded" in response.content.decode()  # the active filter chip

    fragment = manager_client.get(list_url("node"), {"q": "gpu-"}, HTTP_HX_REQUEST="true",
                                  HTTP_HX_TARGET="object-table")
    body = fragment.content.decode()
    assert "<html" not in body and "gpu-a" in body and "gpu-c" in body


def test_csv_export_has_every_filtered_row(manager_client):
    bulk_make("node", 60)  # more than one page
    make_node(state=LifecycleState.IN_REPAIR, hostname="broken-1")
    response = manager_client.get(list_url("node"), {"_export": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 61
    filtered = manager_client.get(list_url("node"), {"_export": "csv", "state": "in_repair"})
    rows = list(csv.DictReader(io.StringIO(filtered.content.decode())))
    assert [(r["Hostname"], r["State"]) for r in rows] == [("broken-1", "in_repair")]


def test_lifecycle_from_the_node_page(manager_client, manager):
    node = make_node(state=LifecycleState.IN_SERVICE)
    url = reverse("inventory:node_transition", args=[node.pk])
    page = manager_client.get(node.get_absolute_url()).content.decode()
    assert 'value="degraded"' in page and 'value="in_repair"' not in page  # only allowed targets

    manager_client.post(url, {"to": "degraded", "reason": "XID 79 on gpu3"})
    node.refresh_from_db()
    assert node.state == LifecycleState.DEGRADED
    record = StateTransition.objects.get(object_id=node.pk)
    assert (record.from_state, record.to_state, record.username, record.reason) == (
        "in_service", "degraded", manager.username, "XID 79 on gpu3")

    response = manager_client.post(url, {"to": "burn_in", "reason": "nope"}, follow=True)
    node.refresh_from_db()
    assert node.state == LifecycleState.DEGRADED
    assert "Cannot go from Degraded to Burn-in" in response.content.decode()
    assert "XID 79 on gpu3" in response.content.decode()  # the record is on the page


def test_viewer_cannot_change_state(viewer_client):
    node = make_node(state=LifecycleState.IN_SERVICE)
    response = viewer_client.post(reverse("inventory:node_transition", args=[node.pk]), {"to": "degraded"})
    assert response.status_code == 403
    node.refresh_from_db()
    assert node.state == LifecycleState.IN_SERVICE


def test_bulk_state_change_on_the_gpu_list(manager_client):
    node = make_node()
    gpus = [make_gpu(node=node, state=LifecycleState.IN_SERVICE) for _ in range(3)]
    retired = make_gpu(state=LifecycleState.RETIRED)
    response = manager_client.post(reverse("inventory:gpu_bulk_transition"), {
        "select": [g.pk for g in gpus] + [retired.pk], "to": "degraded", "reason": "ECC storm",
        "next": list_url("gpu") + "?state=in_service",
    }, follow=True)
    assert GPU.objects.filter(state=LifecycleState.DEGRADED).count() == 3
    assert StateTransition.objects.filter(reason="ECC storm").count() == 3
    assert "3 GPUs now degraded" in response.content.decode()
    assert "Cannot go from Retired" in response.content.decode()
    assert response.redirect_chain[-1][0].endswith("?state=in_service")


def test_search_finds_hostname_serial_and_uuid(manager_client):
    node = make_node(hostname="gpu-zrh-042", serial="SN-NODE-1")
    gpu = make_gpu(node=node, uuid="GPU-1234abcd-0000", serial="SN-GPU-1")
    assert manager_client.get("/search/", {"q": "gpu-zrh-042"}).url == node.get_absolute_url()
    assert manager_client.get("/search/", {"q": "gpu-1234ABCD-0000"}).url == gpu.get_absolute_url()  # UUID, any case
    assert manager_client.get("/search/", {"q": "1234abcd"}).status_code == 200  # in part: listed, not opened
    several = manager_client.get("/search/", {"q": "SN-"})
    assert several.status_code == 200
    assert "gpu-zrh-042" in several.content.decode()
    assert "Nothing matches" in manager_client.get("/search/", {"q": "no-such-thing"}).content.decode()


def test_home_dashboard_counts(viewer_client):
    site = make_site(name="Zurich DC1")
    node = make_node(site=site, state=LifecycleState.IN_SERVICE)
    for _ in range(4):
        make_gpu(node=node, state=LifecycleState.IN_SERVICE)
    make_node(site=site, state=LifecycleState.IN_REPAIR, warranty_end="2020-01-01")
    response = viewer_client.get("/")
    summary = response.context["summary"]
    assert summary["node_total"] == 2 and summary["gpu_total"] == 4
    assert summary["nodes_by_state"]["in_repair"] == 1
    assert summary["out_of_warranty"] == 1
    zurich = next(s for s in summary["sites"] if s["name"] == "Zurich DC1")
    gpu_model = node.gpus.first().gpu_model
    assert zurich["bf16_pflops"] == pytest.approx(4 * float(gpu_model.bf16_tflops) / 1000)
    assert b"plotly.min.js" in response.content and b"cdn" not in response.content.lower()


def test_tokens_are_created_shown_once_used_and_revoked(client, manager):
    client.force_login(manager)
    response = client.post(reverse("tokens"), {"name": "procurement sync"})
    key = response.context["new_key"]
    assert key and key.encode() in response.content
    assert key.encode() not in client.get(reverse("tokens")).content  # shown once
    token = APIToken.objects.get(user=manager)
    client.logout()
    api = client.get("/api/inventory/nodes/", HTTP_AUTHORIZATION=f"Token {key}")
    assert api.status_code == 200
    client.force_login(manager)
    client.post(reverse("token_revoke", args=[token.pk]))
    client.logout()
    assert client.get("/api/inventory/nodes/", HTTP_AUTHORIZATION=f"Token {key}").status_code in (401, 403)


def test_change_log_lists_creates_updates_and_deletes(manager_client, manager, viewer):
    site = make_site(name="Old name")
    manager_client.post(site.get_edit_url(), {"name": "New name", "power_capacity_kw": 10, "cooling_capacity_kw": 10})
    gone = make_site(name="Short-lived")
    manager_client.post(gone.get_delete_url())
    viewer_client = manager_client
    viewer_client.force_login(viewer)
    page = viewer_client.get(reverse("changelog"), {"model": "inventory.site"})
    records = page.context["records"]
    assert [r.history_type for r in records][:3] == ["-", "+", "~"]
    assert records[0].history_user == manager and records[0].history_object.name == "Short-lived"
    assert "New name" in page.content.decode()
    mine = viewer_client.get(reverse("changelog"), {"user": manager.username}).context["records"]
    assert {r.history_type for r in mine} == {"~", "-"}


def test_history_shows_many_to_many_changes_as_ids(manager_client):
    from planning.models import Contract

    first, second = make_node(), make_node()
    contract = Contract.objects.create(kind="support", vendor="Acme", reference="S-1", start="2026-01-01",
                                       end="2027-01-01")
    contract.nodes.set([first])
    contract.save()
    contract.nodes.set([first, second])
    contract.save()
    page = manager_client.get(contract.get_absolute_url())
    changes = [change for row in page.context["history"] for change in row["changes"]]
    assert ("nodes", f"#{first.pk}", f"#{first.pk}, #{second.pk}") in changes
    assert ("nodes", "none", f"#{first.pk}") in changes


def test_history_names_the_related_objects_a_change_points_at(manager_client):
    node = make_node(rack=make_rack(name="R01"))
    old_rack = node.rack
    node.rack = make_rack(site=node.site, name="R02")
    node.save()
    old_rack_id = old_rack.pk
    page = manager_client.get(node.get_absolute_url())
    changes = [change for row in page.context["history"] for change in row["changes"]]
    assert ("rack", str(old_rack), str(node.rack)) in changes
    new_rack = str(node.rack)
    node.rack = None
    node.save()
    old_rack.delete()  # gone: the history can only say which id it was
    changes = [change for row in manager_client.get(node.get_absolute_url()).context["history"]
               for change in row["changes"]]
    assert ("rack", f"#{old_rack_id}", new_rack) in changes and ("rack", new_rack, None) in changes


def test_favicon_ico_points_browsers_at_the_portals_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("/portal/favicon.svg")
    assert client.post("/favicon.ico").status_code == 405


def test_no_page_route_is_declared_twice():
    """A feature's own add or edit page is given to ``object_urls``, not declared again over the generated one."""

    def routes(resolver, prefix=""):
        for pattern in resolver.url_patterns:
            if hasattr(pattern, "url_patterns"):
                yield from routes(pattern, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern)

    pages = [route for route in routes(get_resolver()) if not route.startswith("api/")]  # the API's are its routers'
    twice = [route for route, count in Counter(pages).items() if count > 1]
    assert twice == []


def test_a_node_page_names_the_racks_of_its_moves_in_a_constant_number_of_queries(
        manager_client, django_assert_max_num_queries):
    """The history shows each move's racks by name ("site / rack"): read together, not one query per change."""
    site = make_site()
    still, moved = make_node(site=site), make_node(site=site)
    racks = [make_rack(site=site, name=f"R{i:02}") for i in range(10)]
    for node, moves in ((still, 2), (moved, 10)):
        for rack in racks[:moves]:
            node.rack, node.position = rack, 1
            node.save()
    manager_client.get(still.get_absolute_url())
    with django_assert_max_num_queries(40) as few:
        manager_client.get(still.get_absolute_url())
    with django_assert_max_num_queries(len(few)):
        page = manager_client.get(moved.get_absolute_url()).content.decode()
    assert f"{site.name} / R08" in page and f"{site.name} / R09" in page
