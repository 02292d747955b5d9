"""A planned workload's time-to-result page (issue 37): its jobs with their restarts, queue waits and interruptions,
and the plan's estimate against the realized, each figure the plan page's (``workload_rows``:
``planning.goodput.time_to_result``, its sizing); linked from the plan's workload row. Hand-built jobs
(``tests.helpers.goodput``: vision's NODE_FAIL, XID 79, completed and running jobs) and a requeued run."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from inventory.goodput import recording
from inventory.goodput.models import Interruption
from planning.plans.views import workload_rows
from portal.roles import RESEARCHER
from tests.factories import CapacityPlanFactory, PlanWorkloadFactory
from tests.helpers.accounts import make_user
from tests.helpers.goodput import MIN, H, add_job, make_goodput_fleet
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


@pytest.fixture
def fleet(now):
    fleet = make_goodput_fleet(now)
    h = fleet["h"]
    # J1 (job 1, NODE_FAIL at −6 h) requeued: a second run of the same job id, 15 min in the queue, 15 min running.
    add_job(fleet["source"], "1", fleet["nodes"]["n1"], 8, h - 6 * H, h - 5.75 * H, h - 5.5 * H, "COMPLETED")
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    return fleet


def plan_with(now, account="vision", job_name=""):
    plan = CapacityPlanFactory(first_month=(now - 48 * H).date().replace(day=1), horizon_months=3)
    return PlanWorkloadFactory(plan=plan, slurm_account=account, slurm_job_name=job_name, start=plan.first_month)


def url(workload):
    return reverse("planning:workload_time_to_result", args=[workload.pk])


def test_the_page_shows_the_jobs_restarts_waits_and_the_estimate_against_the_realized(fleet, now, viewer_client):
    workload = plan_with(now)
    plan_page = viewer_client.get(workload.plan.get_absolute_url()).content.decode()
    assert f'href="{url(workload)}"' in plan_page  # linked from the plan's workload row

    page = viewer_client.get(url(workload))
    assert page.status_code == 200
    context, html = page.context, page.content.decode()
    row = next(r for r in workload_rows(workload.plan) if r.workload == workload)  # the plan page's figures
    ttr, jobs = context["ttr"], context["jobs"]
    assert (ttr.jobs, ttr.running, ttr.first_submit) == (4, 1, fleet["h"] - 11 * H)  # jobs 1, 2, 5, 6
    assert ttr.text == row.time_to_result.text and escape(ttr.text) in html
    assert context["estimate_days"] == row.sizing["wall_clock_days"]
    assert context["estimate_gpu_hours"] in html
    # Runs: J1, its requeued run, J2, J5, J6; one restart. Queue waits 0.5 + 0.25 + 0 + 1 + 0.5 h.
    assert (jobs.total_runs, jobs.jobs, jobs.requeued_runs) == (5, 4, 1)
    assert (jobs.queue_wait_hours, jobs.longest_wait_hours) == (2.25, 1.0)
    # GPU-hours: 8 × (4.5 + 0.25 + 4.25 + 4 + 3.5 so far) = 132.
    assert jobs.gpu_hours == pytest.approx(132.0)
    infra = Interruption.objects.filter(account="vision", cause="infrastructure")
    assert jobs.interruptions == {"Infrastructure": 2}
    assert jobs.lost_gpu_hours == pytest.approx(sum(i.lost_gpu_hours for i in infra))
    assert 'id="restarts">1<' in html and 'id="jobs-count">4<' in html and "2.3 h" in html
    assert html.count("Infrastructure: ") == 3 and "Node failure (Slurm NODE_FAIL)" in html  # the sum, two runs
    assert "GPU fell off the bus (XID 79)" in html and ">running<" in html


def test_a_workload_without_account_or_pattern_says_why(now, viewer_client):
    workload = plan_with(now, account="")
    page = viewer_client.get(url(workload))
    assert page.status_code == 200 and page.context["jobs"] is None
    assert "names no Slurm account and no job name pattern" in page.content.decode()


def test_who_reads_plans_reads_it_and_an_unknown_workload_is_a_404(fleet, now, viewer_client):
    workload = plan_with(now, job_name="nothing-*")
    assert viewer_client.get(url(workload)).context["ttr"].jobs == 0
    assert viewer_client.get(reverse("planning:workload_time_to_result", args=[workload.pk + 1000])).status_code == 404
    researcher = Client()
    researcher.force_login(make_user("rita", RESEARCHER))
    assert researcher.get(url(workload)).status_code == 403
