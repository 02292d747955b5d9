"""Support in a real browser (system Chromium via Playwright): a support engineer changes a ticket's priority and
assignee in the queue (htmx swaps only the cell), and a researcher reports a problem from a node page (the
button pre-fills the node). No JS errors, nothing fetched from another host, no failed request."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.telemetry.models import GPUHourly
from portal.roles import RESEARCHER, SUPPORT
from support.models import Ticket
from tests.factories import make_gpu, make_node, make_team, make_ticket
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def log_in(page, user, next_url):
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", user.username)
    page.fill("#id_password", f"pw-{user.username}")
    with page.expect_navigation(url=re.compile(re.escape(next_url.split("?")[0]) + r"(\?.*)?$")):
        page.get_by_role("button", name="Log in").click()


def test_engineer_changes_priority_and_assignee_in_the_queue(browser_page):
    session, page = browser_page, browser_page.page
    engineer = make_user("sam", SUPPORT)
    ticket = make_ticket(title="Fans at 100 %", priority="P3")
    log_in(page, engineer, "/support/tickets/")
    row = page.locator(f"#ticket-{ticket.pk}")
    page.evaluate("window.__marker = 1")
    with page.expect_response(lambda r: r.url.endswith(f"/support/tickets/{ticket.pk}/inline/")) as info:
        row.locator("select[name=priority]").select_option("P1")
    assert info.value.status == 200 and info.value.request.headers.get("hx-request") == "true"
    row.locator(".saved").wait_for()
    expect(page.locator(".htmx-settling, .htmx-swapping, .htmx-added")).to_have_count(0)  # htmx is done
    with page.expect_response(lambda r: r.url.endswith(f"/support/tickets/{ticket.pk}/inline/")):
        row.locator("select[name=assignee]").select_option(label="sam")
    row.locator("select[name=assignee] + .saved").wait_for()  # the row again, the assignee marked saved
    assert page.evaluate("window.__marker") == 1, "the change reloaded the page instead of swapping the cell"
    assert page.url.endswith("/support/tickets/")  # the inline change pushes no URL
    ticket.refresh_from_db()
    assert (ticket.priority, ticket.assignee) == ("P1", engineer)
    # The row came back whole: its due time is the P1 resolution (the change was the first response).
    assert ticket.resolution_due - ticket.opened == timedelta(hours=24)
    assert row.locator("td").nth(6).inner_text() == ticket.resolution_due.strftime("%Y-%m-%d %H:%M")
    session.screenshot("support-01-queue-inline")
    session.assert_clean()


def test_researcher_reports_a_problem_from_the_node_page(browser_page):
    session, page = browser_page, browser_page.page
    researcher = make_user("rita", RESEARCHER)
    make_team("nlp", [researcher])
    node = make_node(hostname="gpu-a-017")
    log_in(page, researcher, f"/inventory/nodes/{node.pk}/")
    with page.expect_navigation(url=re.compile(r"/support/tickets/add/\?node=")):
        page.locator("#support").get_by_role("link", name="Report a problem").click()
    assert page.locator("#id_node option:checked").inner_text() == "gpu-a-017"
    assert page.locator("#id_assignee").count() == 0  # the simple form
    page.fill("#id_title", "ECC errors in dmesg")
    page.fill("#id_description", "`nvidia-smi -q` shows **3** retired pages")
    with page.expect_navigation(url=re.compile(r"/support/tickets/\d+/$")):
        page.get_by_role("button", name="Open ticket").click()
    ticket = Ticket.objects.get()
    assert (ticket.node, ticket.requester, ticket.team.name) == (node, researcher, "nlp")
    assert page.locator(".markdown strong").first.inner_text() == "3"
    session.screenshot("support-02-ticket")
    session.assert_clean()


REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.__reportCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}`);
});
"""


def test_support_pages_run_under_the_content_security_policy(browser_page):
    """Queue (with an htmx change), ticket (utilization chart), metrics (charts) and the dashboard's card."""
    session, page = browser_page, browser_page.page
    violations = []
    page.expose_function("__reportCspViolation", lambda text: violations.append(text))
    page.add_init_script(REPORT_VIOLATIONS)
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    engineer = make_user("sam", SUPPORT)
    node = make_node(hostname="gpu-b-001")
    gpu = make_gpu(node=node)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    GPUHourly.objects.bulk_create(GPUHourly(gpu=gpu, hour=hour - k * timedelta(hours=1), util_mean=40 + k,
                                            samples=60) for k in range(1, 12))
    ticket = make_ticket(title="Slow all-reduce", node=node, priority="P1", opened=timezone.now() - timedelta(days=2))
    make_ticket(title="Done", category="network", status=Ticket.Status.CLOSED)
    log_in(page, engineer, "/support/tickets/")
    with page.expect_response(lambda r: r.url.endswith(f"/support/tickets/{ticket.pk}/inline/")):
        page.locator(f"#ticket-{ticket.pk} select[name=status]").select_option("triaged")
    page.locator(f"#ticket-{ticket.pk} .saved").wait_for()
    pages = [(f"/support/tickets/{ticket.pk}/", ".chart .main-svg"), ("/support/metrics/", ".chart .main-svg"),
             ("/", "#sla-tickets")]
    for url, ready in pages:
        response = page.goto(url)
        assert response.status == 200 and "content-security-policy" in response.headers, url
        page.wait_for_load_state("networkidle")
        page.wait_for_selector(ready)
    assert page.locator("#sla-tickets .sla-breached").count() == 1
    session.failed_requests[:] = [r for r in session.failed_requests
                                  if not ("favicon" in r and r.endswith("net::ERR_ABORTED"))]
    assert violations == []
    session.assert_clean()
