"""In a real browser: a manager opens the recommendations, opens a capacity-bound one (its evidence chart is
drawn by plotly from json_script data, with no console error under the Content-Security-Policy) and turns it
into a draft capacity plan whose bill of materials, its recommended option's, holds the suggested nodes; a viewer
sees no buttons."""

import re
from datetime import UTC, datetime

import pytest

from portal.roles import MANAGER, VIEWER
from tests.factories import make_capacity_recommendation, make_gpu, make_gpu_model, make_node
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture

START = datetime(2026, 11, 23, 6, tzinfo=UTC)


@pytest.fixture
def capacity_rec(settings):
    """A capacity-bound finding for partition train-h200, written as the analysis writes it: 20 GPUs wait on
    average and 32 GPUs (there, in service) run at 91 % against an 80 % target, so 4 nodes of 8 GPUs. Renting is
    dear, so the plan's answer is to own them."""
    settings.RENTAL_GPU_HOUR_COST = 20.0
    rec = make_capacity_recommendation(START)
    h200 = make_gpu_model(name="H200 browser", memory_gb=141)
    for _ in range(4):
        node = make_node(site=rec.site, node_model=rec.node_model, partition="train-h200", state="in_service")
        for _ in range(8):
            make_gpu(node=node, gpu_model=h200, state="in_service")
    return rec


def test_manager_turns_a_capacity_bound_recommendation_into_a_draft_plan(capacity_rec, browser_page):
    session, page = browser_page, browser_page.page
    log_in(page, make_user("max", MANAGER), "pw-max", "/planning/recommendations/")
    assert page.locator("h1").inner_text() == "Recommendations"
    session.screenshot("recommendations-01-list")

    with page.expect_navigation(url=re.compile(rf"/planning/recommendations/{capacity_rec.pk}/$")):
        page.get_by_role("link", name="Partition train-h200 is capacity-bound").click()
    page.wait_for_selector("#evidence-chart .chart .main-svg")  # plotly drew the utilization series
    assert "Add 4 × HGX H200 8-GPU" in page.locator("#suggested-action").inner_text()
    session.screenshot("recommendations-02-detail")

    with page.expect_navigation(url=re.compile(r"/planning/capacity-plans/\d+/$")):
        page.locator("#accept").click()
    assert "draft capacity plan" in page.locator("body").inner_text()
    assert "HGX H200 8-GPU" in page.locator("#bill-of-materials").inner_text()
    session.screenshot("recommendations-03-plan")
    capacity_rec.refresh_from_db()
    nodes = capacity_rec.plan.items.get(node_model=capacity_rec.node_model)
    assert capacity_rec.status == "accepted" and nodes.quantity == 4  # the plan's answer: the 4 nodes asked for
    session.assert_clean()


def test_viewer_sees_the_evidence_but_no_buttons(capacity_rec, browser_page):
    session, page = browser_page, browser_page.page
    url = f"/planning/recommendations/{capacity_rec.pk}/"
    log_in(page, make_user("vera", VIEWER), "pw-vera", url)
    page.wait_for_selector("#evidence-chart .chart .main-svg")
    assert page.locator("#accept").count() == 0 and page.locator("#dismiss").count() == 0
    session.assert_clean()
