"""Goodput on a plan's workloads (issue 20): "Add to plan" keeps the goodput allowance the sizing page used (the
fleet's measured interruption rate or the published default) with its basis, and the plan's figures stay the sizing
page's; a workload's Slurm job name pattern picks the jobs of its time to result (hand-built jobs)."""

import re
import sqlite3
from contextlib import closing

import pytest
from django.test.utils import override_settings
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inventory.goodput import recording
from inventory.models import SlurmJob, TelemetrySource
from planning.goodput import LIKE_ESCAPE, job_name_glob, job_name_like, jobs_of, time_to_result
from planning.models import CapacityPlan, PlanWorkload
from planning.plans.models import next_month
from planning.sizing import rates, sizing
from tests.factories import CapacityPlanFactory, PlanWorkloadFactory, make_gpu_model
from tests.helpers.goodput import MIN, H, make_goodput_fleet
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db

SIZING = reverse("planning:sizing")
BODY = {"params_billion": 1, "tokens_billion": 30, "num_gpus": 64}
MEASURED = "measured on your fleet: 2 interruptions over 130 GPU-hours, M1, 30 days"


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


@pytest.fixture
def fleet(now):
    fleet = make_goodput_fleet(now)
    recording.record_interruptions(now - 48 * H, now + MIN, now)  # M1: 2 interruptions over 130 GPU-hours
    return fleet


def add_to_plan(client, query, name="Goodput plan"):
    """GET the sizing page for ``query``, then "Add to plan" into a new plan: (the page's context, the workload)."""
    page = client.get(SIZING, query)
    response = client.post(f"{SIZING}?{urlencode(query)}", {"plan": "", "new_plan": name, "name": "1B run",
                                                            "start": f"{next_month():%Y-%m}"})
    assert response.status_code == 302, response.content.decode()[:2000]
    return page, PlanWorkload.objects.get(plan__name=name)


def plan_row(client, workload):
    page = client.get(workload.plan.get_absolute_url())
    return next(r for r in page.context["workloads"] if r.workload == workload), page.content.decode()


def plan_api(client, workload):
    body = client.get(f"/api/planning/plans/{workload.plan_id}/").json()
    return next(w for w in body["workloads"] if w["id"] == workload.pk)


@override_settings(SIZING_MEASURED_MIN_GPU_HOURS=100)
def test_add_to_plan_keeps_the_measured_goodput_and_the_plan_shows_the_sizing_pages_figures(
        fleet, manager_client, manager_api, monkeypatch):
    monkeypatch.setattr(rates, "MIN_INTERRUPTIONS", 2)  # the fleet's 2, trusted here (sizing needs 10)
    query = {"gpu_model": "M1", **BODY}
    page, workload = add_to_plan(manager_client, query)
    shown = {figure.key: figure for figure, _ in page.context["figures"]}
    goodput, gpu_hours = shown["goodput"].value, shown["gpu_hours"].value
    # The fleet's rate: 2 / 130 per GPU-hour × 64 GPUs × 0.31 h lost each.
    assert goodput == pytest.approx(1 / (1 + 64 * 2 / 130 * sizing.HOURS_LOST_PER_INTERRUPTION))
    assert f"The workload keeps this goodput allowance, {goodput:.3f}: {MEASURED}." in page.content.decode()

    # Kept: the allowance as an input (plans size without the fleet's rate) and its basis.
    assert workload.inputs == {"params_billion": 1, "tokens_billion": 30, "num_gpus": 64, "goodput": goodput}
    assert workload.goodput_basis == {"goodput": goodput, "basis": MEASURED, "measured": True, "gpus": 64,
                                      "sized_on": timezone.localdate().isoformat()}
    # The plan page and the API: the sizing page's GPU-hours exactly, and the basis.
    row, html = plan_row(manager_client, workload)
    assert row.gpu_hours == gpu_hours
    text = row.goodput["text"]
    assert text.startswith(f"Goodput {goodput:.3f}: {MEASURED} (kept from the sizing page, ")
    assert f'id="goodput-{workload.pk}">{text}<' in html.replace("&#x27;", "'")
    api = plan_api(manager_api, workload)
    assert api["gpu_hours"] == gpu_hours
    assert (api["goodput"]["value"], api["goodput"]["basis"], api["goodput"]["changed"]) == (goodput, MEASURED, False)
    assert api["goodput"]["added"]["measured"] is True

    # Later the fleet's rate no longer applies (less history than needed): sizing moves to the published rate, the
    # plan keeps its figures and basis.
    with override_settings(SIZING_MEASURED_MIN_GPU_HOURS=10_000):
        resized = manager_api.post("/api/planning/sizing/", query, format="json").json()["figures"]
        assert resized["goodput"]["source"] == sizing.GOODPUT_SOURCE and resized["gpu_hours"]["value"] != gpu_hours
        assert plan_api(manager_api, workload)["gpu_hours"] == gpu_hours
        assert plan_row(manager_client, workload)[0].goodput["basis"] == MEASURED


@override_settings(SIZING_MEASURED_MIN_GPU_HOURS=100)
def test_an_edited_goodput_says_it_changed(fleet, manager_client, manager_api, monkeypatch):
    monkeypatch.setattr(rates, "MIN_INTERRUPTIONS", 2)  # the fleet's 2, trusted here (sizing needs 10)
    _, workload = add_to_plan(manager_client, {"gpu_model": "M1", **BODY})
    kept = workload.goodput_basis["goodput"]
    workload.inputs = {k: v for k, v in workload.inputs.items() if k != "goodput"}  # back to the default
    workload.save()
    row, _ = plan_row(manager_client, workload)
    assert row.goodput["changed"] is True and row.goodput["basis"].startswith("published default: Dubey")
    assert f"changed since it was added from the sizing page with {kept:.3f}, {MEASURED}" in row.goodput["text"]
    api = plan_api(manager_api, workload)["goodput"]
    assert api["changed"] is True and api["added"]["basis"] == MEASURED


def test_add_to_plan_keeps_the_published_default_without_history(fleet, manager_client, manager_api):
    # 130 GPU-hours is below the default 10,000: the published rate; the plan sizes with it too, no input added.
    page, workload = add_to_plan(manager_client, {"gpu_model": "M1", **BODY})
    shown = {figure.key: figure for figure, _ in page.context["figures"]}
    assert workload.inputs == BODY
    assert workload.goodput_basis["basis"] == f"published default: {sizing.GOODPUT_SOURCE}"
    assert workload.goodput_basis["measured"] is False
    row, _ = plan_row(manager_client, workload)
    assert row.gpu_hours == shown["gpu_hours"].value and row.goodput["changed"] is False
    assert plan_api(manager_api, workload)["goodput"]["basis"] == f"published default: {sizing.GOODPUT_SOURCE}"


def test_a_given_goodput_is_an_input_with_no_basis_kept(fleet, manager_client, manager_api):
    page, workload = add_to_plan(manager_client, {"gpu_model": "M1", "goodput": "0.8", **BODY})
    assert workload.inputs["goodput"] == 0.8 and workload.goodput_basis == {}
    assert 'id="add-goodput-basis"' not in page.content.decode()
    assert plan_api(manager_api, workload)["goodput"] == {"value": 0.8, "basis": "given", "changed": False,
                                                          "added": None}


# --- time to result by job name pattern -----------------------------------------------------------------------


def test_job_name_like_escapes_sql_wildcards():
    assert job_name_like("llama-70b-*") == "llama-70b-%"
    assert job_name_like("run-?") == "run-_"
    assert job_name_like("100%_x\\*") == "100\\%\\_x\\\\%"


def shell_match(pattern, name):
    """The reference: ``*`` any text, ``?`` one character, every other character itself, case included."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, name, re.DOTALL) is not None


PATTERN_CHARACTERS = "lLaA-*?[]%_\\1"


@pytest.mark.django_db
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=st.text(PATTERN_CHARACTERS, min_size=1, max_size=8), name=st.text(PATTERN_CHARACTERS, max_size=10))
def test_a_pattern_matches_the_same_names_on_postgresql_and_on_sqlite(pattern, name):
    """The demo (SQLite, whose LIKE ignores ASCII case) counts the jobs production (PostgreSQL) counts."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT %s LIKE %s ESCAPE '{LIKE_ESCAPE}'", [name, job_name_like(pattern)])
        on_postgresql = cursor.fetchone()[0]
    with closing(sqlite3.connect(":memory:")) as sqlite:
        on_sqlite = bool(sqlite.execute("SELECT ? GLOB ?", [name, job_name_glob(pattern)]).fetchone()[0])
    assert on_postgresql == on_sqlite == shell_match(pattern, name)


def test_the_sqlite_query_of_a_pattern_is_a_case_sensitive_glob():
    """``jobs_of`` compiled for SQLite and run there on a table of names: the demo's own query."""
    from django.db.utils import ConnectionHandler

    sqlite = ConnectionHandler({"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}})["default"]
    pattern = PlanWorkload(slurm_job_name="llama-70b-[v2]*")
    sql, params = (SlurmJob.objects.filter(jobs_of(pattern)).order_by().values_list("name", flat=True)
                   .query.get_compiler(connection=sqlite).as_sql())
    assert " GLOB " in sql
    names = ["llama-70b-[v2]-pre", "Llama-70B-[v2]-pre", "llama-70b-v2-pre", "llama-70b-[v2]"]
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(f"CREATE TABLE {SlurmJob._meta.db_table} (name TEXT)")
        db.executemany(f"INSERT INTO {SlurmJob._meta.db_table} VALUES (?)", [(name,) for name in names])
        found = {row[0] for row in db.execute(sql.replace("%s", "?"), params)}
    assert found == {"llama-70b-[v2]-pre", "llama-70b-[v2]"}


@pytest.fixture
def jobs(now):
    """Hand-built jobs, ``name: (account, submit, end)`` in hours from now (end None: running). Job 7 ran twice
    (requeued: two rows with one job id, here from two sources since a source keeps one row per id today)."""
    first, second = (TelemetrySource.objects.create(name=n, kind="slurm", url=f"http://{n}/") for n in ("a", "b"))
    rows = [("1", "llama-70b-pre", "vision", -10, -8), ("2", "llama-70b-ft", "vision", -6, -2),
            ("3", "llama-7b-x", "vision", -5, -4), ("4", "llama-70b-eval", "speech", -20, -1),
            ("5", "llama-70b-new", "vision", -1, None), ("6", "other", "speech", -30, -29),
            ("7", "resumable", "robotics", -9, -7), ("7", "resumable", "robotics", -6, -3)]
    for i, (job_id, name, account, submit, end) in enumerate(rows):
        SlurmJob.objects.create(source=second if i == len(rows) - 1 else first, job_id=job_id, name=name,
                                account=account, submit_time=now + submit * H,
                                end_time=None if end is None else now + end * H, gpus=8)
    return now


def workload(plan, account="", pattern=""):
    return PlanWorkloadFactory(plan=plan, slurm_account=account, slurm_job_name=pattern,
                               start=plan.first_month)


def test_time_to_result_by_pattern_account_or_both_in_one_query(jobs, django_assert_num_queries):
    now = jobs
    plan = CapacityPlanFactory(first_month=(now - 48 * H).date().replace(day=1), horizon_months=3)
    named, account, both, requeued, none = (workload(plan, pattern="llama-70b-*"), workload(plan, "vision"),
                                            workload(plan, "vision", "llama-70b-*"), workload(plan, "robotics"),
                                            workload(plan))
    with django_assert_num_queries(1):
        found = time_to_result([named, account, both, requeued, none], now=now)
    # Pattern only: 1, 2, 5 (vision) and speech's 4 (a matching name of another team); not 3 (llama-7b).
    assert (found[named.pk].jobs, found[named.pk].running, found[named.pk].first_submit) == (4, 1, now - 20 * H)
    # Account only: vision's 1, 2, 3, 5.
    assert (found[account.pk].jobs, found[account.pk].first_submit) == (4, now - 10 * H)
    # Both: vision's jobs that match, speech's llama-70b-eval excluded.
    assert (found[both.pk].jobs, found[both.pk].first_submit, found[both.pk].running) == (3, now - 10 * H, 1)
    assert found[both.pk].whose == "under vision named llama-70b-*"
    # A requeued job counts once; its span runs from the first run's submit to the last run's end.
    assert (found[requeued.pk].jobs, found[requeued.pk].days) == (1, pytest.approx(6 / 24))
    assert none.pk not in found


@pytest.mark.parametrize("pattern, matched", [
    ("100%_done\\*", {"100%_done\\x"}),  # %, _ and \ match only themselves
    ("run-?", {"run-1"}),
    ("x' OR '1'='1", set()),
    ("%", {"%"}),
    ("_", {"_"}),
])
def test_hostile_patterns_match_only_what_they_say(now, pattern, matched):
    source = TelemetrySource.objects.create(name="s", kind="slurm", url="http://s/")
    names = ["100%_done\\x", "100XXdone\\x", "100%Xdone\\x", "100%_doneX", "run-1", "run-12", "%", "_", "a", ""]
    for i, name in enumerate(names):
        SlurmJob.objects.create(source=source, job_id=str(i), name=name, account="t", submit_time=now - H,
                                end_time=now)
    plan = CapacityPlanFactory(first_month=(now - 48 * H).date().replace(day=1), horizon_months=3)
    one = workload(plan, "t", pattern)
    assert time_to_result([one], now=now)[one.pk].jobs == len(matched)
    assert set(SlurmJob.objects.filter(jobs_of(one)).values_list("name", flat=True)) == matched


def test_the_plan_page_and_api_show_the_pattern(jobs, viewer_client, viewer_api):
    plan = CapacityPlanFactory(first_month=(jobs - 48 * H).date().replace(day=1), horizon_months=3)
    both = workload(plan, "vision", "llama-70b-*")
    html = viewer_client.get(plan.get_absolute_url()).content.decode()
    assert f'id="job-name-{both.pk}">Slurm jobs named llama-70b-*<' in html
    assert "of 3 jobs under vision named llama-70b-* against" in html
    body = viewer_api.get(f"/api/planning/plans/{plan.pk}/").json()["workloads"][0]
    assert body["slurm_job_name"] == "llama-70b-*"
    assert (body["time_to_result"]["job_name"], body["time_to_result"]["jobs"]) == ("llama-70b-*", 3)


# --- the pattern in the API and the form ---------------------------------------------------------------------


def add_api(client, plan, **fields):
    body = {"name": "run", "start": f"{plan.first_month:%Y-%m}", "gpu_model": make_gpu_model().pk,
            "inputs": {"params_billion": 7, "tokens_billion": 140}, **fields}
    return client.post(f"/api/planning/plans/{plan.pk}/workloads/", body, format="json")


@pytest.mark.parametrize("fields, error", [
    ({"slurm_job_name": "   "}, "A job name pattern cannot be blank"),
    ({"slurm_job_name": "x" * 201}, "no more than 200 characters"),
    ({"slurm_job_name": "*?"}, "This pattern matches every job"),
])
def test_the_api_refuses_a_bad_pattern_by_field(manager_api, fields, error):
    plan = CapacityPlanFactory()
    response = add_api(manager_api, plan, **fields)
    assert response.status_code == 400 and error in response.json()["slurm_job_name"][0], response.json()
    assert not plan.workloads.exists()


def test_the_api_stores_the_pattern_stripped(manager_api):
    plan = CapacityPlanFactory()
    response = add_api(manager_api, plan, slurm_job_name="  llama-70b-*  ")
    assert response.status_code == 201, response.json()
    assert plan.workloads.get().slurm_job_name == "llama-70b-*" == response.json()["slurm_job_name"]
    # A wildcard alone is fine with an account: it narrows nothing, but matches only the account's jobs.
    assert add_api(manager_api, plan, slurm_account="vision", slurm_job_name="*").status_code == 201


def test_the_workload_form_refuses_a_blank_pattern_and_keeps_a_good_one(manager_client):
    plan = CapacityPlanFactory(status=CapacityPlan.Status.DRAFT)
    gpu = make_gpu_model().pk
    url = reverse("planning:capacityplan_workload_add", args=[plan.pk])
    body = {"name": "run", "start": f"{plan.first_month:%Y-%m}", "gpu_model": gpu, "params_billion": 7,
            "tokens_billion": 140, "precision": "bf16", "seq_len": 4096, "global_batch_tokens": 4194304,
            "checkpoint_interval_hours": 1, "pue": 1.3}
    refused = manager_client.post(url, {**body, "slurm_job_name": "   "})
    assert refused.status_code == 200
    assert refused.context["form"].errors["slurm_job_name"] == [
        "A job name pattern cannot be blank: leave it empty, or give one such as llama-70b-*."]
    assert not plan.workloads.exists()
    assert manager_client.post(url, {**body, "slurm_job_name": "llama-*"}).status_code == 302
    assert plan.workloads.get().slurm_job_name == "llama-*"


def test_add_to_plan_takes_a_pattern(fleet, manager_client):
    query = {"gpu_model": "M1", **BODY}
    manager_client.post(f"{SIZING}?{urlencode(query)}", {"plan": "", "new_plan": "P", "name": "1B",
                                                         "start": f"{next_month():%Y-%m}",
                                                         "slurm_job_name": " llama-1b-* "})
    assert PlanWorkload.objects.get(plan__name="P").slurm_job_name == "llama-1b-*"
    refused = manager_client.post(f"{SIZING}?{urlencode(query)}", {"plan": "", "new_plan": "Q", "name": "1B",
                                                                   "start": f"{next_month():%Y-%m}",
                                                                   "slurm_job_name": "*"})
    assert refused.status_code == 200
    assert "matches every job" in refused.context["add_form"].errors["slurm_job_name"][0]

