"""Every list page of the menus and the home page fit a 1280×800 window (Chromium, the demo fleet): the page never
scrolls sideways, and a table wider than its card scrolls inside the card (its first, key columns in view), never
past the card's edge. The tables issue 37 found cut off (the home page's renewals, SLA and recommendations, the
capacity plans, the interruptions) fit their card outright: headings and long text wrap."""

from io import StringIO

import pytest
from django.core.management import call_command

from portal.registry import menu
from portal.roles import ADMIN
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture

# The tables that must fit without scrolling: page -> the ids of their cards (None: the list's own table).
MUST_FIT = {
    "/": ["renewal-alerts", "recommendations", "sla-tickets"],
    "/planning/capacity-plans/": [None],
    "/inventory/interruptions/": [None],
}
# Per card id (the list's table: "object-table"): the table's width and the card's width inside its padding.
WIDTHS_JS = """(ids) => ids.map(id => {
  const card = document.getElementById(id || "object-table"), table = card && card.querySelector("table");
  const style = getComputedStyle(card);
  const inner = card.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return table ? [id, Math.round(table.getBoundingClientRect().width), Math.floor(inner)] : [id, null, null];
})"""

# Per page: how far the document scrolls sideways, and each table that runs past the window or its card, or is
# wider than its holder without a holder that scrolls (the table's id or its card's heading, and the widths).
LAYOUT_JS = """() => {
  const width = document.documentElement.clientWidth, problems = [];
  const scrolls = el => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  for (const table of document.querySelectorAll("main table")) {
    if (!table.getClientRects().length) continue;  // not shown (a closed menu, a hidden tab)
    const card = table.closest(".card, #object-table, section") || table.parentElement;
    const name = table.id || (card.querySelector("h2") || card).textContent.trim().slice(0, 40) || card.id;
    let holder = table.parentElement;
    while (holder !== card && holder && !scrolls(holder)) holder = holder.parentElement;
    const box = (holder || card).getBoundingClientRect(), cardBox = card.getBoundingClientRect();
    if (box.right > width + 0.5 || cardBox.right > width + 0.5)
      problems.push([name, "past the window", Math.round(cardBox.right), width]);
    else if (table.getBoundingClientRect().width > box.width + 0.5 && !scrolls(holder || card))
      problems.push([name, "wider than its card, not scrolling", Math.round(table.scrollWidth), box.width]);
  }
  return {page: document.documentElement.scrollWidth - width, tables: problems};
}"""


@pytest.fixture
def demo(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("seed_demo", stdout=StringIO())
    return make_user("layout-admin", ADMIN)


def menu_pages(user):
    """The home page and every page of the main menu the user may open, with the change log."""
    return ["/", *(url for _, items in menu(user) for _, url in items), "/changes/"]


def test_every_menu_page_fits_1280_px(demo, browser_page):
    session, page = browser_page, browser_page.page
    assert page.viewport_size == {"width": 1280, "height": 800}
    log_in(page, demo, "pw-layout-admin", "/")
    measured = {}
    for url in menu_pages(demo):
        response = page.goto(url)
        assert response.status == 200, url
        page.wait_for_load_state("networkidle")
        found = page.evaluate(LAYOUT_JS)
        if found["page"] > 0 or found["tables"]:
            measured[url] = found
        if url in MUST_FIT:
            widths = page.evaluate(WIDTHS_JS, MUST_FIT[url])
            assert all(table is not None for _, table, _ in widths), (url, widths)  # the demo shows each table
            wide = [row for row in widths if row[1] > row[2] + 1]
            assert wide == [], f"{url}: tables wider than their card at 1280 px: {wide}"
    assert measured == {}, f"pages wider than 1280 px or tables cut off: {measured}"
    session.assert_clean()
