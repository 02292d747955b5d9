"""CSV import: preview, every bad row reported, nothing kept unless all rows are valid, re-import updates."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from inventory.models import GPU, LifecycleState, Node, Rack, Site, StateTransition
from tests.factories import make_gpu_model, make_node, make_node_model, make_rack, make_site

SITES = """name,location,power_capacity_kw,cooling_capacity_kw
Zurich DC1,Zurich,2500,2600
Lyon DC2,Lyon,1800,1900
"""


def post_csv(client, model, text, confirm=False, as_file=False):
    data = {"confirm": "1"} if confirm else {"preview": "1"}
    if as_file:
        data["csv_file"] = SimpleUploadedFile("import.csv", text.encode(), content_type="text/csv")
    else:
        data["csv_text"] = text
    return client.post(reverse(f"inventory:{model}_import"), data)


def test_preview_imports_nothing_then_confirm_imports_all(manager_client):
    preview = post_csv(manager_client, "site", SITES, as_file=True)
    assert preview.status_code == 200
    result = preview.context["result"]
    assert (result.created, result.updated, result.errors) == (2, 0, [])
    assert not Site.objects.exists()
    assert b"Import 2 rows" in preview.content

    done = post_csv(manager_client, "site", SITES, confirm=True)
    assert done.status_code == 302
    assert sorted(Site.objects.values_list("name", flat=True)) == ["Lyon DC2", "Zurich DC1"]


def test_re_import_updates_rather_than_duplicates(manager_client):
    post_csv(manager_client, "site", SITES, confirm=True)
    changed = SITES.replace("Zurich,2500", "Zurich Oerlikon,3000")
    result = post_csv(manager_client, "site", changed).context["result"]
    assert (result.created, result.updated) == (0, 2)
    post_csv(manager_client, "site", changed, confirm=True)
    assert Site.objects.count() == 2
    zurich = Site.objects.get(name="Zurich DC1")
    assert zurich.location == "Zurich Oerlikon" and zurich.power_capacity_kw == 3000


def test_every_bad_row_is_reported_and_nothing_imported(manager_client):
    site = make_site(name="Zurich DC1")
    make_rack(site=site, name="A01", height_u=42)
    node_model = make_node_model(name="DGX-Test", height_u=8)
    text = (
        "hostname,site,rack,position,node_model,state\n"
        "gpu-001,Zurich DC1,A01,1,DGX-Test,in_service\n"  # fine
        "gpu-002,Nowhere,A01,9,DGX-Test,in_service\n"  # unknown site
        "gpu-003,Zurich DC1,A01,40,DGX-Test,in_service\n"  # 8U from U40 exceeds 42U
        "gpu-004,Zurich DC1,B99,1,DGX-Test,in_service\n"  # unknown rack
        "gpu-005,Zurich DC1,A01,5,DGX-Test,flying\n"  # overlaps gpu-001 and bad state
    )
    response = post_csv(manager_client, "node", text, confirm=True)
    assert response.status_code == 400
    errors = response.context["result"].errors
    assert any(e.startswith("row 3, site:") for e in errors)
    assert any(e.startswith("row 4, position:") and "above the rack" in e for e in errors)
    assert any(e.startswith("row 5, rack:") and "No rack 'B99'" in e for e in errors)
    assert any(e.startswith("row 6, state:") for e in errors)
    assert not any(e.startswith("row 2") for e in errors)
    assert not Node.objects.exists()
    assert "nothing imported" in response.content.decode()
    assert node_model.nodes.count() == 0


def test_rows_that_conflict_with_each_other_are_caught(manager_client):
    node = make_node(node_model=make_node_model(gpu_slots=2))
    gpu_model = make_gpu_model(name="H100 test")
    text = "serial,uuid,node,slot,gpu_model,state\n" + "".join(
        f"SN-{i},GPU-{i},{node.hostname},{slot},H100 test,in_service\n" for i, slot in enumerate([0, 1, 1])
    )
    result = post_csv(manager_client, "gpu", text).context["result"]
    assert len(result.errors) == 1 and result.errors[0].startswith("row 4")
    assert gpu_model.gpus.count() == 0


def test_re_import_with_a_new_state_records_the_transition(manager_client, manager):
    node = make_node(node_model=make_node_model(gpu_slots=8))
    make_gpu_model(name="H200 test")
    first = f"serial,node,slot,gpu_model,state\nSN-A,{node.hostname},0,H200 test,in_service\n"
    post_csv(manager_client, "gpu", first, confirm=True)
    gpu = GPU.objects.get(serial="SN-A")
    post_csv(manager_client, "gpu", first.replace("in_service", "degraded"), confirm=True)
    gpu.refresh_from_db()
    assert gpu.state == LifecycleState.DEGRADED
    record = StateTransition.objects.get(object_id=gpu.pk, to_state="degraded")
    assert record.username == manager.username and record.reason == "CSV import"

    refused = post_csv(manager_client, "gpu", first.replace("in_service", "burn_in"), confirm=True)
    assert any("Cannot go from Degraded to Burn-in" in e for e in refused.context["result"].errors)
    gpu.refresh_from_db()
    assert gpu.state == LifecycleState.DEGRADED


def test_rack_import_matches_on_site_and_name(manager_client):
    make_site(name="Zurich DC1")
    make_site(name="Lyon DC2")
    text = "site,name,height_u,power_budget_kw\nZurich DC1,A01,42,40\nLyon DC2,A01,48,60\n"
    post_csv(manager_client, "rack", text, confirm=True)
    post_csv(manager_client, "rack", text.replace(",60", ",80"), confirm=True)
    assert Rack.objects.count() == 2
    assert Rack.objects.get(site__name="Lyon DC2").power_budget_kw == 80


def test_file_level_errors(manager_client):
    unknown = post_csv(manager_client, "site", "name,colour\nX,blue\n").context["result"]
    assert "Unknown columns: colour" in unknown.errors[0]
    missing = post_csv(manager_client, "site", "name\nX\n").context["result"]
    assert "Missing required columns" in missing.errors[0]
    empty = manager_client.post(reverse("inventory:site_import"), {"csv_text": ""})
    assert empty.status_code == 400 and "Choose a CSV file" in empty.content.decode()
    assert not Site.objects.exists()


def test_viewer_cannot_import(viewer_client):
    assert viewer_client.get(reverse("inventory:site_import")).status_code == 403
    assert post_csv(viewer_client, "site", SITES, confirm=True).status_code == 403
    assert not Site.objects.exists()
