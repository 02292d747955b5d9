"""The import page helps before anything is written (issue 37): a template to download whose example row imports,
the values each column takes on the page and in each error, the first rows as they will be stored, and warnings
for sites and racks over their power and racks over their height (the plans' power left, from one function)."""

import csv
import html
import io
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from inventory.models import GPU, Node, NodeModel, Rack, Site
from inventory.power import power_headroom_kw
from portal.import_help import ALLOWED_SHOWN, PREVIEW_ROWS
from tests.factories import TeamFactory, make_gpu_model, make_node, make_rack, make_site

pytestmark = pytest.mark.django_db
DGX = "DGX H100"  # 10.2 kW, 8 U (the catalog)


def post(client, model, text, confirm=False):
    return client.post(reverse(f"inventory:{model}_import"), {"confirm" if confirm else "preview": "1",
                                                                "csv_text": text})


def table(text):
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.fixture
def fleet():
    site = make_site(name="Zurich DC1", power_capacity_kw=Decimal("600"))
    rack = make_rack(site=site, name="A01", height_u=42, power_budget_kw=Decimal("40"))
    TeamFactory(name="astro")
    make_node(site=site, hostname="gpu-host", node_model=NodeModel.objects.get(name=DGX))
    make_gpu_model(name="H100 SXM test")
    return site, rack


@pytest.mark.parametrize(("model", "count"), [("site", Site), ("rack", Rack), ("node", Node), ("gpu", GPU)])
def test_the_template_is_the_columns_and_an_example_row_that_imports(manager_client, fleet, model, count):
    response = manager_client.get(reverse(f"inventory:{model}_import"), {"template": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].endswith('-template.csv"')
    header, example = table(response.content.decode())
    form_class = response.resolver_match.func.view_class.form_class
    assert header == list(form_class.base_fields)
    assert any(example)
    before = count.objects.count()
    done = post(manager_client, model, response.content.decode(), confirm=True)
    assert done.status_code == 302, done.context["result"].errors
    assert count.objects.count() == before + 1


def test_the_page_links_the_template_and_lists_the_values_each_column_takes(manager_client, fleet):
    TeamFactory.create_batch(ALLOWED_SHOWN + 4)
    page = html.unescape(manager_client.get(reverse("inventory:node_import")).content.decode())
    assert 'href="/inventory/nodes/import/?template=csv"' in page
    states = re.search(r'data-column="state">One of: ([^<]*)<', page).group(1)
    assert states.startswith("ordered (Ordered), delivered (Delivered), burn_in (Burn-in), in_service (In service)")
    assert "Zurich DC1" in re.search(r'data-column="site">One of: ([^<]*)<', page).group(1)
    teams = re.search(r'data-column="owner_team">One of: ([^<]*)<', page).group(1)
    assert "astro" in teams and teams.endswith(", … (5 more)")  # the first 20 by name, and how many more
    assert DGX in re.search(r'data-column="node_model">One of: ([^<]*)<', page).group(1)
    assert "A date, YYYY-MM-DD." in page  # warranty_end
    assert "Hostname" in page and "Node model" in page  # the export's headers are accepted


def test_each_error_lists_the_values_the_column_takes(manager_client, fleet):
    text = ("hostname,site,node_model,state,owner_team\n"
            "gpu-new-1,Zurich DC1,DGX H100,in_service,astro\n"
            "gpu-new-2,Zurich DC1,DGX H100,broken,astro\n"
            "gpu-new-3,Nowhere,DGX H100,planned,nobody\n")
    response = post(manager_client, "node", text)
    errors = response.context["result"].errors
    assert "row 3, state: 'broken' is not one of: ordered, delivered, burn_in, in_service, degraded, in_repair, " \
           "retired." in errors
    assert "row 4, site: 'Nowhere' is not one of: Zurich DC1." in errors
    assert "row 4, state: 'planned' is not one of: ordered, delivered, burn_in, in_service, degraded, in_repair, " \
           "retired." in errors
    assert "row 4, owner_team: No team named 'nobody': add it on the teams page first. One of: astro." in errors
    assert "'broken' is not one of: ordered" in html.unescape(response.content.decode())
    assert not Node.objects.filter(hostname__startswith="gpu-new").exists()


def test_the_preview_shows_the_first_rows_as_they_will_be_stored(manager_client, fleet):
    rows = [f"gpu-{n:03d},Zurich DC1,,{DGX},in_service,2029-01-31" for n in range(15)]
    text = "hostname,site,rack,node_model,state,warranty_end\ngpu-host,Zurich DC1,A01,DGX H100,,\n" + "\n".join(rows)
    result = post(manager_client, "node", text).context["result"]
    shown = [row for row in result.rows if row.cells]
    assert len(shown) == PREVIEW_ROWS
    columns = result.columns
    first, second = ({name: cell for name, cell in zip(columns, row.cells, strict=True)} for row in shown[:2])
    # An update: what changes shows its stored value; the rest is as stored (the state kept).
    assert shown[0].action == "update" and first["rack"] == ("A01", "") and first["state"] == ("delivered", None)
    assert first["hostname"] == ("gpu-host", None) and first["node_model"] == (DGX, None)
    assert shown[1].action == "create" and second["warranty_end"] == ("2029-01-31", None)
    assert second["site"] == ("Zurich DC1", None) and second["state"] == ("in_service", None)
    page = post(manager_client, "node", text).content.decode()
    assert 'id="import-preview"' in page and "<del" in page and "gpu-009" in page
    preview = page[page.index('id="import-preview"'):page.index("Every row")]
    assert "gpu-010" not in preview


def test_a_7_6_mw_import_into_a_600_kw_site_warns_with_the_figures(manager_client, fleet):
    site, _ = fleet
    text = "hostname,site,node_model,state\n" + "\n".join(f"big-{n:03d},Zurich DC1,{DGX},in_service"
                                                           for n in range(744))
    response = post(manager_client, "node", text)
    result = response.context["result"]
    assert result.errors == [] and result.created == 744
    # 745 nodes of 10.2 kW (744 new, gpu-host stored): 7,599 kW.
    assert result.warnings == ["Site Zurich DC1: its nodes would draw 7.6 MW, over its 600.0 kW of power capacity "
                               "(744 nodes of this file draw 7.6 MW); the plans would show -7.0 MW of power left."]
    assert "check before importing" in response.content.decode() and "7.6 MW" in response.content.decode()
    # A warning does not stop the import; the plans' power left is then the warning's figure.
    assert post(manager_client, "node", text, confirm=True).status_code == 302
    assert round(power_headroom_kw(site) / 1000, 1) == -7.0


def test_a_background_import_warns_before_it_is_confirmed(manager_client, fleet, settings, monkeypatch):
    """The same 744 nodes as a file too large for the request: the task's preview page shows the warning, and the
    confirmation still imports them."""
    from portal.tasks import run_import_job

    queued = []
    monkeypatch.setattr("portal.generic.enqueue", lambda task, *args: queued.append(args[0]) or True)
    settings.IMPORT_BACKGROUND_ROWS = 100
    text = "hostname,site,node_model,state\n" + "\n".join(f"big-{n:03d},Zurich DC1,{DGX},in_service"
                                                           for n in range(744))
    assert post(manager_client, "node", text).status_code == 302
    run_import_job(queued[0])
    page = manager_client.get(reverse("import_progress", args=[queued[0]])).content.decode()
    assert "Preview: 744 to create, 0 to update" in page and "1 warning: check before importing" in page
    assert html.unescape(page).count("Site Zurich DC1: its nodes would draw 7.6 MW, over its 600.0 kW") == 1
    assert manager_client.post(reverse("inventory:node_import"), {"job": queued[0], "confirm": "1"}).status_code == 302
    run_import_job(queued[1])
    assert Node.objects.filter(hostname__startswith="big-").count() == 744


def test_a_rack_over_its_height_and_power_budget_warns(manager_client, fleet):
    text = "hostname,site,rack,node_model,state\n" + "\n".join(f"r-{n},Zurich DC1,A01,{DGX},ordered"
                                                                 for n in range(6))
    warnings = post(manager_client, "node", text).context["result"].warnings
    assert "Rack Zurich DC1 / A01: 48 U of nodes in a 42 U rack (6 nodes of this file take 48 U)." in warnings
    assert "Rack Zurich DC1 / A01: its nodes would draw 61.2 kW, over its 40.0 kW power budget." in warnings
    # Five fit the rack's height, not its power; retired nodes draw nothing.
    text = "hostname,site,rack,node_model,state\n" + "\n".join(f"r-{n},Zurich DC1,A01,{DGX},retired"
                                                                 for n in range(6))
    assert post(manager_client, "node", text).context["result"].warnings == []


def test_lowering_a_sites_capacity_or_a_racks_budget_under_the_draw_warns(manager_client, fleet):
    make_node(site=fleet[0], rack=fleet[1], hostname="in-rack", node_model=NodeModel.objects.get(name=DGX))
    site_warnings = post(manager_client, "site", "name,power_capacity_kw,cooling_capacity_kw\n"
                                                 "Zurich DC1,15,20\n").context["result"].warnings
    assert site_warnings == ["Site Zurich DC1: its nodes would draw 20.4 kW, over its 15.0 kW of power capacity "
                             "(0 nodes of this file draw 0.0 kW); the plans would show -5.4 kW of power left."]
    rack_warnings = post(manager_client, "rack", "site,name,height_u,power_budget_kw\n"
                                                 "Zurich DC1,A01,42,5\n").context["result"].warnings
    assert rack_warnings == ["Rack Zurich DC1 / A01: its nodes would draw 10.2 kW, over its 5.0 kW power budget."]


def test_a_file_with_the_exports_headers_imports_and_skips_the_worked_out_columns(manager_client, fleet):
    text = ("Hostname,State,In state for (days),Site,Rack,Node model,GPUs,Owner team,Warranty end\n"
            "gpu-x,in_service,3.5,Zurich DC1,A01,DGX H100,8,astro,2030-05-01\n")
    result = post(manager_client, "node", text).context["result"]
    assert result.errors == [] and result.skipped == ["In state for (days)", "GPUs"]
    post(manager_client, "node", text, confirm=True)
    node = Node.objects.get(hostname="gpu-x")
    assert (node.rack.name, node.owner_team_id, node.warranty_end.isoformat()) == ("A01", "astro", "2030-05-01")
    # Two headers for one column are refused, as an unknown one is.
    both = post(manager_client, "node", "hostname,Hostname,site,node_model,state\na,b,Zurich DC1,DGX H100,ordered\n")
    assert both.context["result"].errors == ["Columns hostname and Hostname both give hostname."]


def test_a_large_files_preview_shows_its_first_rows_too(manager_client, fleet, settings, monkeypatch):
    from portal.tasks import run_import_job

    jobs = []
    monkeypatch.setattr("portal.generic.enqueue", lambda task, *args: jobs.append(args[0]) or True)
    settings.IMPORT_BACKGROUND_ROWS = 20
    text = "Hostname,Site,Node model,State\n" + "\n".join(f"bg-{n:03d},Zurich DC1,{DGX},ordered" for n in range(30))
    assert post(manager_client, "node", text).status_code == 302
    run_import_job(jobs[0])
    page = manager_client.get(reverse("import_progress", args=[jobs[0]])).content.decode()
    assert "Preview: 30 to create, 0 to update" in page and 'id="import-preview"' in page
    preview = page[page.index('id="import-preview"'):]
    assert "bg-000" in preview and "bg-009" in preview and "bg-010" not in preview and "Zurich DC1" in preview
