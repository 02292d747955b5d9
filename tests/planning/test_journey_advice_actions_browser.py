"""Issue 37's item 4 in a real browser (the system Chromium via Playwright, against ``live_server`` on PostgreSQL):
from advice to action.

1. A manager opens Planning → Recommendations, the reclaim recommendation "2 nodes idle in partition research",
   notifies the owning team (the mail goes to the team's list, its PI and its managers, with the nodes' idle
   figures) and opens a ticket for it (support's action), both listed on the page.
2. "Move these nodes" opens the move form pre-filled with the two nodes and the reason; the manager proposes the
   move to partition train and reads that another manager approves it (no Approve button for them).
3. A second manager opens Inventory → Partition moves, the move, and approves it: done.
4. The node's page shows partition train and the history line naming the move and the approver; the recommendation
   lists the move as done.

Every page runs without a JS error, a failed request or a request to another host.
"""

import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from inventory.models import LifecycleState, Node, PartitionMove, TeamMember
from planning.models import RecommendationAction
from portal.roles import MANAGER
from support.models import Ticket
from tests.factories import TeamFactory, make_node
from tests.helpers.accounts import make_user
from tests.helpers.advice import make_reclaim

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def log_in(page, username, next_url):
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", f"pw-{username}")
    with page.expect_navigation(url=re.compile(r"^https?://[^/]+" + re.escape(next_url) + "$")):
        page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state("networkidle")


def log_out(page):
    page.locator(".usermenu .menu-button").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Log out").click()


def open_menu(page, section, item, url):
    page.locator(".mainnav .menu-button", has_text=section).click()
    with page.expect_navigation(url=re.compile(re.escape(url) + r"(\?.*)?$")):
        page.locator(".mainnav .menu-items").get_by_role("link", name=item, exact=True).click()


def messages(page):
    return page.locator(".messages")


def test_reclaim_advice_to_notice_ticket_and_a_partition_move(browser_page):
    session, page = browser_page, browser_page.page
    team = TeamFactory(name="vision", email="vision-list@example.org", pi=make_user("petra", None))
    TeamMember.objects.create(team=team, user=make_user("mo", None), role="manager")
    nodes = [make_node(hostname=f"gpu-{i:02d}", partition="research", owner_team=team,
                       state=LifecycleState.IN_SERVICE) for i in range(2)]
    make_node(hostname="gpu-busy", partition="research", state=LifecycleState.IN_SERVICE)
    rec = make_reclaim(nodes, idle_days=6, idle_gpu_hours=1000.0)
    make_user("ann", MANAGER)
    make_user("max", MANAGER)

    # 1. The recommendation, then its two actions.
    log_in(page, "ann", "/")
    open_menu(page, "Planning", "Recommendations", "/planning/recommendations/")
    with page.expect_navigation(url=re.compile(rf"/planning/recommendations/{rec.pk}/$")):
        page.get_by_role("link", name=rec.title).click()
    expect(page.locator("h1")).to_contain_text("2 nodes idle in partition research")
    with page.expect_navigation(url=re.compile(rf"/planning/recommendations/{rec.pk}/")):
        page.get_by_role("button", name="Notify the owning team").click()
    expect(messages(page)).to_contain_text("Notified the owning team: mailed vision")
    assert len(mail.outbox) == 1
    assert sorted(mail.outbox[0].to) == ["mo@example.org", "petra@example.org", "vision-list@example.org"]
    assert "- gpu-00: idle 6 day(s), 1,000.0 idle GPU-hours" in mail.outbox[0].body
    with page.expect_navigation(url=re.compile(rf"/planning/recommendations/{rec.pk}/")):
        page.get_by_role("button", name="Open a ticket").click()
    ticket = Ticket.objects.get()
    expect(messages(page)).to_contain_text(f"Ticket #{ticket.pk} opened for gpu-00, gpu-01 (team vision).")
    done = page.locator("#actions-done")
    expect(done).to_contain_text("ann: Notified the owning team")
    expect(done.get_by_role("link", name="Open it")).to_have_attribute("href", f"/support/tickets/{ticket.pk}/")
    assert list(RecommendationAction.objects.values_list("action", flat=True)) == ["notify_team", "open_ticket"]
    session.screenshot("advice-actions-01-notified")

    # 2. Move these nodes: the form pre-filled.
    with page.expect_navigation(url=re.compile(r"/inventory/partition-moves/propose/\?")):
        page.get_by_role("link", name="Move these nodes").click()
    expect(page.locator("#move-source")).to_contain_text(f"recommendation #{rec.pk}")
    selected = page.locator("#id_nodes option:checked")
    expect(selected).to_have_text(["gpu-00", "gpu-01"])
    expect(page.locator("#id_reason")).to_contain_text("gpu-00 idle 6 days, 1,000 idle GPU-hours")
    page.fill("#id_to_partition", "train")
    with page.expect_navigation(url=re.compile(r"/inventory/partition-moves/\d+/$")):
        page.get_by_role("button", name="Propose the move").click()
    move = PartitionMove.objects.get()
    expect(messages(page)).to_contain_text(f"Move #{move.pk} proposed")
    expect(page.locator("#move-status")).to_have_text("Proposed")
    expect(page.get_by_text("A manager other than you approves or rejects it")).to_be_visible()
    expect(page.get_by_role("button", name="Approve and move")).to_have_count(0)
    log_out(page)

    # 3. The second manager approves it.
    log_in(page, "max", "/")
    open_menu(page, "Inventory", "Partition moves", "/inventory/partition-moves/")
    row = page.locator("#object-table tbody tr", has_text="gpu-00, gpu-01")
    expect(row).to_contain_text("Proposed")
    with page.expect_navigation(url=re.compile(rf"/inventory/partition-moves/{move.pk}/$")):
        row.get_by_role("link", name=str(move.pk), exact=True).click()
    expect(page.locator("#move-recommendation")).to_have_text(f"recommendation #{rec.pk}")
    page.fill("#decision input[name=comment]", "Train queue is 3 days long")
    with page.expect_navigation(url=re.compile(rf"/inventory/partition-moves/{move.pk}/$")):
        page.get_by_role("button", name="Approve and move").click()
    expect(messages(page)).to_contain_text("Approved and done: 2 node(s) now in partition train.")
    expect(page.locator("#move-status")).to_have_text("Approved and done")
    assert dict(Node.objects.values_list("hostname", "partition")) == {
        "gpu-00": "train", "gpu-01": "train", "gpu-busy": "research"}
    session.screenshot("advice-actions-02-moved")

    # 4. The node's page: the new partition and the history line.
    with page.expect_navigation(url=re.compile(rf"/inventory/nodes/{nodes[0].pk}/$")):
        page.locator("#move-nodes").get_by_role("link", name="gpu-00").click()
    expect(page.locator("#history")).to_contain_text(
        f"Partition move #{move.pk}: research → train, approved by max")
    expect(page.locator("table.fields tr", has=page.locator("th", has_text="Partition"))).to_contain_text("train")
    page.goto(f"/planning/recommendations/{rec.pk}/")
    expect(page.locator("#actions-done")).to_contain_text(f"Partition move #{move.pk} (research → train): "
                                                          "approved and done")
    session.screenshot("advice-actions-03-node-history")
    session.assert_clean()
