"""Goodput in a real browser at 1280×800 (issue 20): a small fleet with a NODE_FAIL and a job killed by an XID 79
(``tests.helpers.goodput``), the dashboard's figures worked out by hand and its chart drawn, then an
interruption's links (fault, node, ticket), with no sideways scrolling."""

import re

import pytest
from playwright.sync_api import expect

from inventory.goodput import recording
from inventory.models import GPU
from portal.roles import VIEWER
from support.models import Ticket
from tests.factories import make_ticket
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in
from tests.helpers.goodput import MIN, H, make_goodput_fleet
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_goodput_dashboard_and_an_interruptions_links(browser_page, monkeypatch):
    now = freeze_now(monkeypatch)
    fleet = make_goodput_fleet(now)
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    gpu0 = GPU.objects.get(node=fleet["nodes"]["n2"], slot=0)
    ticket = make_ticket(title="XID 79 on n2 gpu0", source=Ticket.Source.TELEMETRY, gpu=gpu0, node=gpu0.node)
    Ticket.objects.filter(pk=ticket.pk).update(opened=fleet["events"]["xid79"].ts + 5 * MIN)
    session, page = browser_page, browser_page.page
    log_in(page, make_user("vic", VIEWER), "pw-vic", "/inventory/goodput/")

    # vision by hand: (130 − 6) / 130 = 95.4 %; 2 interruptions, 369.2 per 1,000 GPU-days, MTBI 130 / 2 / 8 = 8.1 h,
    # 22 GPU-hours lost (6 of work + 16 of restart wait).
    vision = page.locator("#goodput-table tr", has_text="vision")
    for figure in ("95.4 %", "130.0", "369.2", "8.1 h", "(6.0 + 16.0)"):
        expect(vision).to_contain_text(figure)
    expect(page.locator("#estimate-note")).to_contain_text("checkpoints every 60 min")
    expect(page.locator("#dashboard .js-plotly-plot")).to_have_count(1)  # the losses by cause (issue 37)
    assert_no_horizontal_overflow(page)
    session.screenshot("goodput-dashboard", docs=True)

    page.select_option("#id_group_by", "node")
    expect(page.locator("#goodput-table h2")).to_contain_text("Goodput by node")
    expect(page.locator("#goodput-table tr", has_text="n2")).to_contain_text("96.8 %")  # (62 − 2) / 62

    page.wait_for_load_state("networkidle")
    page.locator("#goodput-table tr", has_text="n2").get_by_role("link", name="1").click()
    page.wait_for_url(re.compile(r"/inventory/interruptions/\?"))
    row = page.locator("tr", has_text="XID 79")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("fallen off the bus")
    expect(row.get_by_role("link", name=f"#{ticket.pk}")).to_be_visible()
    assert_no_horizontal_overflow(page)
    fits = "() => [...document.querySelectorAll('.table-container')].every(t => t.scrollWidth <= t.clientWidth)"
    assert page.evaluate(fits), "every column of the list shows at 1280 px"
    expect(page.locator("form label", has_text="invalid name")).to_have_count(0)
    session.screenshot("goodput-interruptions")
    page.wait_for_load_state("networkidle")
    row.get_by_role("link", name="XID 79").click()
    page.wait_for_url(re.compile(rf"/inventory/gpus/{gpu0.pk}/"))
    page.wait_for_load_state("networkidle")  # its favicon loaded before leaving (else an aborted request)
    page.go_back()
    page.wait_for_load_state("networkidle")
    page.locator("tr", has_text="XID 79").get_by_role("link", name="n2").click()
    page.wait_for_url(re.compile(rf"/inventory/nodes/{gpu0.node_id}/"))
    expect(page.locator("#goodput")).to_contain_text("96.8 %")  # the node's goodput section, 30 days
    assert_no_horizontal_overflow(page)
    session.screenshot("goodput-node")
    page.wait_for_load_state("networkidle")
    page.go_back()
    page.wait_for_load_state("networkidle")
    page.locator("tr", has_text="XID 79").get_by_role("link", name=f"#{ticket.pk}").click()
    page.wait_for_url(re.compile(rf"/support/tickets/{ticket.pk}/"))
    page.wait_for_load_state("networkidle")
    session.assert_clean()
