"""In a real browser: a plan whose hardware would sit idle after a short peak says so where a manager looks, the
headline above the analysis and the scenario table's owned-use row, with the figures the API gives."""

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from inventory.models import GPUModel, LifecycleState, NodeModel
from planning.models import CapacityPlan, PlanWorkload
from planning.plans.forecast import add_months
from portal.roles import MANAGER
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user
from tests.planning.test_journeys_planning import analysis_loaded, assert_clean, log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_idle_owned_nodes_are_visible_on_the_plan_page(browser_page):
    from rest_framework.test import APIClient

    session, page = browser_page, browser_page.page
    manager = make_user("max", MANAGER)
    node = make_node(node_model=NodeModel.objects.get(name="DGX H100"), state=LifecycleState.IN_SERVICE)
    for slot in range(8):
        make_gpu(node=node, slot=slot)
    # Four months on 256 GPUs, nothing after, renting at 20 per GPU-hour: the hybrid owns nodes that serve
    # the run's last month and then sit idle.
    plan = CapacityPlan.objects.create(name="short peak", rental_gpu_hour_cost=Decimal("20"), owner=manager)
    PlanWorkload.objects.create(plan=plan, name="70B", start=add_months(plan.first_month, 1),
                                gpu_model=GPUModel.objects.get(name="H100 SXM 80GB"),
                                inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 256, "mfu": 0.4,
                                        "goodput": 1})
    api = APIClient()
    api.force_authenticate(manager)
    data = api.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    best = next(s for s in data["scenarios"] if s["kind"] == data["recommendation"]["kind"])
    assert best["below_min_utilization"]

    log_in(page, "max", plan.get_absolute_url())
    analysis_loaded(page)
    expect(page.locator("#recommendation h2")).to_have_text(data["recommendation"]["headline"])
    used = f"{best['nodes']} nodes {round(best['owned_utilization'] * 100)} % used"
    cell = page.locator("#scenarios tr.owned-use td.recommended")
    expect(cell).to_contain_text(used)
    expect(cell).to_contain_text("below 30 %")
    cell.scroll_into_view_if_needed()
    session.screenshot("plan-short-peak")
    assert_clean(session)
