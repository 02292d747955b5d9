"""Manager journeys 1, 4 and 5 of the README tour, end to end in headless Chromium against ``live_server``:

1. review utilization (fleet dashboard, 30 days, one site and partition, the least-used node, its GPUs'
   chart and the chart's CSV);
4. the procurement round trip over the API with a procurement token (bill of materials of the approved
   plan, a purchase order, two partial deliveries, one retried with the same Idempotency-Key), then the
   delivered nodes in the inventory as a manager sees them;
5. contracts ending within 90 days, one contract's covered assets and the uncovered in-service nodes.

And the layout check: the main pages at 1280x800 and at phone width (390x844) scroll no wider than the
window (wide tables scroll inside their card). Each journey saves screenshots to ``test-artifacts/``;
with ``DOCS_SCREENSHOTS=1`` the chosen ones also go to ``docs/screenshots/`` for the README.
"""

import csv
import io
import re
from datetime import timedelta

import pytest
import requests
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import GPUDaily, GPUHourly, LifecycleState, Node, TelemetrySource
from inventory.telemetry.rollups import floor_hour, rollup_usage
from planning.models import CapacityPlan, Contract, PlanItem, PurchaseOrder
from planning.plans import workflow as plans
from portal.models import APIToken
from portal.roles import MANAGER, PROCUREMENT
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_rack, make_site
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture

CHART_DRAWN = ".chart .main-svg"  # plotly's SVG: the chart was drawn, not just its placeholder
CHART_TIMEOUT_MS = 45_000  # parsing plotly.js on a loaded 2-core machine can take a while


def log_in(page, user, next_url="/"):
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", user.username)
    page.fill("#id_password", f"pw-{user.username}")
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()


def open_menu_item(page, section, item):
    """Through the top bar as a person would: hover the section, click the item."""
    page.locator(".mainnav .menu-button", has_text=section).hover()
    with page.expect_navigation():
        page.locator(".mainnav .menu-items a", has_text=item).first.click()


# --- Journey 1: review utilization -------------------------------------------------------------------


@pytest.fixture
def utilization_fleet():
    """Two sites, partitions train / infer, four nodes of two GPUs each, with 30 days of daily rollups and
    7 days of hourly ones. Within fra-1 / train the least used is ``fra-a02`` (15 %); ``fra-a03`` (5 %) is
    in another partition and ``zrh-b01`` (3 %) at another site, so only the filters make ``fra-a02`` first."""
    fra, zrh = make_site(name="fra-1"), make_site(name="zrh-1")
    gpu_model, node_model = make_gpu_model(name="H200 SXM"), make_node_model(name="HGX H200", gpu_slots=8)
    util = {("fra-a01", fra, "train"): 70, ("fra-a02", fra, "train"): 15, ("fra-a03", fra, "infer"): 5,
            ("zrh-b01", zrh, "train"): 3}
    now = timezone.now()
    hour, today = floor_hour(now), timezone.localdate(now)
    hourly, daily = [], []
    for (hostname, site, partition), level in util.items():
        node = make_node(site=site, node_model=node_model, hostname=hostname, partition=partition,
                         owner_team="vision", state=LifecycleState.IN_SERVICE)
        for slot in range(2):
            gpu = make_gpu(node=node, gpu_model=gpu_model, state=LifecycleState.IN_SERVICE)
            # The two GPUs differ a little, and days are busier than nights, so the node's chart shows two lines.
            hourly += [GPUHourly(gpu=gpu, hour=hour - timedelta(hours=h), samples=60,
                                 util_mean=level + slot * 2 + (8 if 8 <= (hour - timedelta(hours=h)).hour < 20 else 0))
                       for h in range(1, 168)]
            # A weekly rhythm (quiet weekends), so the 30-day chart has a shape.
            daily += [GPUDaily(gpu=gpu, day=today - timedelta(days=d), util_mean=level + slot * 2 + (d % 7) * 3,
                               hours=24, samples=1440) for d in range(1, 31)]
    GPUHourly.objects.bulk_create(hourly)
    GPUDaily.objects.bulk_create(daily)
    rollup_usage()
    TelemetrySource.objects.create(name="prometheus", kind="prometheus", url="http://prometheus:9090",
                                   last_success_at=now, synced_until=hour)
    return Node.objects.get(hostname="fra-a02")


def test_journey_1_review_utilization(utilization_fleet, browser_page, tmp_path):
    session, page = browser_page, browser_page.page
    least_used = utilization_fleet
    log_in(page, make_user("max", MANAGER))
    expect(page.locator("h1")).to_have_text("Fleet dashboard")

    open_menu_item(page, "Telemetry", "Utilization")
    expect(page.locator("h1")).to_have_text("Fleet utilization")
    page.wait_for_selector(CHART_DRAWN, timeout=CHART_TIMEOUT_MS)

    # The range and the filters redraw the charts in place (htmx) and keep the URL shareable.
    page.locator("label.range-button", has_text="30d").click()
    expect(page).to_have_url(re.compile(r"range=30d"))
    expect(page.locator(".kpi span").first).to_have_text(re.compile("last 30 days"))
    page.select_option("#id_site", label="fra-1")
    expect(page).to_have_url(re.compile(r"site=\d+"))
    page.select_option("#id_partition", "train")
    expect(page).to_have_url(re.compile(r"partition=train"))
    least = page.locator("#least-used table").first.locator("tbody tr")  # the in-service table
    expect(least).to_have_count(2)  # fra-a01 and fra-a02: the other site and partition are filtered out
    expect(least.first.locator("td").first).to_have_text("fra-a02")
    page.wait_for_selector(CHART_DRAWN, timeout=CHART_TIMEOUT_MS)
    session.screenshot("journey1-01-utilization", docs=True)

    # The least-used node's page: one line per GPU, with units on the axes.
    with page.expect_navigation():
        least.first.get_by_role("link", name="fra-a02").click()
    expect(page.locator("h1")).to_contain_text("fra-a02")
    chart = page.locator("#gpu-utilization")
    chart.locator(".main-svg").first.wait_for(timeout=CHART_TIMEOUT_MS)
    expect(chart.locator(".legendtext")).to_have_count(2)
    expect(chart.locator(".ytitle")).to_contain_text("%")
    chart.evaluate("el => el.scrollIntoView({block: 'center'})")  # the README's shot shows the chart
    session.screenshot("journey1-02-node-gpus", docs=True)

    # The chart's CSV: a header and one row per GPU and hour of the last 7 days.
    with page.expect_download() as download_info:
        chart.get_by_role("link", name="CSV").click()
    download = download_info.value
    assert download.suggested_filename == "fra-a02-gpu-utilization-7d.csv"
    target = tmp_path / download.suggested_filename
    download.save_as(target)
    rows = list(csv.reader(io.StringIO(target.read_text())))
    assert rows[0] == ["gpu", "time", "mean_utilization_percent"]
    gpu_names = {row[0] for row in rows[1:]}
    assert len(gpu_names) == 2
    assert len(rows) - 1 == 2 * 168  # every hour of the 7 days per GPU; the current hour has no data yet
    readings = [float(row[2]) for row in rows[1:] if row[2]]
    # 167 hours of data per GPU; 166 when an hour boundary passed between the fixture and the download (the
    # window moved on by an hour, past the oldest row).
    assert len(readings) in (2 * 167, 2 * 166) and min(readings) == 15 and max(readings) == 25
    assert least_used.gpus.count() == 2
    session.assert_clean()


# --- Journey 4: procurement round trip over the API -------------------------------------------------


@pytest.fixture
def approved_plan():
    """An approved plan to buy 3 nodes of one model and 6 GPUs (the second manager approved it)."""
    node_model = make_node_model(name="HGX B200", gpu_slots=8)
    gpu_model = make_gpu_model(name="B200 SXM")
    author, approver = make_user("max", MANAGER), make_user("mia", MANAGER)
    plan = CapacityPlan.objects.create(name="2027 expansion", horizon_months=12)
    PlanItem.objects.create(plan=plan, node_model=node_model, quantity=3, unit_cost="350000.00")
    PlanItem.objects.create(plan=plan, gpu_model=gpu_model, quantity=6, unit_cost="0.00")
    plans.submit(plan, author, "for the 2027 budget")
    plan = plans.approve(plan, approver, "go ahead")
    return {"plan": plan, "manager": author, "site": make_site(name="zrh-2"), "node_model": node_model,
            "gpu_model": gpu_model}


class Api:
    """The procurement system's side: plain HTTP with its token, as an ERP would call the portal."""

    def __init__(self, base_url, key):
        self.base_url = base_url
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Token {key}"

    def get(self, path, **params):
        response = self.http.get(self.base_url + path, params=params, timeout=30)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def post(self, path, body, key=None):
        headers = {"Idempotency-Key": key} if key else {}
        return self.http.post(self.base_url + path, json=body, headers=headers, timeout=30)


def test_journey_4_procurement_round_trip(approved_plan, browser_page):
    session, page = browser_page, browser_page.page
    _, key = APIToken.issue(make_user("erp", PROCUREMENT), "ERP")
    api = Api(session.base_url, key)

    # The approved plan's bill of materials tells the ERP what to order.
    (plan,) = api.get("/api/planning/plans/", status="approved")["results"]
    assert plan["id"] == approved_plan["plan"].pk
    bom = api.get(f"/api/planning/plans/{plan['id']}/bom/")
    assert [(line["item"], line["quantity"]) for line in bom["lines"]] == [("HGX B200", 3), ("B200 SXM", 6)]
    assert bom["totals"] == {"USD": "1050000.00"}

    order = api.post("/api/planning/purchase-orders/", {
        "plan": plan["id"], "vendor": "Supermicro", "reference": "PO-2027-001", "site": approved_plan["site"].pk,
        "lines": [{"node_model": line["node_model"], "gpu_model": line["gpu_model"], "quantity": line["quantity"],
                   "unit_price": line["unit_cost"]} for line in bom["lines"]],
    }, key="po-2027-001")
    assert order.status_code == 201, order.text
    order = order.json()
    node_line, gpu_line = (line["id"] for line in order["lines"])
    assert order["status"] == "open"

    # First partial delivery: two nodes, with two GPUs in the first; retried with the same key (the ERP
    # lost the answer): the same answer comes back and nothing is created twice.
    first_body = {"order": order["id"], "external_id": "dn-1", "items": [
        {"line": node_line, "serial": "B200-N-0001", "hostname": "zrh-b200-001"},
        {"line": node_line, "serial": "B200-N-0002", "hostname": "zrh-b200-002"},
        {"line": gpu_line, "serial": "B200-G-0001", "uuid": "GPU-b200-0001", "node": "zrh-b200-001", "slot": 0},
        {"line": gpu_line, "serial": "B200-G-0002", "uuid": "GPU-b200-0002", "node": "zrh-b200-001", "slot": 1},
    ]}
    first = api.post("/api/planning/deliveries/", first_body, key="dn-1")
    assert first.status_code == 201, first.text
    again = api.post("/api/planning/deliveries/", first_body, key="dn-1")
    assert again.status_code == 201 and again.headers.get("Idempotent-Replayed") == "true"
    assert again.json() == first.json()
    assert Node.objects.filter(hostname__startswith="zrh-b200-").count() == 2
    assert api.get(f"/api/planning/purchase-orders/{order['id']}/")["status"] == "partial"

    # Second partial delivery: the third node; two GPUs are still to come.
    second = api.post("/api/planning/deliveries/", {"order": order["id"], "external_id": "dn-2", "items": [
        {"line": node_line, "serial": "B200-N-0003", "hostname": "zrh-b200-003"},
    ]}, key="dn-2")
    assert second.status_code == 201, second.text
    status = api.get(f"/api/planning/purchase-orders/{order['id']}/")
    assert status["status"] == "partial"
    assert [(line["delivered"], line["remaining"]) for line in status["lines"]] == [(3, 0), (2, 4)]
    assert len(status["deliveries"]) == 2
    delivered = api.get("/api/inventory/nodes/", state="delivered")
    assert sorted(n["hostname"] for n in delivered["results"]) == ["zrh-b200-001", "zrh-b200-002",
                                                                     "zrh-b200-003"]

    # A manager sees them in the inventory, in state delivered, and the order with its deliveries.
    log_in(page, approved_plan["manager"], "/inventory/nodes/?state=delivered")
    rows = page.locator("#object-table tbody tr")
    expect(rows).to_have_count(3)
    for hostname in ("zrh-b200-001", "zrh-b200-002", "zrh-b200-003"):
        row = rows.filter(has_text=hostname)
        expect(row.locator(".badge")).to_have_text("Delivered")
    session.screenshot("journey4-01-delivered-nodes")
    po = PurchaseOrder.objects.get()
    page.goto(f"/planning/purchase-orders/{po.pk}/")
    expect(page.locator("h1")).to_contain_text("PO-2027-001")
    expect(page.locator("main")).to_contain_text("Partly delivered")
    gpu_row = page.locator("main tr", has_text="B200 SXM")  # item, ordered, delivered, to come, unit price
    expect(gpu_row.locator("td")).to_have_text(["B200 SXM", "6", "2", "4", "0 USD"])
    expect(page.locator("main tr", has_text="HGX B200").locator("td").last).to_have_text("350,000 USD")
    session.screenshot("journey4-02-purchase-order")

    # The first delivery lists what came, each unit linked to its new node or GPU.
    with page.expect_navigation():
        page.locator("main tr", has_text="dn-1").get_by_role("link").first.click()  # the delivery's number
    items = page.locator("main table").filter(has_text="B200-N-0001")
    expect(items).to_contain_text("zrh-b200-001/gpu1 (B200-G-0002)")
    with page.expect_navigation():
        items.get_by_role("link", name="zrh-b200-001").first.click()
    expect(page.locator("h1")).to_contain_text("zrh-b200-001")
    expect(page.locator("h1 .badge")).to_have_text("Delivered")
    session.assert_clean()


# --- Journey 5: contracts ---------------------------------------------------------------------------


@pytest.fixture
def contracts():
    """Support for rack r01 ends in 40 days, a rental in 75 days, a purchase in two years. In service: two
    nodes in r01 (covered), one in r02 (no support) and one in r01 whose warranty has ended."""
    today = timezone.localdate()
    site = make_site(name="ber-1")
    r01, r02 = make_rack(site, name="ber-1-r01"), make_rack(site, name="ber-1-r02")
    node_model = make_node_model(name="HGX H100")
    ok = dict(state=LifecycleState.IN_SERVICE, warranty_end=today + timedelta(days=400))
    covered = [make_node(rack=r01, node_model=node_model, hostname=f"ber-h100-00{i}", **ok) for i in (1, 2)]
    make_node(rack=r02, node_model=node_model, hostname="ber-h100-101", **ok)
    make_node(rack=r01, node_model=node_model, hostname="ber-h100-003", state=LifecycleState.IN_SERVICE,
              warranty_end=today - timedelta(days=10))

    def contract(kind, reference, end, **kw):
        c = Contract(kind=kind, vendor=kw.pop("vendor", "Acme Support"), reference=reference,
                     start=today - timedelta(days=300), end=end, monthly_cost=kw.pop("monthly_cost", 4000), **kw)
        c.full_clean()
        c.save()
        return c

    support = contract(Contract.Kind.SUPPORT, "SUP-2026-7", today + timedelta(days=40), title="H100 racks support")
    support.racks.add(r01)
    support.nodes.add(*covered)
    contract(Contract.Kind.RENTAL, "RENT-12", today + timedelta(days=75), vendor="GPU Cloud Co",
             rented_gpus=16, rented_gpu_model=make_gpu_model(name="H100 SXM"))
    contract(Contract.Kind.PURCHASE, "PUR-1", today + timedelta(days=730), vendor="Supermicro")
    return support


def test_journey_5_contracts(contracts, browser_page):
    session, page = browser_page, browser_page.page
    log_in(page, make_user("max", MANAGER))

    # From the dashboard's renewal card to the contracts ending within 90 days.
    with page.expect_navigation():
        page.get_by_role("link", name=re.compile("contracts ending within 90 days")).click()
    expect(page).to_have_url(re.compile(r"/planning/contracts/\?expiring_within=90"))
    rows = page.locator("#object-table tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#object-table")).not_to_contain_text("PUR-1")
    page.wait_for_selector(CHART_DRAWN, timeout=CHART_TIMEOUT_MS)  # the contracts' timeline
    session.screenshot("journey5-01-contracts-expiring", docs=True)

    with page.expect_navigation():
        rows.filter(has_text="SUP-2026-7").get_by_role("link").first.click()
    expect(page.locator("h1")).to_contain_text("SUP-2026-7")
    coverage = page.locator("#coverage")
    expect(coverage).to_contain_text("ber-1-r01")
    expect(coverage).to_contain_text("ber-h100-001")
    expect(coverage).to_contain_text("ber-h100-002")
    expect(page.locator("table.fields").first).not_to_contain_text("Rented")  # a support contract rents nothing
    session.screenshot("journey5-02-contract")

    # Uncovered in-service nodes: one without support, one whose warranty has ended (although its rack is
    # under support).
    with page.expect_navigation():
        coverage.get_by_role("link", name=re.compile("Uncovered in-service nodes")).click()
    uncovered = page.locator("#object-table tbody tr")
    expect(uncovered).to_have_count(2)
    expect(uncovered.filter(has_text="ber-h100-101")).to_contain_text("no active support contract")
    expect(uncovered.filter(has_text="ber-h100-003")).to_contain_text("warranty ended")
    session.screenshot("journey5-03-uncovered")
    session.assert_clean()


def test_source_status_refreshes_without_a_reload(browser_page):
    # "Pull now" queues a pull in the background: the status on the page follows it, nobody has to reload.
    session, page = browser_page, browser_page.page
    source = TelemetrySource.objects.create(name="prometheus", kind="prometheus", url="http://prometheus:9090")
    log_in(page, make_user("max", MANAGER), source.get_absolute_url())
    status = page.locator("#source-status .badge")
    expect(status).to_have_text("not pulled yet")
    TelemetrySource.objects.filter(pk=source.pk).update(last_success_at=timezone.now())  # as the worker does
    expect(status).to_have_text("ok", timeout=25_000)
    session.assert_clean()


# --- Layout: the main pages at 1280x800 and at phone width ------------------------------------------

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture
def every_page(utilization_fleet, contracts):
    """One of everything the main pages show (a fleet with telemetry, contracts, an order with a delivery, a
    plan, a recommendation, a ticket), so each page is checked with content, not only its empty state.
    Returns the paths to visit."""
    from planning.models import Delivery, OrderLine, Recommendation
    from tests.factories import make_ticket

    node = utilization_fleet
    gpu = node.gpus.first()
    order = PurchaseOrder.objects.create(contract=Contract.objects.get(reference="PUR-1"), vendor="Supermicro",
                                         reference="PO-7781", site=node.site)
    line = OrderLine.objects.create(order=order, node_model=node.node_model, quantity=4, unit_price="300000.00")
    Delivery.objects.create(order=order, external_id="dn-1")
    plan = CapacityPlan.objects.create(name="Capacity for the 2027 model training runs", horizon_months=18)
    PlanItem.objects.create(plan=plan, node_model=line.node_model, quantity=8, unit_cost="320000.00")
    rec = Recommendation.objects.create(
        key="capacity:train", kind=Recommendation.Kind.choices[0][0], title="Partition train is short of GPUs",
        summary="Jobs in train waited 9.5 hours at the 95th percentile over the last 30 days.",
        action="Add 4 nodes to train.", partition="train", site=node.site, node_count=4,
        evidence={"figures": [{"label": "p95 queue wait", "value": 9.5, "unit": "h"}]})
    ticket = make_ticket(title="XID 79 on gpu0 after the driver update, the node drops out of the Slurm partition",
                         node=node, gpu=gpu)
    contract = Contract.objects.get(reference="SUP-2026-7")
    lists = ["home", "inventory:utilization", "inventory:telemetrysource_list", "inventory:node_list",
             "inventory:gpu_list", "inventory:site_list", "inventory:rack_list", "inventory:switch_list",
             "inventory:storagesystem_list", "planning:contract_list", "planning:uncovered",
             "planning:purchaseorder_list", "planning:delivery_list", "planning:capacityplan_list",
             "planning:recommendation_list", "planning:sizing", "support:ticket_list", "support:metrics", "changelog"]
    objects = [node, gpu, contract, order, plan, rec, ticket]
    return ([reverse(name) for name in lists] + [reverse("inventory:utilization") + "?range=30d"]
            + [obj.get_absolute_url() for obj in objects])


def overflow(page):
    """How many CSS pixels the page scrolls sideways (0: it fits the window), and the widest culprits."""
    return page.evaluate("""() => {
        const width = window.innerWidth;
        const culprits = [...document.querySelectorAll('body *')]
            .filter(el => el.getBoundingClientRect().right > width + 1 && el.offsetParent !== null)
            .filter(el => !el.closest('.card, #object-table, .table-wrap, .menu-items'))
            .slice(0, 5).map(el => el.tagName.toLowerCase() + (el.className ? '.' + el.className : ''));
        return {over: document.documentElement.scrollWidth - width, culprits};
    }""")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280x800", "390x844"])
def test_main_pages_fit_the_window(every_page, browser_page, viewport):
    session, page = browser_page, browser_page.page
    page.set_viewport_size(viewport)
    log_in(page, make_user("max", MANAGER))
    too_wide = {}
    for path in every_page:
        response = page.goto(path, wait_until="networkidle")
        assert response.status == 200, path
        result = overflow(page)
        if result["over"] > 0:
            too_wide[path] = result
    assert too_wide == {}, f"pages wider than {viewport['width']} px: {too_wide}"

    # The top navigation works by touch at this width: a tapped menu opens inside the window.
    page.goto("/")
    for button in page.locator(".mainnav .menu-button").all():
        button.click()
        items = button.locator("xpath=following-sibling::div[contains(@class, 'menu-items')]")
        expect(items).to_be_visible()
        box = items.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (button.inner_text(), box)
    if viewport is PHONE:
        session.screenshot("layout-phone-dashboard")
    session.assert_clean()


# --- Slow pages found by bench/page_times.py --------------------------------------------------------


def test_change_log_queries_do_not_grow_with_its_rows():
    # A GPU's name includes its node's: the change log once loaded each row's node on its own (247 queries
    # and 0.4 s for the demo's 200 rows). Now one query per related model, whatever the number of rows.
    from django.test import Client

    client = Client()
    client.force_login(make_user("max", MANAGER))
    node = make_node(hostname="chg-node")

    def page_queries():
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse("changelog"))
        assert response.status_code == 200
        return len(queries), response.content.decode()

    make_gpu(node=node)
    few, _ = page_queries()
    for _ in range(15):
        make_gpu(node=make_node(), gpu_model=node.gpus.get().gpu_model)
    many, html = page_queries()
    assert many == few
    assert html.count("/gpu0 (GPU-SN-") == 16  # every GPU named with its node, as before
