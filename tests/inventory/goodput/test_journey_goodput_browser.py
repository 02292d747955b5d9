"""Issue 37's goodput journey in a real browser (the system Chromium via Playwright, against ``live_server``), as a
manager would go:

1. Telemetry → Goodput, the "last month" button: the teams' figures over last month only (a job across the month's
   start counts its part inside), the range said in the heading.
2. Team × month: dates over the two closed months before this one and "month by month": one row per team and month,
   each the figures of that month's own range, and the chart of the losses by cause drawn (node failure, preemption,
   user failures, queue wait), not a ratio near 100 %.
3. A plan's workload row links its time-to-result page: its jobs, the restart (a requeued run), the queue waits, the
   plan's estimate against the realized.

Every page runs without a JS error, a failed request or a request to another host.
"""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.goodput import queries, recording
from inventory.models import TelemetrySource
from inventory.telemetry.rollups import day_start
from portal.roles import MANAGER
from tests.factories import (
    CapacityPlanFactory,
    PlanWorkloadFactory,
    make_gpu,
    make_gpu_model,
    make_node,
    make_node_model,
    make_site,
)
from tests.helpers.accounts import make_user
from tests.helpers.browser_steps import assert_no_horizontal_overflow, log_in
from tests.helpers.goodput import H, add_job
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]

LOSSES = "() => document.querySelector('#losses-chart .js-plotly-plot').data.map(trace => trace.name)"


def first_of_month_before(day):
    return (day.replace(day=1) - timedelta(days=1)).replace(day=1)


def make_history(now):
    """Vision's and speech's jobs over the two closed months before this one (``earlier``, ``later`` = last month) on
    one 8-GPU node: V1 NODE_FAIL in ``earlier``; V2 across the months' border (4 h each side); V3 PREEMPTED in
    ``later`` (2.5 h × 4 GPUs) and requeued (its second run 1 h); S1 speech's FAILED in ``later`` after 2 h queued."""
    later = first_of_month_before(timezone.localdate(now))
    earlier = first_of_month_before(later)
    node = make_node(site=make_site(name="alpha"), node_model=make_node_model(), hostname="j1", state="in_service")
    model = make_gpu_model(name="JM")
    for _ in range(8):
        make_gpu(node=node, gpu_model=model)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    e, lt = day_start(earlier), day_start(later)
    day3, day5, day7 = e + 2 * 24 * H, lt + 4 * 24 * H, lt + 6 * 24 * H
    add_job(source, "V1", node, 8, day3 + 10 * H, day3 + 10 * H, day3 + 14.5 * H, "NODE_FAIL")
    add_job(source, "V2", node, 8, lt - 4 * H, lt - 4 * H, lt + 4 * H, "COMPLETED")
    add_job(source, "V3", node, 4, day5, day5, day5 + 2.5 * H, "PREEMPTED")
    add_job(source, "V3", node, 4, day5 + 3 * H, day5 + 3.5 * H, day5 + 4.5 * H, "COMPLETED")  # requeued
    add_job(source, "S1", node, 8, day7 - 2 * H, day7, day7 + 1.25 * H, "FAILED", account="speech",
            partition="infer")
    recording.record_interruptions(e - 24 * H, now, now)
    return earlier, later


def test_last_month_team_by_month_the_losses_and_a_workloads_time_to_result(browser_page, monkeypatch):
    now = freeze_now(monkeypatch)
    earlier, later = make_history(now)
    plan = CapacityPlanFactory(name="Vision 2027", first_month=earlier, horizon_months=6)
    workload = PlanWorkloadFactory(plan=plan, name="vision pretraining", slurm_account="vision", start=earlier)
    session, page = browser_page, browser_page.page
    log_in(page, make_user("maria", MANAGER), "pw-maria", "/inventory/goodput/")

    # 1. Last month.
    page.get_by_text("last month", exact=True).click()
    expect(page.locator("#range-phrase")).to_have_text("last month")
    vision = page.locator("#goodput-table tbody tr", has_text="vision")
    expect(vision).to_contain_text("46.0")  # V2's 4 h × 8 inside it, V3's 2.5 h + 1 h × 4; not V1 (the month before)
    assert re.search(r"[?&]range=last_month", page.url)
    session.screenshot("goodput-last-month")

    # 2. Team × month over the two months, and the chart of the losses.
    page.select_option("#id_by", "month")
    page.wait_for_load_state("networkidle")
    page.fill("#id_start", f"{earlier}")  # alone, the form asks for both dates
    expect(page.locator("#filter-start .error")).to_contain_text("Give both the start and the end date")
    page.wait_for_load_state("networkidle")
    last_of_later = timezone.localdate(now).replace(day=1) - timedelta(days=1)
    page.fill("#id_end", f"{last_of_later}")
    page.wait_for_load_state("networkidle")
    expect(page.locator("#goodput-table h2")).to_contain_text("Goodput by team (Slurm account) and month")
    rows = page.locator("#goodput-table tbody tr")
    expect(rows).to_have_count(3)
    expected = queries.goodput_by_month_of("team", f"{earlier}..{last_of_later}", now=now)
    for index, row in enumerate(expected):  # each row the month's own figures
        expect(rows.nth(index)).to_contain_text(row["month"])
        expect(rows.nth(index)).to_contain_text(row["name"])
        expect(rows.nth(index)).to_contain_text(f"{row['allocated_gpu_hours']:,.1f}")
    speech = page.locator("#goodput-table tbody tr", has_text="speech")
    expect(speech).to_contain_text(f"{later:%Y-%m}")
    expect(speech.locator("td").last).to_have_text("2.0")  # lost to user failures: 0.25 h × 8 since its checkpoint
    expect(page.locator("#losses-chart .js-plotly-plot")).to_have_count(1)
    drawn = page.evaluate(LOSSES)
    assert {"node failures, degraded", "preemption, requeue", "user failures", "queue wait (GPUs × wait)"} <= set(
        drawn), drawn
    expect(page.locator("#dashboard .js-plotly-plot")).to_have_count(1)  # the losses, no ratio chart
    assert_no_horizontal_overflow(page)
    session.screenshot("goodput-team-by-month", docs=True)

    # 3. The workload's time to result, from the plan's workload row.
    page.goto(plan.get_absolute_url())
    page.locator(f"#time-to-result-link-{workload.pk}").click()
    page.wait_for_url(re.compile(rf"/planning/calibration/workloads/{workload.pk}/$"))
    expect(page.locator("h1")).to_have_text("Time to result: vision pretraining")
    expect(page.locator("#jobs-count")).to_have_text("3")  # V1, V2, V3
    expect(page.locator("#restarts")).to_have_text("1")  # V3's second run
    expect(page.locator("#workload-jobs tbody tr")).to_have_count(4)
    expect(page.locator("#workload-jobs tbody tr", has_text="PREEMPTED")).to_contain_text("Scheduler: Preempted")
    expect(page.locator("#estimate-days")).not_to_have_text("—")
    expect(page.locator("#time-to-result-text")).to_contain_text("against the plan's")
    assert_no_horizontal_overflow(page)
    session.screenshot("workload-time-to-result", docs=True)
    page.wait_for_load_state("networkidle")
    session.assert_clean()
