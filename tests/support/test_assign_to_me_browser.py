""""Assign to me" in a real browser (Chromium, 1280×800): a support engineer opens an unassigned ticket from the
Unassigned queue, takes it with one click, and finds it in their own queue; the page passes axe-core."""

import re

import pytest
from playwright.sync_api import expect

from portal.roles import RESEARCHER, SUPPORT
from support.models import Ticket
from tests.factories import make_team, make_ticket
from tests.helpers.accounts import make_user
from tests.helpers.axe import axe_violations, blocking
from tests.helpers.browser_steps import log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture


def test_support_engineer_takes_a_ticket(browser_page):
    session, page = browser_page, browser_page.page
    sam, rita = make_user("sam", SUPPORT), make_user("rita", RESEARCHER)
    ticket = make_ticket(requester=rita, team=make_team("nlp", [rita]), title="NCCL hangs on gpu-a-001")
    log_in(page, sam, "pw-sam", "/support/tickets/?queue=unassigned")
    with page.expect_navigation(url=re.compile(rf"/support/tickets/{ticket.pk}/$")):
        page.get_by_role("link", name="NCCL hangs on gpu-a-001").first.click()
    assert blocking(axe_violations(page)) == []
    with page.expect_navigation(url=re.compile(rf"/support/tickets/{ticket.pk}/$")):
        page.get_by_role("button", name="Assign to me").click()
    expect(page.get_by_role("status")).to_contain_text(f"Ticket #{ticket.pk} is assigned to you.")
    expect(page.locator("table.fields tr", has_text="Assignee")).to_contain_text("sam")
    expect(page.get_by_role("button", name="Assign to me")).to_have_count(0)
    assert Ticket.objects.get(pk=ticket.pk).assignee == sam

    page.goto("/support/tickets/?queue=mine")
    expect(page.locator(f"#ticket-{ticket.pk}")).to_be_visible()
    session.assert_clean()
