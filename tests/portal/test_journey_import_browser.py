"""Issue 37's import journey in a real browser (the system Chromium via Playwright, against ``live_server``): a
manager downloads the node import's template, fills it with 745 DGX H100 nodes for a 600 kW site and imports it.

1. The nodes list → Import CSV: the page lists the values each column takes; "Download a template" gives the columns
   and an example row.
2. A file with a bad row (state "broken") comes back with the error naming the row and the states there are;
   nothing is written.
3. The row fixed, the preview shows the first rows as they will be stored and warns, with the figures, that the
   site's nodes would draw 7.6 MW of its 600 kW; the import goes through all the same.
4. The list's CSV export holds the imported rows as they were in the file.

Every page runs without a JS error, a failed request or a request to another host (the 400 is the refused file).
"""

import csv
import io
import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from inventory.forms import NodeImportForm
from inventory.models import Node
from inventory.tables import NodeTable
from portal.import_help import header_aliases
from portal.roles import MANAGER
from tests.factories import TeamFactory, make_rack, make_site
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]
NODES = 745  # 745 × 10.2 kW: 7.6 MW


def download(page, link):
    with page.expect_download() as info:
        link.click()
    return info.value.path().read_text()


def upload(page, text, button):
    page.set_input_files("#id_csv_file", files=[{"name": "nodes.csv", "mimeType": "text/csv",
                                                 "buffer": text.encode()}])
    with page.expect_navigation():
        page.get_by_role("button", name=button).click()


def test_template_bad_row_preview_warning_import_and_export(browser_page):
    session, page = browser_page, browser_page.page
    site = make_site(name="Zurich DC1", power_capacity_kw=Decimal("600.0"))
    make_rack(site=site, name="A01", height_u=42, power_budget_kw=Decimal("40.0"))
    TeamFactory(name="astro")
    manager = make_user("max", MANAGER)
    log_in(page, manager, "pw-max", "/inventory/nodes/")

    # 1. The import page and its template.
    with page.expect_navigation(url=re.compile(r"/inventory/nodes/import/$")):
        page.get_by_role("link", name="Import CSV").first.click()
    states = page.locator('[data-column="state"]')
    expect(states).to_contain_text("ordered (Ordered), delivered (Delivered), burn_in (Burn-in)")
    expect(page.locator('[data-column="site"]')).to_have_text("One of: Zurich DC1")
    template = list(csv.reader(io.StringIO(download(page, page.get_by_role("link", name="Download a template")))))
    header, example = template
    assert header[:4] == ["hostname", "serial", "asset_tag", "site"] and "state" in header
    assert dict(zip(header, example, strict=True))["site"] == "Zurich DC1"

    # 2. A file from the template with a bad row: the error names the row and the states there are.
    rows = [dict(zip(header, example, strict=True))]
    for number in range(NODES):
        rows.append({**dict.fromkeys(header, ""), "hostname": f"gpu-{number:03d}", "site": "Zurich DC1",
                     "node_model": "DGX H100", "state": "in_service", "partition": "train", "owner_team": "astro",
                     "warranty_end": "2029-06-30", "serial": f"SN-{number:03d}"})
    rows[1].update(rack="A01", position="1")
    rows[5]["state"] = "broken"

    def text():
        lines = io.StringIO()
        writer = csv.DictWriter(lines, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
        return lines.getvalue()

    upload(page, text(), "Preview")
    errors = page.locator(".import-errors li")
    expect(errors).to_have_count(1)
    expect(errors).to_have_text("row 7, state: 'broken' is not one of: ordered, delivered, burn_in, in_service, "
                                "degraded, in_repair, retired.")
    expect(page.get_by_role("button", name=re.compile("^Import"))).to_have_count(0)
    assert not Node.objects.exists()
    # The refused file's 400, checked above, and let go (the browser logs it as a console error too).
    session.bad_responses = [r for r in session.bad_responses if not r.startswith("400 POST")]
    session.console_errors = [e for e in session.console_errors if "status of 400" not in e]

    # 3. Fixed: the first rows as they will be stored, the power warning, then the import.
    rows[5]["state"] = "in_service"
    upload(page, text(), "Preview")
    expect(page.locator("#preview h2")).to_have_text(f"Preview: {NODES + 1} to create, 0 to update")
    preview = page.locator("#import-preview tbody tr")
    expect(preview).to_have_count(10)
    first = preview.nth(1).locator("td")
    expect(first.nth(0)).to_have_text("3")  # the file's row
    expect(first.nth(2)).to_have_text("gpu-000")
    assert "A01" in preview.nth(1).inner_text() and "2029-06-30" in preview.nth(1).inner_text()
    warnings = page.locator("#import-warnings")
    expect(warnings).to_contain_text("Site Zurich DC1: its nodes would draw 7.6 MW, over its 600.0 kW of power "
                                     "capacity")
    expect(warnings).to_contain_text("the plans would show -7.0 MW of power left")
    with page.expect_navigation(url=re.compile(r"/inventory/nodes/$")):
        page.get_by_role("button", name=f"Import {NODES + 1} rows").click()
    expect(page.locator(".messages")).to_contain_text(f"Imported {NODES + 1} nodes: {NODES + 1} created, 0 updated")

    # 4. The export holds what was imported.
    exported = list(csv.reader(io.StringIO(download(page, page.get_by_role("link", name="Export CSV")))))
    aliases, _ = header_aliases(NodeImportForm, NodeTable)  # the export's headers, as the import reads them
    index = {aliases[title.lower()]: i for i, title in enumerate(exported[0]) if title.lower() in aliases}
    assert sorted(index) == sorted(header)
    got = {row[index["hostname"]]: {name: row[i] for name, i in index.items()} for row in exported[1:]}
    assert len(got) == NODES + 1
    assert got == {row["hostname"]: row for row in rows}
    session.assert_clean()
