"""The Content-Security-Policy in a real browser (system Chromium via Playwright against ``live_server``):
the main pages, their charts (plotly.js), htmx swaps and the API docs run under the policy with no
violation and no JS error.

Violations are caught two ways: every ``securitypolicyviolation`` event (reported to the test through an
exposed function, so it survives navigation) and every console message that mentions the policy
("Refused to ... because it violates the following Content Security Policy directive").
"""

import re
from datetime import timedelta
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import GPU, GPUDaily, GPUHourly, LifecycleState, TelemetrySource
from inventory.telemetry.rollups import floor_hour, rollup_usage
from planning.models import CapacityPlan, Contract, PlanItem, PlanWorkload
from portal.roles import ADMIN, VIEWER
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_rack, make_site
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture

H = timedelta(hours=1)
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.__reportCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} `
    + `at ${e.sourceFile || document.location.href}:${e.lineNumber} (sample: ${e.sample})`);
});
"""


@pytest.fixture
def fleet():
    """Two nodes with four GPUs and a day of hourly telemetry, a contract and a capacity plan."""
    site = make_site(name="fra-1")
    rack = make_rack(site, name="fra-1-r01")
    gpu_model = make_gpu_model(name="H200")
    node_model = make_node_model(name="HGX H200 8-GPU")
    nodes = [make_node(site=site, rack=rack, node_model=node_model, hostname=f"dgx-{i:02}",
                       state=LifecycleState.IN_SERVICE, partition="train") for i in (1, 2)]
    gpus = [make_gpu(node=node, gpu_model=gpu_model) for node in nodes for _ in range(2)]
    h = floor_hour(timezone.now())
    GPUHourly.objects.bulk_create([GPUHourly(gpu=gpu, hour=h - k * H, util_mean=(17 * k + 13 * i) % 100, samples=60)
                                   for i, gpu in enumerate(gpus) for k in range(1, 25)])
    today = timezone.localdate()
    GPUDaily.objects.bulk_create([GPUDaily(gpu=gpu, day=today - timedelta(days=d), util_mean=50 + d, hours=24,
                                           samples=1440) for gpu in gpus for d in range(1, 8)])
    rollup_usage()
    TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090",
                                   last_success_at=timezone.now(), synced_until=h)
    contract = Contract.objects.create(kind=Contract.Kind.SUPPORT, vendor="Acme", reference="SUP-1",
                                       start=today - timedelta(days=100), end=today + timedelta(days=200))
    contract.nodes.add(nodes[0])
    plan = CapacityPlan.objects.create(name="2027 expansion", description="More GPUs", horizon_months=12)
    PlanWorkload.objects.create(plan=plan, name="70B pretraining", start=plan.first_month, gpu_model=gpu_model,
                                inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 512})
    PlanItem.objects.create(plan=plan, node_model=node_model, quantity=4, unit_cost=Decimal("250000.00"))
    return {"nodes": nodes, "contract": contract, "plan": plan, "gpu_model": gpu_model}


@pytest.fixture
def csp_session(browser_page):
    session = browser_page
    session.violations = []

    def report(text):
        session.violations.append(text)

    def console(message):
        if "Content Security Policy" in message.text:
            session.violations.append(f"console: {message.text}")

    session.page.expose_function("__reportCspViolation", report)
    session.page.add_init_script(REPORT_VIOLATIONS)
    session.page.on("console", console)
    return session


def log_in(page, username, next_url="/"):
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", f"pw-{username}")
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()


# The one violation we accept, on /api/redoc/ only: Redoc's bundle always shows a "by Redocly" logo from
# cdn.redoc.ly in its sidebar (no option turns it off). The policy blocks it, as it should (the portal is
# air-gapped: no request leaves for another host) and Redoc hides the broken image (its onError).
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def drop_aborted_icons(session):
    """The browser fetches the page icon lazily; going on to the next page quickly aborts that fetch
    (net::ERR_ABORTED), which says nothing about the page or its policy."""
    session.failed_requests[:] = [r for r in session.failed_requests
                                  if not ("favicon" in r and r.endswith("net::ERR_ABORTED"))]


def visit(session, url, ready=None, allowed=()):
    """Open ``url``, wait until it is idle (and ``ready``, a CSS selector, is there); no violation so far
    except those naming one of the ``allowed`` URLs (which are then dropped from the session's records)."""
    page = session.page
    response = page.goto(url)
    assert response.status == 200, f"{url}: {response.status}"
    page.wait_for_load_state("networkidle")
    if ready:
        # Generous: on a loaded 2-core machine parsing plotly.js and drawing can take longer than the default.
        page.wait_for_selector(ready, timeout=45_000)
    assert "content-security-policy" in response.headers, f"{url} has no policy header"
    for record in (session.violations, session.console_errors, session.failed_requests, session.requests):
        record[:] = [item for item in record if not any(blocked in item for blocked in allowed)]
    drop_aborted_icons(session)
    assert session.violations == [], f"{url}: {session.violations}"
    return page


def test_the_pages_run_under_the_policy(fleet, csp_session):
    session = csp_session
    page = session.page
    make_user("vera", VIEWER)
    node = fleet["nodes"][0]

    page.goto("/accounts/login/")
    assert session.violations == []
    log_in(page, "vera")

    visit(session, "/", ready=".chart .main-svg")
    assert page.locator(".chart .main-svg").count() >= 2  # plotly drew the dashboard's charts

    # The node list and its htmx filter: the table is swapped in, no page load.
    visit(session, "/inventory/nodes/", ready="#object-table")
    page.evaluate("window.__marker = 1")
    with page.expect_response(lambda r: "q=dgx-02" in r.url):
        page.locator("form.filters input[name=q]").press_sequentially("dgx-02", delay=20)
    expect(page.locator("#object-table tbody tr")).to_have_count(1)
    assert page.evaluate("window.__marker") == 1
    assert session.violations == []

    visit(session, f"/inventory/nodes/{node.pk}/", ready=".chart .main-svg")
    page.locator(".chart .main-svg").first.hover()  # the mode bar (plotly adds its styles at run time)
    page.wait_for_timeout(200)

    visit(session, "/inventory/utilization/", ready=".chart .main-svg")
    assert page.locator(".chart .main-svg").count() >= 2
    with page.expect_response(lambda r: "/inventory/utilization/" in r.url and "range=" in r.url):
        page.locator("label.range-button:has(input:not(:checked))").first.click()  # htmx swaps the charts
    page.wait_for_load_state("networkidle")
    page.wait_for_selector(".chart .main-svg")
    assert session.violations == []

    visit(session, "/planning/contracts/")
    visit(session, fleet["contract"].get_absolute_url())
    visit(session, "/planning/capacity-plans/")
    visit(session, f"/planning/capacity-plans/{fleet['plan'].pk}/")
    # The plan's analysis arrives by htmx and draws its charts; the first one in a process imports statsmodels.
    page.wait_for_selector("#plan-analysis-body .chart .main-svg", timeout=60_000)
    assert session.violations == []
    # A GPU model of this database: an earlier live-server test's flush may have emptied the catalog migration's rows.
    gpu_model = GPU.objects.filter(node__isnull=False).select_related("gpu_model").first().gpu_model.name
    visit(session, "/planning/sizing/?" + urlencode({"params_billion": 7, "tokens_billion": 2000,
                                                       "gpu_model": gpu_model, "deadline_days": 30}),
          ready=".chart .main-svg")
    visit(session, "/changes/")
    visit(session, "/tokens/")
    visit(session, "/inventory/gpus/")
    visit(session, "/inventory/sites/")

    # The API docs: Swagger UI (its init script has the page's nonce) and Redoc (a blob: worker).
    visit(session, "/api/docs/", ready=".swagger-ui .opblock")
    visit(session, "/api/redoc/", ready=".api-content", allowed=[REDOC_LOGO])
    # The browsable API (DRF's templates: CSRF token as JSON, scripts from static files). Its page has no
    # <link rel=icon>, so the browser asks for /favicon.ico (a 404 that has nothing to do with the policy).
    visit(session, "/api/", ready=".response-info", allowed=["/favicon.ico"])

    drop_aborted_icons(session)
    session.assert_clean()
    assert session.violations == []


def test_the_admin_runs_under_the_policy(fleet, csp_session):
    session = csp_session
    ada = make_user("ada", ADMIN)
    ada.is_staff = True  # the Django admin needs it besides the role
    ada.save()
    log_in(session.page, "ada", "/admin/")
    visit(session, "/admin/")
    visit(session, "/admin/inventory/node/")
    visit(session, f"/admin/inventory/node/{fleet['nodes'][0].pk}/change/")
    # Not assert_clean(): the admin's pages have no <link rel=icon>, so the browser asks for /favicon.ico (404).
    assert session.page_errors == [] and session.failed_requests == []
    assert [e for e in session.console_errors if "favicon.ico" not in e] == []


def test_a_violation_would_be_caught(fleet, csp_session):
    """The harness itself: an inline script injected into a page is blocked and reported."""
    session = csp_session
    make_user("vera", VIEWER)
    log_in(session.page, "vera")
    session.page.evaluate("""() => { const s = document.createElement('script');
                                     s.textContent = 'window.__ran = 1'; document.body.appendChild(s); }""")
    session.page.wait_for_timeout(200)
    assert session.page.evaluate("window.__ran") is None
    assert any(re.search(r"script-src", v) for v in session.violations), session.violations
