"""Issue 37's notification rules in a real browser (the system Chromium via Playwright, against ``live_server`` on
PostgreSQL): a manager opens Support → Notifications, adds a rule for XID errors of the hardware class, by e-mail
at once; the pull then reads XID 79 on GPU 3 of node g1, and the manager's mail is there (Django's locmem backend)
with the node, the GPU, the code and its meaning; the rule's page lists the event as sent, and "Send a test" mails
again. An application-class XID afterwards tells nobody. Every page runs without a JS error, a failed request or a
request to another host."""

import re

import pytest
from playwright.sync_api import expect

from inventory.models import Team
from portal.roles import MANAGER
from support.models import NotificationEvent, NotificationRule
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import log_in
from tests.helpers.eventrules import read_xid, run_tasks_at_once

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_a_manager_subscribes_to_hardware_xids_and_gets_the_mail(browser_page, mailoutbox, monkeypatch):
    session, page = browser_page, browser_page.page
    run_tasks_at_once(monkeypatch)  # the live server's thread and this one queue to Celery: run the task here
    node = make_node(hostname="g1", owner_team=Team.objects.create(name="vision"), state="in_service")
    gpus = [make_gpu(node=node, slot=slot, state="in_service") for slot in range(4)]
    manager = make_user("max", MANAGER)

    log_in(page, manager, "pw-max", "/")
    page.locator(".mainnav .menu-button", has_text="Support").click()
    with page.expect_navigation(url=re.compile(r"/support/notifications/$")):
        page.locator(".mainnav .menu-items").get_by_role("link", name="Notifications", exact=True).click()
    expect(page.locator("h1")).to_contain_text("Notifications")
    with page.expect_navigation(url=re.compile(r"/support/notifications/add/$")):
        page.locator(".page-head").get_by_role("link", name="Add notification rule").click()

    page.fill("#id_name", "GPU faults")
    page.get_by_label("XID error on a GPU").check()
    page.get_by_label("Hardware / driver fault").check()
    expect(page.locator("#id_channel")).to_have_value("email")  # the defaults: e-mail, at once, for me
    expect(page.locator("#id_digest")).to_have_value("none")
    expect(page.locator("#id_team option:checked")).to_have_text("Me (my own rule)")
    session.screenshot("notification-rule-form")
    with page.expect_navigation(url=re.compile(r"/support/notifications/\d+/$")):
        page.get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("Created GPU faults")
    expect(page.locator("#rule-events")).to_contain_text("XID error on a GPU")
    rule = NotificationRule.objects.get()
    assert (rule.owner, rule.team, rule.events, rule.xid_classes, rule.digest) == (
        manager, None, ["gpu.xid"], ["hardware"], "none")
    session.screenshot("notification-rule")

    read_xid(gpus[3], 79)  # the event happens: the pull reads XID 79 on GPU 3 of g1
    assert len(mailoutbox) == 1
    message = mailoutbox[0]
    assert message.to == ["max@example.org"] and message.subject == "[Cluster Portal] XID 79 on g1 GPU 3"
    for text in ("Node: g1", "GPU: 3", "Code: XID 79 (hardware)", "Meaning: GPU has fallen off the bus"):
        assert text in message.body

    read_xid(gpus[0], 13)  # an application error: not the rule's class
    assert len(mailoutbox) == 1 and NotificationEvent.objects.count() == 1

    page.reload()
    notices = page.locator("#notices tbody tr")
    expect(notices).to_have_count(1)
    expect(notices.first).to_contain_text("XID error on a GPU")
    expect(notices.first).to_contain_text("Sent")
    with page.expect_navigation():
        page.get_by_role("button", name="Send a test").click()
    expect(page.locator(".messages")).to_contain_text("Test e-mail sent to max@example.org")
    assert len(mailoutbox) == 2 and "Test of notification rule GPU faults" in mailoutbox[1].subject
    session.assert_clean()
