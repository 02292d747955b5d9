"""End to end in a real browser (system Chromium via Playwright) against ``live_server``.

One journey a cluster manager makes every day: log in, narrow the node list to the degraded nodes
(htmx swaps only the table), open one and send it to repair with a reason. Along the way the page
must log no JS errors, load every asset from the portal itself (air-gapped) and fail no request.
And a viewer's list, where htmx boosting reaches the table's links: sorting swaps the table in place,
a row's link opens the node's own page. Screenshots (1280x800) land in ``test-artifacts/``.
"""

import re

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from playwright.sync_api import expect

from inventory.models import LifecycleState, Node, StateTransition
from portal.roles import MANAGER, VIEWER
from tests.factories import make_node, make_node_model, make_rack, make_site
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture

REASON = "XID 79 on GPU 3, RMA 4711"


@pytest.fixture
def fleet():
    """Six nodes in one rack, two of them degraded (``dgx-a03`` and ``dgx-b02``)."""
    site = make_site(name="fra-1")
    rack = make_rack(site, name="fra-1-r07")
    node_model = make_node_model(name="HGX H200 8-GPU")
    states = {
        "dgx-a01": LifecycleState.IN_SERVICE,
        "dgx-a02": LifecycleState.IN_SERVICE,
        "dgx-a03": LifecycleState.DEGRADED,
        "dgx-b01": LifecycleState.BURN_IN,
        "dgx-b02": LifecycleState.DEGRADED,
        "dgx-b03": LifecycleState.IN_REPAIR,
    }
    return {hostname: make_node(site=site, rack=rack, node_model=node_model, hostname=hostname, state=state)
            for hostname, state in states.items()}


NODE_LINKS = "#object-table tbody a[href^='/inventory/nodes/']"  # the hostname column


def table_hostnames(page):
    return page.locator(NODE_LINKS).all_inner_texts()


def wait_for_rows(page, n):
    expect(page.locator(NODE_LINKS)).to_have_count(n)


def test_roles_survive_the_flush_of_transactional_tests():
    # live_server needs transactional_db, which empties every table after each test (``flush``, as
    # TransactionTestCase runs it); the post_migrate handler must bring the roles and their permissions
    # back, or the next browser test could not give its user a role.
    call_command("flush", interactive=False, verbosity=0)
    manager = Group.objects.get(name=MANAGER)
    assert manager.permissions.filter(content_type__app_label="inventory", codename="change_node").exists()
    assert not Group.objects.get(name=VIEWER).permissions.filter(codename="change_node").exists()


def test_manager_filters_nodes_and_sends_one_to_repair(fleet, browser_page):
    session = browser_page
    page = session.page
    user = make_user("max", MANAGER)
    node = fleet["dgx-b02"]

    # Log in through the form; ``next`` brings the manager straight to the node list.
    page.goto("/accounts/login/?next=/inventory/nodes/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", "pw-max")
    with page.expect_navigation(url=re.compile(r"/inventory/nodes/$")):
        page.get_by_role("button", name="Log in").click()
    assert page.locator("h1").inner_text() == "Nodes"
    assert sorted(table_hostnames(page)) == sorted(fleet)
    session.screenshot("01-node-list")

    # Tick "Degraded": htmx fetches the table alone, swaps it in and pushes the URL; no page load.
    page.evaluate("window.__marker = 1")
    with page.expect_response(lambda r: "/inventory/nodes/?" in r.url and "state=degraded" in r.url) as info:
        page.locator("form.filters input[name=state][value=degraded]").check()
    assert info.value.request.headers.get("hx-request") == "true"
    wait_for_rows(page, 2)
    assert sorted(table_hostnames(page)) == ["dgx-a03", "dgx-b02"]
    assert "state=degraded" in page.url
    assert page.locator("#match-count").inner_text() == "2 nodes match"

    # Type in the filter's search box: one request after the 300 ms pause, still the same document.
    search = page.locator("form.filters input[name=q]")
    with page.expect_response(lambda r: "q=dgx-b" in r.url):
        search.press_sequentially("dgx-b", delay=20)
    # Leaving the box fires the form's "change" trigger once more (same query). Let that request finish
    # here: a click on a link while it is in flight aborts it (net::ERR_ABORTED, a failed request).
    with page.expect_response(lambda r: "q=dgx-b" in r.url):
        search.blur()
    wait_for_rows(page, 1)
    assert table_hostnames(page) == ["dgx-b02"]
    assert "state=degraded" in page.url and "q=dgx-b" in page.url
    assert page.evaluate("window.__marker") == 1, "filtering reloaded the whole page instead of swapping the table"
    assert page.locator("form.filters").count() == 1 and page.locator("h1").count() == 1
    session.screenshot("02-node-list-filtered")

    # Open the node from the table: its own page, not something swapped into the table.
    with page.expect_navigation(url=re.compile(rf"/inventory/nodes/{node.pk}/$")):
        page.locator(NODE_LINKS, has_text="dgx-b02").click()
    assert page.locator("h1").count() == 1
    assert page.locator("form.filters").count() == 0
    assert page.locator("h1").inner_text().startswith("dgx-b02")
    assert page.locator("h1 .badge").inner_text() == "Degraded"
    lifecycle = page.locator("#lifecycle")
    options = lifecycle.locator("#transition-to option").evaluate_all("options => options.map(o => o.value)")
    assert set(options) == {"in_service", "in_repair", "retired"}
    session.screenshot("03-node-detail")

    # Send it to repair with a reason.
    lifecycle.locator("#transition-to").select_option("in_repair")
    lifecycle.locator("input[name=reason]").fill(REASON)
    with page.expect_navigation(url=re.compile(rf"/inventory/nodes/{node.pk}/$")):
        lifecycle.get_by_role("button", name="Change state").click()
    assert page.locator(".messages .message.success").inner_text() == "dgx-b02 is now in repair."
    assert page.locator("h1 .badge").inner_text() == "In repair"
    assert "state-in_repair" in page.locator("h1 .badge").get_attribute("class")
    row = page.locator("#lifecycle tbody tr").first
    assert row.locator("td").all_inner_texts()[1:] == ["Degraded", "In repair", "max", REASON]
    session.screenshot("04-node-in-repair")

    # The database agrees.
    node.refresh_from_db()
    assert node.state == LifecycleState.IN_REPAIR
    record = StateTransition.objects.get(object_id=node.pk, to_state=LifecycleState.IN_REPAIR)
    assert (record.from_state, record.user, record.reason) == (LifecycleState.DEGRADED, user, REASON)
    assert Node.objects.filter(state=LifecycleState.DEGRADED).count() == 1

    session.assert_clean()


def test_viewer_sorts_in_place_and_opens_a_node_as_its_own_page(fleet, browser_page):
    # A viewer's list has no bulk form around the table, so htmx boosting reaches the table's links:
    # sorting swaps the table alone, but a row's link must still open the node's own page.
    session = browser_page
    page = session.page
    make_user("vera", VIEWER)
    node = fleet["dgx-a03"]

    page.goto("/accounts/login/?next=/inventory/nodes/")
    page.fill("#id_username", "vera")
    page.fill("#id_password", "pw-vera")
    with page.expect_navigation(url=re.compile(r"/inventory/nodes/$")):
        page.get_by_role("button", name="Log in").click()
    assert page.locator("form.bulk").count() == 0  # nothing to change for a viewer

    # Typing in the header's site-wide search box must not fire the list's filter.
    list_requests = []
    page.on("request", lambda request: "/inventory/nodes/?" in request.url and list_requests.append(request.url))
    page.locator("header input[name=q]").press_sequentially("dgx", delay=20)
    page.wait_for_timeout(500)  # past the filter's 300 ms keyup delay
    assert list_requests == []

    page.evaluate("window.__marker = 1")
    with page.expect_response(lambda r: "sort=-hostname" in r.url):
        page.locator("#object-table thead a", has_text=re.compile("hostname", re.I)).click()  # ascending
        page.wait_for_url(re.compile(r"sort=hostname"))
        page.locator("#object-table thead a", has_text=re.compile("hostname", re.I)).click()  # descending
    expect(page.locator(NODE_LINKS).first).to_have_text("dgx-b03")
    assert table_hostnames(page) == sorted(fleet, reverse=True)
    assert page.evaluate("window.__marker") == 1, "sorting reloaded the whole page instead of swapping the table"
    session.screenshot("05-viewer-sorted")

    with page.expect_navigation(url=re.compile(rf"/inventory/nodes/{node.pk}/$")):
        page.locator(NODE_LINKS, has_text="dgx-a03").click()
    page.wait_for_load_state()
    assert page.evaluate("window.__marker") is None, "the node page was swapped into the list, not loaded"
    assert page.locator("form.filters").count() == 0
    assert page.locator("h1").count() == 1 and page.locator("h1").inner_text().startswith("dgx-a03")
    assert page.locator("#transition-to").count() == 0  # a viewer cannot change the state
    session.screenshot("06-viewer-node-detail")

    session.assert_clean()
