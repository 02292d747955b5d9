"""In a real browser (issue 20): a manager sizes a run on a GPU model with interruption history, adds it to a new plan,
and the plan page shows the sizing page's GPU-hours and the measured basis of its goodput allowance."""

import pytest
from django.test.utils import override_settings
from django.urls import reverse
from django.utils.http import urlencode
from playwright.sync_api import expect

from inventory.goodput import recording
from planning.models import PlanWorkload
from planning.plans.models import next_month
from planning.sizing import rates
from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.goodput import MIN, H, make_goodput_fleet
from tests.helpers.telemetry import freeze_now
from tests.planning.test_journeys_planning import assert_clean, log_in

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]

MEASURED = "measured on your fleet: 2 interruptions over 130 GPU-hours, M1, 30 days"


@override_settings(SIZING_MEASURED_MIN_GPU_HOURS=100)
def test_add_to_plan_keeps_the_measured_goodput_in_the_browser(browser_page, monkeypatch):
    session, page = browser_page, browser_page.page
    now = freeze_now(monkeypatch)
    monkeypatch.setattr(rates, "MIN_INTERRUPTIONS", 2)  # the fleet's 2, trusted here (sizing needs 10)
    make_goodput_fleet(now)
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    make_user("max", MANAGER)
    query = {"gpu_model": "M1", "params_billion": 1, "tokens_billion": 30, "num_gpus": 64}
    sizing_url = f"{reverse('planning:sizing')}?{urlencode(query)}"
    log_in(page, "max", reverse("planning:sizing"))
    page.goto(sizing_url)
    gpu_hours = page.locator("#figure-gpu_hours td.num").inner_text()
    expect(page.locator("#figure-goodput")).to_contain_text("measured on your fleet")
    expect(page.locator("#add-goodput-basis")).to_contain_text(MEASURED)

    page.fill("#id_new_plan", "Measured goodput")
    page.fill("#id_start", f"{next_month():%Y-%m}")
    page.fill("#id_slurm_job_name", "llama-1b-*")
    with page.expect_navigation():
        page.get_by_role("button", name="Add to plan").click()
    workload = PlanWorkload.objects.get(plan__name="Measured goodput")
    row = page.locator(f"#workload-{workload.pk}")
    expect(row.locator("td.num").first).to_have_text(gpu_hours)
    expect(page.locator(f"#goodput-{workload.pk}")).to_contain_text(
        f"Goodput {workload.goodput_basis['goodput']:.3f}: {MEASURED}")
    expect(page.locator(f"#job-name-{workload.pk}")).to_have_text("Slurm jobs named llama-1b-*")
    row.scroll_into_view_if_needed()
    session.screenshot("plan-goodput-basis")
    assert_clean(session)
