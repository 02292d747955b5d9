"""Exports that round-trip (issue 37): every list that exports and imports gives a CSV that imports back unchanged,
over the same rows (nothing changes, the file exported again is the same) and into a database without them (the
same rows come back); every other list's CSV has plain cells (no markup) and ISO 8601 dates and times."""

import csv
import io
import re
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils import timezone

from inventory.models import GPU, LifecycleState, Node, NodeModel, Rack, Site
from portal.generic import ObjectListView
from portal.import_help import header_aliases
from tests import factories as f
from tests.helpers.allocations import make_allocation_requests, make_allocations
from tests.helpers.statements import make_rate_cards, make_statements

pytestmark = pytest.mark.django_db
MARKUP = re.compile(r"<[A-Za-z/!][^>]*>")
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}([+-]\d{2}:\d{2}|Z)?)?$")
DATE_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|^\d{4}-\d{2}-\d{2}$|^[A-Z][a-z]{2}\.? \d{1,2}, \d{4}")


def list_pages(patterns=None, prefix="", namespace=""):
    """``(path, app label, URL name)`` of every list page built on ``ObjectListView``."""
    found = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            found += list_pages(entry.url_patterns, prefix + str(entry.pattern), entry.namespace or namespace)
        elif isinstance(entry, URLPattern) and "<" not in str(entry.pattern):
            view = getattr(entry.callback, "view_class", None)
            if view is not None and issubclass(view, ObjectListView):
                found.append(("/" + prefix + str(entry.pattern), namespace, entry.name))
    return found


PAGES = list_pages()
IMPORTABLE = [(path, name) for path, _, name in PAGES if resolve(path).func.view_class.importable]


def read(response):
    assert response.status_code == 200, response.status_code
    return list(csv.reader(io.StringIO(response.content.decode(), newline="")))


def export(client, path):
    return read(client.get(path, {"_export": "csv"}))


# --- Lists that export and import ------------------------------------------------------------------------


@pytest.fixture
def fleet():
    """Sites, racks, nodes and GPUs with every column the imports take filled somewhere: a description with a comma,
    a quote and a line break, a name a spreadsheet would run, an expired warranty, spare GPUs, retired nodes."""
    dgx, hgx = NodeModel.objects.get(name="DGX H100"), NodeModel.objects.get(name="DGX A100 640GB")
    team = f.TeamFactory(name="astro")
    zurich = f.make_site(name="Zurich DC1", location="Zurich", power_capacity_kw=Decimal("2500.0"),
                         cooling_capacity_kw=Decimal("2600.0"), pue=Decimal("1.25"),
                         energy_price_per_kwh=Decimal("0.1800"), rack_cost_per_month=Decimal("1200.00"),
                         description='Hall 3, "north"\nsecond floor')
    lyon = f.make_site(name="-Lyon DC2", location="Lyon", power_capacity_kw=Decimal("600.0"),
                       cooling_capacity_kw=Decimal("650.0"))
    racks = [f.make_rack(site=zurich, name="A01", height_u=42, power_budget_kw=Decimal("40.0")),
             f.make_rack(site=zurich, name="A02", height_u=48, power_budget_kw=Decimal("60.0")),
             f.make_rack(site=lyon, name="L1", height_u=42, power_budget_kw=Decimal("30.0"))]
    today = timezone.localdate()
    nodes = [
        f.make_node(site=zurich, rack=racks[0], position=1, node_model=dgx, hostname="gpu-001", serial="SN1",
                    asset_tag="AT-1", partition="gpu", owner_team=team, warranty_end=today - timedelta(days=30),
                    state=LifecycleState.IN_SERVICE),
        f.make_node(site=zurich, rack=racks[0], position=9, node_model=dgx, hostname="gpu-002", partition="gpu",
                    warranty_end=today + timedelta(days=400), state=LifecycleState.DEGRADED),
        f.make_node(site=zurich, rack=racks[1], position=1, node_model=hgx, hostname="=gpu-003",
                    state=LifecycleState.BURN_IN),
        f.make_node(site=lyon, node_model=hgx, hostname="lyon-001", state=LifecycleState.RETIRED),
    ]
    h100 = f.make_gpu_model(name="H100 test")
    for slot in range(2):
        f.make_gpu(node=nodes[0], slot=slot, gpu_model=h100, serial=f"G1-{slot}", uuid=f"GPU-1-{slot}",
                   state=LifecycleState.IN_SERVICE)
    f.make_gpu(node=nodes[1], slot=0, gpu_model=h100, serial="G2-0", state=LifecycleState.DEGRADED)
    f.make_gpu(gpu_model=h100, serial="SPARE-1", uuid="GPU-spare", state=LifecycleState.DELIVERED)
    return zurich


def imported_columns(path, rows):
    """The indexes of the columns of an exported file that its import takes (the rest is worked out)."""
    view = resolve(path).func.view_class
    importer = resolve(reverse(f"inventory:{view.queryset.model._meta.model_name}_import")).func.view_class
    aliases, _ = header_aliases(importer.form_class, importer.list_table_class())
    return [index for index, header in enumerate(rows[0]) if header.strip().lower() in aliases]


def post_file(client, path, text, confirm):
    return client.post(f"{path}import/", {"confirm" if confirm else "preview": "1", "csv_text": text})


def test_every_list_that_imports_is_tried():
    assert sorted(name for _, name in IMPORTABLE) == ["gpu_list", "node_list", "rack_list", "site_list"]


@pytest.mark.parametrize(("path", "name"), IMPORTABLE)
def test_an_exported_file_imports_back_over_the_same_rows_unchanged(manager_client, fleet, path, name):
    response = manager_client.get(path, {"_export": "csv"})
    text, before = response.content.decode(), read(response)
    assert len(before) > 2
    preview = post_file(manager_client, path, text, confirm=False)
    result = preview.context["result"]
    assert result.errors == [] and result.created == 0 and result.updated == len(before) - 1
    # Every value of the first rows shown as stored already: nothing would change.
    assert all(old is None for row in result.rows if row.cells for _, old in row.cells)
    model = resolve(path).func.view_class.queryset.model
    stored = list(model.objects.order_by("pk").values())
    assert post_file(manager_client, path, text, confirm=True).status_code == 302
    assert [{k: v for k, v in row.items() if k != "updated"} for row in model.objects.order_by("pk").values()] == \
        [{k: v for k, v in row.items() if k != "updated"} for row in stored]
    assert export(manager_client, path) == before


EMPTIED = {  # what goes before the rows of a list are deleted (what protects them), and what comes back with them
    "site_list": (GPU, Node, Rack, Site),
    "rack_list": (GPU, Node, Rack),
    "node_list": (GPU, Node),
    "gpu_list": (GPU,),
}


@pytest.mark.parametrize(("path", "name"), IMPORTABLE)
def test_an_exported_file_imports_into_a_database_without_its_rows(manager_client, fleet, path, name):
    response = manager_client.get(path, {"_export": "csv"})
    text, before = response.content.decode(), read(response)
    columns = imported_columns(path, before)
    for model in EMPTIED[name]:
        model.objects.all().delete()
    assert export(manager_client, path) == [before[0]]
    done = post_file(manager_client, path, text, confirm=True)
    assert done.status_code == 302, done.context["result"].errors
    after = export(manager_client, path)
    assert [[row[i] for i in columns] for row in after] == [[row[i] for i in columns] for row in before]


def test_the_node_file_is_plain(manager_client, fleet):
    rows = export(manager_client, "/inventory/nodes/")
    header, by_host = rows[0], {row[0]: dict(zip(rows[0], row, strict=True)) for row in rows[1:]}
    assert "In state for (days)" in header and "In state for" not in header
    expired = by_host["gpu-001"]
    assert expired["Warranty end"] == (timezone.localdate() - timedelta(days=30)).isoformat()
    assert float(expired["In state for (days)"]) < 1 and expired["State"] == "in_service"
    assert by_host["'=gpu-003"]["Hostname"] == "'=gpu-003"  # neutralised, and read back as "=gpu-003"
    assert Node.objects.filter(hostname="=gpu-003").exists()
    assert not any(MARKUP.search(cell) for row in rows for cell in row)
    sites = export(manager_client, "/inventory/sites/")
    assert sites[0][-4:] == ["PUE", "Energy price per kWh", "Space cost per rack and month", "Description"]
    assert sites[0][:2] == ["Name", "Location"]  # the page's columns first, the import's extras after


# --- Every other list --------------------------------------------------------------------------------------


def _tickets(n):
    node, user = f.make_node(), f.UserFactory()
    return [f.TicketFactory(requester=user, node=node) for _ in range(n)]


MAKERS = {
    "teamallocation": make_allocations, "allocationrequest": make_allocation_requests,
    "statement": make_statements, "ratecard": make_rate_cards, "ticket": _tickets,
}


def make_rows(model, n=2):
    """Rows of ``model`` for its list, as the battery makes them; None where there is no maker."""
    name = model._meta.model_name
    if name in f.BULK:
        return f.bulk_make(name, n)
    if name in MAKERS:
        return MAKERS[name](n)
    factory = getattr(f, f"{model.__name__}Factory", None)
    return factory.create_batch(n) if factory is not None else None


def page_model(app, url_name):
    try:
        return apps.get_model(app, url_name.removesuffix("_list"))
    except LookupError:
        return None


@pytest.mark.parametrize(("path", "app", "url_name"), [page for page in PAGES if page[1:] not in
                                                       [("inventory", name) for _, name in IMPORTABLE]])
def test_every_other_list_exports_plain_cells_and_iso_times(client, admin_user, path, app, url_name):
    client.force_login(admin_user)  # some lists are an admin's (directory group mappings)
    model = page_model(app, url_name)
    made = make_rows(model) if model is not None else None
    f.make_node(warranty_end=date(2020, 1, 1))  # lists of nodes and their coverage (uncovered) have a row
    rows = export(client, path)
    if made:
        assert len(rows) > 1, path
    for row in rows[1:]:
        for cell in row:
            assert not MARKUP.search(cell), (path, cell)
            if DATE_LIKE.match(cell):
                assert ISO.match(cell), (path, cell)


def test_times_are_iso_with_their_offset(manager_client):
    ticket = _tickets(1)[0]
    rows = export(manager_client, "/support/tickets/")
    opened = dict(zip(rows[0], rows[1], strict=True))["Opened"]
    assert opened == timezone.localtime(ticket.opened).isoformat(timespec="seconds")
    assert "T" in opened and opened[-6] in "+-"
