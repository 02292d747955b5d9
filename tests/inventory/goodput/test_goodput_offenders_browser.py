"""Repeat offenders and goodput by month in a real browser at 1280×800 (issue 20): the GPU model page's table (the
fleet of ``test_goodput_offenders``, figures by hand there), its link to a node's interruptions, and the dashboard
grouped by month, with no sideways scrolling."""

import re

import pytest
from playwright.sync_api import expect

from portal.roles import VIEWER
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in
from tests.helpers.telemetry import freeze_now

from .test_goodput_offenders import make_offender_fleet

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_repeat_offenders_and_goodput_by_month(browser_page, monkeypatch):
    now = freeze_now(monkeypatch)
    fleet = make_offender_fleet(now)
    m1, n1 = fleet["models"][0], fleet["nodes"]["n1"]
    session, page = browser_page, browser_page.page
    log_in(page, make_user("vic", VIEWER), "pw-vic", m1.get_absolute_url())

    rows = page.locator("#goodput table tbody tr")
    expect(rows).to_have_count(2)  # n1 (3 interruptions), then n2 (2)
    for figure in ("n1", "3", "28.0", "Node failure (Slurm NODE_FAIL)", "(3 of 3)", "5.0 h"):
        expect(rows.nth(0)).to_contain_text(figure)
    expect(rows.nth(1)).to_contain_text("XID 79")
    assert_no_horizontal_overflow(page)
    session.screenshot("goodput-repeat-offenders")

    page.wait_for_load_state("networkidle")
    rows.nth(0).get_by_role("link", name="3").click()
    page.wait_for_url(re.compile(rf"/inventory/interruptions/\?cause=infrastructure&node={n1.pk}&range=30d"))
    expect(page.locator("tbody tr", has_text="Node failure")).to_have_count(3)
    page.wait_for_load_state("networkidle")

    page.goto("/inventory/goodput/?range=30d")
    page.select_option("#id_group_by", "month")
    expect(page.locator("#goodput-table h2")).to_contain_text("Goodput by month")
    months = page.locator("#goodput-table tbody tr td:first-child")
    expect(months.last).to_have_text(now.strftime("%Y-%m"))  # oldest first: this month last
    expect(page.locator("#dashboard .js-plotly-plot")).to_have_count(1)  # the losses by cause per month
    assert_no_horizontal_overflow(page)
    session.screenshot("goodput-by-month")
    page.wait_for_load_state("networkidle")
    session.assert_clean()
