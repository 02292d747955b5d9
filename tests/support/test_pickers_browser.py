"""The ticket form's node and GPU pickers in a real browser (Chromium, 1280×800), used from the keyboard only: type
part of a hostname, ArrowDown, Enter; the GPU picker then lists that node's GPUs; Escape closes a list and keeps
the choice; the ticket is opened on what was picked. axe-core finds nothing serious with a list open."""

import re

import pytest
from playwright.sync_api import expect

from inventory.models import LifecycleState
from portal.roles import RESEARCHER
from support.models import Ticket
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site, make_team
from tests.helpers.accounts import make_user
from tests.helpers.axe import axe_violations, blocking
from tests.helpers.browser_steps import log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture
L = LifecycleState


@pytest.fixture
def fleet(transactional_db):
    site, model, gpu_model = make_site(name="Lyon"), make_node_model(), make_gpu_model()
    nodes = {name: make_node(site=site, node_model=model, hostname=name, state=L.IN_SERVICE)
             for name in ("gpu-a-001", "gpu-a-002", "gpu-b-001")}
    for node in nodes.values():
        for slot in range(8):
            make_gpu(node=node, slot=slot, gpu_model=gpu_model, serial=f"SN-{node.hostname}-{slot}",
                     state=L.IN_SERVICE)
    rita = make_user("rita", RESEARCHER)
    make_team("nlp", [rita])
    return nodes, rita


def options(page, field):
    return page.locator(f"#id_{field}-list [role=option]")


def test_pick_a_node_and_its_gpu_from_the_keyboard(fleet, browser_page):
    nodes, rita = fleet
    session, page = browser_page, browser_page.page
    log_in(page, rita, "pw-rita", "/support/tickets/add/")
    expect(page.locator("#id_gpu")).to_be_hidden()  # the select stays in the form, hidden, holding the choice
    page.fill("#id_title", "NCCL timeouts")
    page.fill("#id_description", "Job 4711 hangs in all-reduce.")

    node = page.get_by_role("combobox", name="Node")
    node.focus()
    node.press_sequentially("b-0")
    expect(options(page, "node")).to_have_text(["gpu-b-001In service"])
    expect(node).to_have_attribute("aria-expanded", "true")
    node.press("ArrowDown")
    expect(node).to_have_attribute("aria-activedescendant", "id_node-list-0")
    node.press("Enter")  # chooses; does not send the form
    assert page.url.endswith("/support/tickets/add/")
    expect(node).to_have_value("gpu-b-001")
    expect(page.locator("#id_node")).to_have_value(str(nodes["gpu-b-001"].pk))

    # The GPU picker searches the chosen node's GPUs: "gpu5" is one GPU there, not one on every node.
    page.keyboard.press("Tab")
    gpu = page.get_by_role("combobox", name="GPU")
    expect(gpu).to_be_focused()
    gpu.press_sequentially("gpu5")
    expect(options(page, "gpu")).to_have_count(1)
    expect(options(page, "gpu").first).to_contain_text("gpu-b-001/gpu5")
    assert blocking(axe_violations(page)) == []  # the open list, as a screen reader meets it
    gpu.press("ArrowDown")
    gpu.press("Enter")
    expect(gpu).to_have_value("gpu-b-001/gpu5 (SN-gpu-b-001-5)")

    # Escape closes an open list and keeps the choice; typing a name that matches nothing offers nothing.
    gpu.press("ArrowDown")
    expect(options(page, "gpu")).to_have_count(8)  # the node's GPUs, to browse
    gpu.press("Escape")
    expect(page.locator("#id_gpu-list")).to_be_hidden()
    expect(gpu).to_have_value("gpu-b-001/gpu5 (SN-gpu-b-001-5)")
    session.screenshot("support-ticket-pickers")

    with page.expect_navigation(url=re.compile(r"/support/tickets/\d+/$")):
        page.get_by_role("button", name="Open ticket").click()
    ticket = Ticket.objects.get()
    assert (ticket.node.hostname, ticket.gpu.node.hostname, ticket.gpu.slot) == ("gpu-b-001", "gpu-b-001", 5)
    session.assert_clean()
