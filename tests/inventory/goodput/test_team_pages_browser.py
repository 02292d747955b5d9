"""The team pages in a real browser at 1280×800 (issue 20), on the goodput fleet (``tests.helpers.goodput``) with n1
and n2 owned by vision: the list, then vision's page with the figures worked out by hand, a range change redrawn
in place, and the link to its interruptions; no sideways scrolling."""

import re

import pytest
from playwright.sync_api import expect

from inventory.goodput import recording
from inventory.models import Node
from portal.roles import VIEWER
from tests.factories import make_team
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in
from tests.helpers.goodput import MIN, H, make_goodput_fleet
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_team_list_and_page(browser_page, monkeypatch):
    now = freeze_now(monkeypatch)
    make_goodput_fleet(now)
    Node.objects.filter(hostname__in=["n1", "n2"]).update(owner_team=make_team("vision"))
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    session, page = browser_page, browser_page.page
    log_in(page, make_user("vic", VIEWER), "pw-vic", "/inventory/teams/")

    vision = page.locator("#team-table tr", has_text="vision")
    for figure in ("95.4 %", "130.0", "369.2", "22.0", "11.0 %"):
        expect(vision).to_contain_text(figure)
    expect(page.locator("#team-table tr", has_text="speech")).to_contain_text("100.0 %")
    assert_no_horizontal_overflow(page)
    session.screenshot("team-list")

    page.wait_for_load_state("networkidle")
    vision.get_by_role("link", name="vision").click()
    page.wait_for_url(re.compile(r"/inventory/teams/vision/$"))
    goodput = page.locator("#team-goodput")
    # (130 − 6) / 130; 2 interruptions; 130 / 2 / 8 = 8.1 h between them for an 8-GPU job; 6 + 16 GPU-hours lost.
    for figure in ("95.4 %", "369.2", "8.1 h", "22.0", "11.0 %"):
        expect(goodput).to_contain_text(figure)
    expect(page.locator("#team-usage")).to_contain_text("2")
    expect(page.locator("#team-interruptions tbody tr")).to_have_count(2)
    assert_no_horizontal_overflow(page)
    session.screenshot("team-page", docs=True)

    # A range change redraws the figures in place (htmx) and keeps them: every job is in the last 24 hours.
    page.locator("label.range-button", has_text="24h").click()
    page.wait_for_url(re.compile(r"range=24h"))
    expect(page.locator("#team-goodput h2")).to_contain_text("last 24 hours")
    expect(page.locator("#team-goodput")).to_contain_text("95.4 %")
    page.wait_for_load_state("networkidle")
    page.locator("#all-interruptions").click()
    page.wait_for_url(re.compile(r"/inventory/interruptions/\?team=vision&range=24h$"))
    expect(page.locator("tbody tr")).to_have_count(2)
    page.wait_for_load_state("networkidle")
    session.assert_clean()
