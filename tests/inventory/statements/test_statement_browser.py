"""The statement pages in a real browser at 1280×800 (issue 36), on the fleet of ``tests/helpers/statements.py``: a
manager issues October from the list's form, opens vision's statement (the figures worked out by hand), sorts its
lines, downloads its CSV and PDF; no error, no sideways scrolling."""

import csv
import io
import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in
from tests.helpers.statements import make_fleet

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_issue_and_read_a_statement(browser_page):
    make_fleet()
    session, page = browser_page, browser_page.page
    log_in(page, make_user("mona", MANAGER), "pw-mona", "/inventory/statements/")

    page.fill("#issue-month input[name=month]", "2026-10")
    page.get_by_role("button", name="Issue statements").click()
    expect(page.locator("body")).to_contain_text("Issued 3 statements for 2026-10.")
    rows = page.locator("#object-table tbody tr")
    expect(rows).to_have_count(3)
    vision = page.locator("#object-table tbody tr", has_text="vision")
    expect(vision).to_contain_text("266.00")
    assert_no_horizontal_overflow(page)
    session.screenshot("statement-list")

    vision.get_by_role("link", name="2026-10").click()
    page.wait_for_url(re.compile(r"/inventory/statements/\d+/$"))
    expect(page.locator("#statement-total")).to_have_text("266.00")
    expect(page.locator("#statement-totals")).to_contain_text("−18.00")
    page.locator("#statement-lines thead").get_by_role("link", name="Amount").click()
    page.wait_for_url(re.compile(r"sort=amount"))
    amounts = [Decimal(text.replace(",", "")) for text in page.locator("#statement-lines tbody td:last-child")
               .all_inner_texts()]
    assert amounts == sorted(amounts) == [Decimal("-18.00"), Decimal("20.00"), Decimal("24.00"), Decimal("240.00")]
    assert_no_horizontal_overflow(page)
    session.screenshot("statement")

    with page.expect_download() as download:
        page.locator("#download-csv").click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    assert rows[-1]["kind"] == "total" and rows[-1]["amount"] == "266.00"
    with page.expect_download() as download:
        page.locator("#download-pdf").click()
    assert open(download.value.path(), "rb").read(5) == b"%PDF-"
    session.assert_clean()
