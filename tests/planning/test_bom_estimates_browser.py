"""Issue 37's item 6 in a real browser: a plan's bill of materials filled from its scenario shows each line by its
item's name with the derivation as a note, flags the estimated prices, and a manager confirms the storage
placeholder's price in place (htmx): the line says who confirmed it, the total's estimated part shrinks; the section
fits a 1,280 px window."""

import re
from datetime import date

import pytest
from playwright.sync_api import expect

from planning.plans import bom
from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in
from tests.helpers.plans import bom_plan

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_estimated_prices_flagged_and_confirmed(browser_page, settings):
    settings.NETWORK_SHARE_OF_NODE_PRICE, settings.STORAGE_SHARE_OF_NODE_PRICE = 0.15, 0.10
    settings.COST_CURRENCY = "USD"
    session, page = browser_page, browser_page.page
    plan = bom_plan()
    bom.fill(plan, "expand", today=date(2026, 12, 2))
    manager = make_user("ann", MANAGER)

    log_in(page, manager, "pw-ann", plan.get_absolute_url())
    section = page.locator("#bill-of-materials")
    storage = plan.items.get(description="Storage for the planned workloads")
    row = section.locator(f"#item-{storage.pk}")
    expect(row.locator(".item-name")).to_have_text("Storage for the planned workloads")
    expect(row.locator("[data-price=estimate]")).to_have_text("Estimate")
    expect(row.locator(".note")).to_contain_text("% of the node price per node")
    share = section.locator(".estimated-share")
    expect(share).to_have_text("of which 9,375,000.00 USD estimated, not confirmed")
    assert_no_horizontal_overflow(page)
    session.screenshot("bom-01-estimates")

    row.get_by_role("button", name="Confirm price of Storage for the planned workloads").click()
    expect(section.locator(".messages")).to_contain_text("Confirmed the price of Storage for the planned workloads")
    expect(section.locator(f"#item-{storage.pk} [data-price=confirmed]")).to_have_text(
        re.compile(r"Confirmed by ann on \d{4}-\d\d-\d\d \d\d:\d\d"))
    expect(section.locator(".estimated-share")).to_have_text("of which 8,625,000.00 USD estimated, not confirmed")
    storage.refresh_from_db()
    assert not storage.price_estimated and storage.price_confirmed_by == manager
    session.screenshot("bom-02-confirmed")
    session.assert_clean()
