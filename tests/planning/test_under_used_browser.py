"""In a real browser at 1280×800: the under-used recommendations (reclaim before you buy) of a fleet where each
variant fires: an idle in-service node, a team holding GPUs it barely uses, a node stuck in burn-in. A manager
finds the three on the recommendations page, opens each (evidence with the idle cost, the action, the chart; no
sideways scrolling) and accepts the idle one: its plan says to reclaim, not buy."""

import re
from datetime import timedelta

import pytest
from django.contrib.contenttypes.models import ContentType

from inventory.models import LifecycleState, Node, StateTransition
from planning.models import Recommendation
from planning.recommendations import store
from portal.roles import MANAGER
from tests.factories import make_gpu, make_node, make_site
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in
from tests.planning.test_under_used import END, days_at, fleet, jobs_on

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture
S = LifecycleState
LIST = "/planning/recommendations/?kind=under_used"


@pytest.fixture
def under_used(settings):
    """hnd-001 idle (2 %) on 4 days; team vision's jobs held hnd-002 with nothing running on it on 2 of 3 days;
    bsl-old in burn-in for 30 days; hnd-003 and -004 busy. Every GPU-hour priced at the default 2.00 USD (no
    contract covers them)."""
    settings.IDLE_GPU_HOUR_COST, settings.COST_CURRENCY = 2.0, "USD"
    idle, held, busy, busier = fleet()
    days_at(idle, [2, 2, 2, 2])
    jobs_on(held, "vision", [0, 0, 20], "1")
    days_at(busy, [60] * 6)
    days_at(busier, [70] * 6)
    stuck = make_node(site=make_site(name="Basel"), hostname="bsl-old", state=S.BURN_IN)
    for slot in range(4):
        make_gpu(node=stuck, slot=slot)
    node_type = ContentType.objects.get_for_model(Node)
    StateTransition.objects.filter(content_type=node_type, object_id=stuck.pk).delete()
    StateTransition.objects.create(
        content_type=node_type,
        object_id=stuck.pk,
        from_state=S.DELIVERED,
        to_state=S.BURN_IN,
        username="ops",
        created=END - timedelta(days=30),
    )
    store.run(END)
    return {rec.key: rec for rec in Recommendation.objects.filter(kind="under_used")}


def evidence(page):
    """Figure label → (value, unit) from the evidence table."""
    rows = page.locator("#evidence tbody tr")
    return {
        cells[0]: (cells[1], cells[2])
        for cells in (rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count()))
    }


def test_manager_finds_each_under_used_variant_and_reclaims_before_buying(under_used, browser_page):
    assert sorted(under_used) == [
        "under_used:idle:partition=hand",
        "under_used:stuck:site=" + str(Node.objects.get(hostname="bsl-old").site_id),
        "under_used:team=vision",
    ]
    session, page = browser_page, browser_page.page
    log_in(page, make_user("max", MANAGER), "pw-max", "/planning/recommendations/")
    page.goto(LIST)
    titles = page.locator("#object-table tbody tr td:first-child").all_inner_texts()
    assert sorted(titles) == [
        "1 node idle in partition hand",
        "1 node stuck before service at Basel",
        "Team vision held GPUs that ran nothing for 67 % of its GPU-hours",
    ]
    assert page.locator("#object-table tbody").inner_text().count("Under-used") == 3
    assert_no_horizontal_overflow(page)
    session.screenshot("under-used-01-list")

    # The idle node: 4 days × 24 h × 2 GPUs at 2 %: 192 × 0.98 = 188.16 idle GPU-hours, × 2.00 = 376.32 USD.
    with page.expect_navigation(url=re.compile(r"/planning/recommendations/\d+/$")):
        page.get_by_role("link", name="1 node idle in partition hand").click()
    page.wait_for_selector("#evidence-chart .chart .main-svg")  # plotly drew the idle days per node
    figures = evidence(page)
    assert figures["Idle nodes"] == ("1", "")
    assert figures["Idle GPU-hours (on idle days)"] == ("188.16", "GPU-h")
    assert figures["Cost of the idle GPU-hours"] == ("376.32", "USD")
    assert "376 USD" in page.locator("#recommendation").inner_text()
    assert (
        page.locator("#suggested-action")
        .inner_text()
        .startswith("Reclaim before you buy: return hnd-001 to the shared pool")
    )
    assert "hnd-001" in page.locator("#nodes").inner_text()
    assert_no_horizontal_overflow(page)
    session.screenshot("under-used-02-idle")

    # Accepting it makes a plan with nothing to buy, whose analysis says to reclaim first.
    with page.expect_navigation(url=re.compile(r"/planning/capacity-plans/\d+/$")):
        page.locator("#accept").click()
    # The plan page draws its analysis with htmx: wait for it there (leaving the page would abort that request).
    analysis = page.locator("#plan-analysis")
    analysis.get_by_text("Reclaim, not buy").first.wait_for(timeout=30_000)
    assert "reclaim them first" in analysis.inner_text()
    assert_no_horizontal_overflow(page)
    session.screenshot("under-used-03-plan-analysis")

    # The team: held 3 × 24 × 2 = 144 GPU-hours, 96 of them with nothing running (2 days): × 2.00 = 192 USD.
    page.goto(LIST)
    with page.expect_navigation(url=re.compile(r"/planning/recommendations/\d+/$")):
        page.get_by_role("link", name="Team vision held GPUs that ran nothing for 67 % of its GPU-hours").click()
    figures = evidence(page)
    assert figures["Unused share of the held GPU-hours"] == ("66.7", "%")
    assert figures["Cost of the held, unused GPU-hours"] == ("192.0", "USD")
    action = page.locator("#suggested-action").inner_text()
    assert "move the team from partition hand to a shared partition" in action
    # The day at 20 % is performance, not over-allocation: the differential says so.
    assert "Not counted as unused: 48 held GPU-hours" in page.locator("#differential").inner_text()
    assert_no_horizontal_overflow(page)
    session.screenshot("under-used-04-team")

    # The stuck node: 4 GPUs × 30 days × 24 h = 2,880 GPU-hours, × 2.00 = 5,760 USD.
    page.goto(LIST)
    with page.expect_navigation(url=re.compile(r"/planning/recommendations/\d+/$")):
        page.get_by_role("link", name="1 node stuck before service at Basel").click()
    figures = evidence(page)
    assert figures["GPU-hours unused since"][0].replace(",", "") == "2880"
    assert figures["Cost of those GPU-hours"] == ("5760.0", "USD")
    assert "bsl-old (burn-in for 30 days)" in page.locator("#recommendation").inner_text()
    assert page.locator("#suggested-action").inner_text().startswith("Chase the vendor")
    assert_no_horizontal_overflow(page)
    session.screenshot("under-used-05-stuck")
    session.assert_clean()
