"""Issue 37's item 6 in a real browser: a plan's bill of materials filled from its scenario shows each line by its
item's name with the derivation as a note, flags the estimated prices, and a manager confirms the storage
placeholder's price in place (htmx): the line says who confirmed it, the total's estimated part shrinks; the section
fits a 1,280 px window."""

import re
from datetime import date
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from inventory.models import GPUModel, LifecycleState
from planning.models import CapacityPlan, PlanWorkload
from planning.plans import bom
from portal.roles import MANAGER
from tests.factories import make_attachment, make_fabric, make_gpu, make_node, make_node_model, make_site, make_switch
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


def test_estimated_prices_flagged_and_confirmed(browser_page, settings):
    settings.NETWORK_SHARE_OF_NODE_PRICE, settings.STORAGE_SHARE_OF_NODE_PRICE = 0.15, 0.10
    settings.COST_CURRENCY = "USD"
    session, page = browser_page, browser_page.page
    site = make_site(name="Zurich", power_capacity_kw=Decimal("2000"))
    model = make_node_model(name="HGX H100 test", gpu_slots=8, max_power_w=10200, height_u=8,
                            list_price=Decimal("250000"))
    h100 = GPUModel.objects.get(name="H100 SXM 80GB")
    fabric = make_fabric(name="ib-zurich", site=site)
    leaf = make_switch(fabric=fabric, site=site, model="NVIDIA QM9700", ports=64, uplinks=32)
    for _ in range(2):
        node = make_node(site=site, node_model=model, state=LifecycleState.IN_SERVICE)
        for _ in range(8):
            make_gpu(node=node, gpu_model=h100, state=LifecycleState.IN_SERVICE)
        make_attachment(node=node, fabric=fabric, switch=leaf, ports=8, speed_gbps=400)
    plan = CapacityPlan.objects.create(name="2027 training", first_month=date(2027, 1, 1), horizon_months=12,
                                       site=site, node_model=model)
    PlanWorkload.objects.create(plan=plan, name="70B", start=date(2027, 2, 1), gpu_model=h100,
                                inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 256,
                                        "mfu": 0.4, "goodput": 1})
    bom.fill(plan, "expand", today=date(2026, 12, 2))
    manager = make_user("ann", MANAGER)

    log_in(page, manager, "pw-ann", plan.get_absolute_url())
    section = page.locator("#bill-of-materials")
    storage = plan.items.get(description="Storage for the planned workloads")
    row = section.locator(f"#item-{storage.pk}")
    expect(row.locator(".item-name")).to_have_text("Storage for the planned workloads")
    expect(row.locator("[data-price=estimate]")).to_have_text("Estimate")
    expect(row.locator(".note")).to_contain_text("% of the node price per node")
    share = section.locator(".estimated-share")
    expect(share).to_have_text("of which 9,375,000.00 USD estimated, not confirmed")
    assert_no_horizontal_overflow(page)
    session.screenshot("bom-01-estimates")

    row.get_by_role("button", name="Confirm price of Storage for the planned workloads").click()
    expect(section.locator(".messages")).to_contain_text("Confirmed the price of Storage for the planned workloads")
    expect(section.locator(f"#item-{storage.pk} [data-price=confirmed]")).to_have_text(
        re.compile(r"Confirmed by ann on \d{4}-\d\d-\d\d \d\d:\d\d"))
    expect(section.locator(".estimated-share")).to_have_text("of which 8,625,000.00 USD estimated, not confirmed")
    storage.refresh_from_db()
    assert not storage.price_estimated and storage.price_confirmed_by == manager
    session.screenshot("bom-02-confirmed")
    session.assert_clean()
