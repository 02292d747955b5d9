"""The home dashboard in a real browser (the system Chromium via Playwright, 1280×800): the tiles and the short
panels fit the first screen, every tile opens its list, and nothing fails on the way."""

import pytest
from playwright.sync_api import expect

from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.dashboard import make_dashboard_fleet
from tests.planning.test_journeys_planning import assert_clean, log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


@pytest.fixture
def fleet(transactional_db):
    return make_dashboard_fleet()


def test_the_dashboard_tells_the_story_on_one_screen(fleet, browser_page):
    session, page = browser_page, browser_page.page
    make_user("max", MANAGER)
    log_in(page, "max", "/")
    tiles = page.locator(".kpis.tiles a.kpi")
    expect(tiles.first).to_be_visible()
    count = tiles.count()
    assert count >= 10, f"only {count} tiles"
    expect(page.locator("#tile-utilization b")).to_have_text("41.0 %")
    expect(page.locator("#tile-idle-cost b")).to_have_text("74 USD")
    # Every tile is on the first screen.
    for i in range(count):
        box = tiles.nth(i).bounding_box()
        assert box["y"] + box["height"] <= 800, f"tile {tiles.nth(i).get_attribute('id')} is below the fold"
    session.screenshot("home-dashboard", docs=True)

    # Each tile opens its list (or the section of the page it names) without an error.
    links = [(tiles.nth(i).get_attribute("id"), tiles.nth(i).get_attribute("href")) for i in range(count)]
    for tile, href in links:
        response = page.goto(href)  # None: only the #section changed on the page already open (and loaded)
        assert response is None or response.status == 200, f"{tile} → {href}: {response.status}"
        expect(page.locator("h1")).not_to_be_empty()
    assert_clean(session)
