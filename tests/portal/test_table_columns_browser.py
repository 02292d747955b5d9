"""The Columns control in a real browser (Chromium, 1280x800) on the demo fleet (``seed_demo``): the five lists
with a column choice fit their card with their default columns, and hiding a column on the node list sticks."""

from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.inventory.test_journeys_inventory import log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture

# The list, and the element that holds its table (and scrolls it sideways when it is too wide).
LISTS = {
    "/inventory/nodes/": "#object-table",
    "/planning/contracts/": "#object-table",
    "/planning/capacity-plans/": "#object-table",
    "/inventory/gpu-models/": "#object-table",
    "/changes/": "#change-table",
}
WIDTHS = """(box) => {
  const holder = document.querySelector(box), table = holder.querySelector("table");
  return [table.scrollWidth, holder.scrollWidth, holder.clientWidth, table.rows.length];
}"""


@pytest.fixture
def demo(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("seed_demo", stdout=StringIO())
    return make_user("max", MANAGER)


def test_the_lists_fit_1280_px_and_a_hidden_column_stays_hidden(demo, browser_page):
    session, page = browser_page, browser_page.page
    log_in(page, demo, "/inventory/nodes/")
    measured = {}
    for url, box in LISTS.items():
        page.goto(url)
        measured[url] = table, scrolled, holder, rows = page.evaluate(WIDTHS, box)
        assert rows > 2, f"{url}: the demo should fill the table"
    print("table scrollWidth, holder scrollWidth, holder clientWidth, rows at 1280x800:", measured)
    # Nothing to scroll sideways: the table fits its holder, and the holder (padding included) does not scroll.
    too_wide = {url: widths for url, widths in measured.items() if max(widths[:2]) > widths[2]}
    assert too_wide == {}

    # Hide the partition on the node list, sorted and filtered: the list comes back as it was, without it.
    page.goto("/inventory/nodes/?sort=-hostname&partition=inference")
    header = page.locator("#object-table thead th")
    expect(header.filter(has_text="Partition")).to_have_count(1)
    page.locator("#column-menu summary").click()
    page.locator("#column-menu").get_by_role("checkbox", name="Partition / pool").uncheck()
    session.screenshot("table-columns-menu", docs=True)
    with page.expect_navigation():
        page.locator("#column-menu").get_by_role("button", name="Save").click()
    assert page.url.endswith("/inventory/nodes/?sort=-hostname&partition=inference")
    expect(page.locator(".messages")).to_contain_text("Columns saved.")
    expect(header.filter(has_text="Partition")).to_have_count(0)
    expect(header.filter(has_text="Hostname")).to_have_count(1)
    page.reload()
    expect(header.filter(has_text="Hostname")).to_have_count(1)
    expect(header.filter(has_text="Partition")).to_have_count(0)
    session.screenshot("table-columns-nodes")

    # Reset: the partition is back.
    page.locator("#column-menu summary").click()
    with page.expect_navigation():
        page.locator("#column-menu").get_by_role("button", name="Reset to default").click()
    expect(header.filter(has_text="Partition")).to_have_count(1)
    session.assert_clean()
