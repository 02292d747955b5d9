"""Issue 37's first screen in a real browser, as a new manager on the demo's fleet (``seed_demo``): broken hardware
is on the home page, and the node that took it out shows the fault.

1. A manager who has never logged in opens the home page: the health tile counts the GPUs degraded or in repair (the
   capacity model's figure), and "awaiting your decision" is there.
2. The tile's link lists those GPUs; among them GPU 3 of zrh-h100-007, which fell off the bus (XID 79).
3. The node's page says why it is degraded, linked to the XID event; GPU 3's chart is drawn with the XID 79 marker
   and, under it, its meaning; the link opens the GPU's page at the event.

Every page runs without a JS error, a failed request or a request to another host.
"""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from inventory import capacity
from inventory.models import GPU
from inventory.telemetry.models import XidEvent
from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


@pytest.fixture
def demo(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("seed_demo", stdout=StringIO())
    gpu3 = GPU.objects.select_related("node").get(node__hostname="zrh-h100-007", slot=3)
    return make_user("nadia", MANAGER), gpu3, XidEvent.objects.get(gpu=gpu3, code=79)


def test_a_new_manager_finds_the_broken_gpu_from_the_home_page(demo, browser_page):
    user, gpu3, event = demo
    session, page = browser_page, browser_page.page
    log_in(page, user, "pw-nadia", "/")
    page.wait_for_load_state("networkidle")
    expect(page.locator("#awaiting-decision h2")).to_have_text("Awaiting your decision")
    tile = page.locator("#tile-gpus-out")
    expect(tile.locator("b")).to_have_text(f"{capacity.count().out_of_service:,}")
    expect(tile).to_contain_text("GPUs degraded / in repair")
    session.screenshot("home-health-tiles", docs=True)

    with page.expect_navigation(url=re.compile(r"/inventory/gpus/\?capacity=out_of_service$")):
        tile.click()
    page.goto(f"{page.url}&q={gpu3.serial}")  # the list's search, within what the tile counted
    expect(page.locator("table tbody tr", has_text=gpu3.serial)).to_have_count(1)

    page.goto(f"/inventory/nodes/{gpu3.node_id}/")
    page.wait_for_load_state("networkidle")
    fault = page.locator("#fault")
    expect(fault).to_contain_text("XID 79: GPU 3 fell off the bus; node drained")
    expect(fault.locator(f'a[data-xid-event="{event.pk}"]')).to_contain_text("XID 79 on gpu3")
    chart = page.locator('.health-chart[data-gpu="gpu3"]')
    expect(chart.locator(".js-plotly-plot")).to_have_count(1)  # GPU 3 has health data: its chart is drawn
    expect(chart.locator(".annotation-text")).to_have_text("XID 79")  # the marker, with its code
    expect(chart.locator('li[data-xid="79"]')).to_contain_text("GPU has fallen off the bus")
    chart.scroll_into_view_if_needed()
    session.screenshot("node-health-xid-marker", docs=True)

    with page.expect_navigation(url=re.compile(rf"/inventory/gpus/{gpu3.pk}/#xid-event-{event.pk}$")):
        fault.locator("a[data-xid-event]").click()
    expect(page.locator(f"#xid-event-{event.pk}")).to_contain_text("GPU has fallen off the bus")
    session.assert_clean()
