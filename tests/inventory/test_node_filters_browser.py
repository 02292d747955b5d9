"""In a real browser: choosing a site on the node list redraws the partition select with that site's partitions
(htmx, out of band with the table), and choosing one of them filters the table."""

import pytest

from portal.roles import VIEWER
from tests.factories import make_node, make_site
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture


def test_the_partitions_follow_the_chosen_site(browser_page):
    alpha, beta = make_site(name="alpha"), make_site(name="beta")
    make_node(site=alpha, hostname="a-train", partition="train")
    make_node(site=beta, hostname="b-infer", partition="infer")
    make_node(site=beta, hostname="b-batch", partition="batch")
    session, page = browser_page, browser_page.page
    log_in(page, make_user("vera", VIEWER), "pw-vera", "/inventory/nodes/")
    partition = page.locator("#filter-partition select")
    assert partition.locator("option").all_inner_texts() == ["All partitions", "batch", "infer", "train"]

    with page.expect_response(lambda r: "site=" in r.url):
        page.select_option("#id_site", str(beta.pk))
    page.wait_for_function("() => document.querySelectorAll('#filter-partition option').length === 3")
    assert partition.locator("option").all_inner_texts() == ["All partitions", "batch", "infer"]
    with page.expect_response(lambda r: "partition=infer" in r.url):
        page.select_option("#filter-partition select", "infer")
    page.wait_for_function("() => document.querySelector('#match-count').innerText.startsWith('1 ')")
    assert "b-infer" in page.locator("#object-table").inner_text()
    assert "b-batch" not in page.locator("#object-table").inner_text()
    assert page.locator("#filter-partition select").input_value() == "infer"  # the redrawn select keeps it
    assert_no_horizontal_overflow(page)
    session.screenshot("nodes-partition-filter")
    session.assert_clean()
