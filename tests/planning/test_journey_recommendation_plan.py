"""Issue 18's planning journey in a real browser (the system Chromium via Playwright, against ``live_server``):
recommendation → accept → the plan's analysis shows the need the recommendation measured → fill the bill of
materials from a scenario → submit → a second manager approves → the bill of materials in the API.

The partition is really there (its GPUs with 91 days of daily rollups), next to a quiet partition that makes the
fleet as a whole look roomy: a fleet-wide analysis would say "no new capacity needed". Every figure the page shows
is checked against the API's analysis of the same plan."""

import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from planning.models import CapacityPlan
from portal.roles import MANAGER
from tests.factories import make_capacity_recommendation, make_gpu_model
from tests.helpers.accounts import make_user
from tests.planning.test_journeys_planning import analysis_loaded, assert_clean, log_in, log_out
from tests.planning.test_plan_needs import nodes_with_history

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


@pytest.fixture
def capacity_rec():
    rec = make_capacity_recommendation(datetime(2026, 11, 20, tzinfo=UTC))
    h200 = make_gpu_model(name="H200 journey", memory_gb=141)
    nodes_with_history(4, 91.0, h200, site=rec.site, node_model=rec.node_model, partition="train-h200")
    nodes_with_history(4, 5.0, make_gpu_model(name="L40S journey", memory_gb=48), site=rec.site,
                       partition="inference")
    return rec


def test_recommendation_accept_analysis_bom_submit_approve(capacity_rec, browser_page):
    session, page = browser_page, browser_page.page
    make_user("max", MANAGER)
    make_user("mia", MANAGER)

    log_in(page, "max", capacity_rec.get_absolute_url())
    expect(page.locator("#suggested-action")).to_contain_text("Add 4 × HGX H200 8-GPU")
    with page.expect_navigation(url=re.compile(r"/planning/capacity-plans/\d+/$")):
        page.locator("#accept").click()
    plan = CapacityPlan.objects.get()
    assert (plan.partition, plan.gpu_model.name) == ("train-h200", "H200 journey")

    # The analysis reads the partition, shows the queue as demand and the same need as the recommendation.
    analysis_loaded(page)
    api = page.request.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    expect(page.locator("#analysis-scope")).to_have_text(api["scope"])
    assert api["scope"] == "Scope: partition train-h200, GPU model H200 journey"
    expect(page.locator("#need")).to_contain_text(api["need"]["statement"])
    expect(page.locator("#recommendation h2")).to_have_text(api["recommendation"]["headline"])
    expect(page.locator("#recommendation h2")).not_to_contain_text("No new capacity needed")
    queued = f"Queued demand (recommendation #{capacity_rec.pk})"
    expect(page.locator("#plan-analysis table.numeric thead")).to_contain_text(queued)
    assert api["demand_lines"][0]["name"] == queued
    expand = next(s for s in api["scenarios"] if s["kind"] == "expand")
    assert expand["nodes"] == capacity_rec.node_count == 4  # the plan buys what the recommendation said
    # The answer leads the page with the API's figures.
    best = next(s for s in api["scenarios"] if s["kind"] == api["recommendation"]["kind"])
    expect(page.locator("#answer-option")).to_contain_text(f"Recommended: {best['label'].lower()}")
    expect(page.locator("#answer-gpus")).to_have_text(f"{max(best['added_gpus']):,.0f}")
    expect(page.locator("#answer-met")).to_have_text(best["met_from_month"] or "not met")
    answer_top = page.locator("#plan-answer").bounding_box()["y"]
    assert answer_top < page.locator("#workloads").bounding_box()["y"], "the answer comes before the inputs"
    session.screenshot("journey18-01-plan-from-recommendation")

    # Fill the bill of materials from the expand scenario (a confirmation page first).
    page.get_by_role("link", name="Fill the bill of materials from the expand scenario").click()
    page.wait_for_load_state()
    with page.expect_navigation(url=re.compile(rf"/planning/capacity-plans/{plan.pk}/")):
        page.locator("#bom-fill").get_by_role("button").click()
    expect(page.locator("#bill-of-materials")).to_contain_text("HGX H200 8-GPU")
    lines = {item.node_model.name: item for item in plan.items.select_related("node_model") if item.node_model_id}
    assert lines["HGX H200 8-GPU"].quantity == 4
    analysis_loaded(page)

    # Submit; a second manager approves.
    page.locator("#workflow").get_by_role("button", name="Submit").click()
    page.wait_for_load_state()
    expect(page.locator("#plan-status")).to_have_text("Submitted")
    log_out(page)
    log_in(page, "mia", plan.get_absolute_url())
    analysis_loaded(page)
    page.locator("#workflow").get_by_role("textbox").first.fill("The queue justifies it.")
    page.locator("#workflow").get_by_role("button", name="Approve").click()
    page.wait_for_load_state()
    expect(page.locator("#plan-status")).to_have_text("Approved")
    plan.refresh_from_db()
    assert (plan.status, plan.submitted_by.username, plan.decided_by.username) == ("approved", "max", "mia")

    # The bill of materials in the API prices exactly the expand scenario's capex, its nodes the recommendation's.
    bom = page.request.get(f"/api/planning/plans/{plan.pk}/bom/", headers={"Accept": "application/json"}).json()
    nodes = [line for line in bom["lines"] if line["item"] == "HGX H200 8-GPU"]
    assert [(line["quantity"], Decimal(line["unit_cost"])) for line in nodes] == [(4, Decimal("380000.00"))]
    assert Decimal(bom["totals"]["USD"]) == pytest.approx(Decimal(str(expand["capex"])), abs=Decimal("1"))
    assert_clean(session)
