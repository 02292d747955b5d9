"""Calendar months (YYYY-MM) for a plan's first and last month and a workload's start: the forms and the API
round trips, hostile values refused with field errors and nothing saved, the schema's pattern, the analysis
placing a workload in its calendar month (page and API alike), a plan that started in the past, and the
migrations that gave existing plans and workloads their calendar months."""

import html
import json
import re
from datetime import UTC, date, datetime, timedelta
from importlib import import_module

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from inventory.models import GPUDaily, GPUModel, NodeModel
from planning.models import CapacityPlan, PlanWorkload
from planning.plans import analysis, forecast, months
from portal.roles import MANAGER
from tests.factories import make_gpu_model, make_node_model
from tests.helpers.accounts import make_user
from tests.helpers.plans import PLANS, create_plan, plan_body
from tests.planning.test_plan_analysis import node_with_gpus

pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture

TODAY = date(2026, 12, 2)
ASSUMPTIONS = {"target_utilization": 80, "build_lead_months": 9, "expand_lead_months": 4, "rent_lead_months": 1}


@pytest.fixture
def catalog(db):
    return {"node_model": make_node_model(gpu_slots=8), "gpu_model": make_gpu_model()}


@pytest.mark.parametrize("text", ["2027-13", "2027-00", "2027-1", "27-01", "next month", "2027-03-01", "", "03/2027",
                                  "1999-12", "2200-01", "２０２７-０３"])
def test_only_a_month_as_yyyy_mm_is_a_month(text):
    with pytest.raises(ValueError, match="Enter a"):
        months.parse(text)


def test_months_and_their_count():
    assert months.parse(" 2027-03 ") == date(2027, 3, 1)
    assert months.last_month(date(2027, 11, 1), 3) == date(2028, 1, 1)
    assert months.horizon(date(2027, 11, 1), date(2028, 1, 1)) == 3
    assert months.check_range(date(2027, 1, 1), date(2026, 12, 1)) == "The last month (2026-12) is before the " \
                                                                        "first (2027-01)."
    assert "121 months" in months.check_range(date(2027, 1, 1), date(2037, 1, 1))
    assert months.check_range(date(2027, 1, 1), date(2036, 12, 1)) == ""  # 120 months


# --- API ---------------------------------------------------------------------------------------------------


def test_api_round_trip_in_months(manager_api, catalog):
    plan = create_plan(manager_api, catalog)
    assert (plan["first_month"], plan["last_month"], plan["horizon_months"]) == ("2027-01", "2027-12", 12)
    assert plan["workloads"][0]["start"] == "2027-03" and "start_month" not in plan["workloads"][0]
    stored = CapacityPlan.objects.get(pk=plan["id"])
    assert (stored.first_month, stored.horizon_months) == (date(2027, 1, 1), 12)
    assert stored.workloads.get().start == date(2027, 3, 1)
    again = manager_api.get(f"{PLANS}{plan['id']}/").json()
    assert (again["first_month"], again["last_month"], again["workloads"][0]["start"]) == ("2027-01", "2027-12",
                                                                                          "2027-03")
    # A later last month lengthens the plan; the first month alone moves it and keeps its length.
    longer = manager_api.patch(f"{PLANS}{plan['id']}/", {"last_month": "2028-06"}, format="json")
    assert longer.status_code == 200 and longer.json()["horizon_months"] == 18
    moved = manager_api.patch(f"{PLANS}{plan['id']}/", {"first_month": "2027-02"}, format="json")
    assert (moved.json()["first_month"], moved.json()["last_month"], moved.json()["horizon_months"]) == (
        "2027-02", "2028-07", 18)


def test_api_old_clients_may_give_the_horizon_alone(manager_api):
    response = manager_api.post(PLANS, {"name": "old client", "first_month": "2027-04", "horizon_months": 6},
                                format="json")
    assert response.status_code == 201, response.json()
    plan = response.json()
    assert (plan["first_month"], plan["last_month"], plan["horizon_months"]) == ("2027-04", "2027-09", 6)
    same = manager_api.patch(f"{PLANS}{plan['id']}/", {"last_month": "2027-10", "horizon_months": 7}, format="json")
    assert same.status_code == 200 and same.json()["horizon_months"] == 7  # both given and agreeing: fine


def test_a_new_plan_without_months_starts_next_month(manager_api):
    response = manager_api.post(PLANS, {"name": "default"}, format="json")
    assert response.status_code == 201
    first = forecast.add_months(date.today(), 1)
    assert response.json()["first_month"] == f"{first:%Y-%m}" and response.json()["horizon_months"] == 12
    assert response.json()["last_month"] == f"{forecast.add_months(first, 11):%Y-%m}"


@pytest.mark.parametrize(("overrides", "field", "message"), [
    ({"first_month": "2027-13"}, "first_month", "Enter a month as YYYY-MM, e.g. 2027-03."),
    ({"first_month": "next month"}, "first_month", "Enter a month as YYYY-MM, e.g. 2027-03."),
    ({"first_month": 202701}, "first_month", "Enter a month as YYYY-MM, e.g. 2027-03."),
    ({"first_month": None}, "first_month", "This field may not be null."),
    ({"last_month": "2027-02-30"}, "last_month", "Enter a month as YYYY-MM, e.g. 2027-03."),
    ({"last_month": "2026-12"}, "last_month", "The last month (2026-12) is before the first (2027-01)."),
    ({"last_month": "2037-01"}, "last_month", "2027-01 to 2037-01 is 121 months; a plan covers at most 120."),
    ({"horizon_months": 5}, "horizon_months", "2027-01 to 2027-12 is 12 months, not 5: give last_month alone."),
])
def test_api_refuses_bad_months_with_field_errors(manager_api, catalog, overrides, field, message):
    response = manager_api.post(PLANS, plan_body(catalog, **overrides), format="json")
    assert response.status_code == 400
    assert response.json()[field] == [message]
    assert not CapacityPlan.objects.exists() and not PlanWorkload.objects.exists()


@pytest.mark.parametrize(("start", "message"), [
    ("2027-13", "Enter a month as YYYY-MM, e.g. 2027-03."),
    ("2026-12", "2026-12 is outside the plan's months, 2027-01 to 2027-12: choose a month in them, or change the "
                "plan's months."),
    (3, "Enter a month as YYYY-MM, e.g. 2027-03."),
])
def test_api_refuses_a_workload_start_outside_the_plan(manager_api, catalog, start, message):
    workload = plan_body(catalog)["workloads"][0] | {"start": start}
    body = plan_body(catalog, workloads=[plan_body(catalog)["workloads"][0], workload])
    response = manager_api.post(PLANS, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["workloads"] == {"1": {"start": [message]}}
    assert not CapacityPlan.objects.exists()


def test_api_cannot_shrink_a_plan_past_its_workloads(manager_api, catalog):
    plan = create_plan(manager_api, catalog)  # a workload starting 2027-03
    response = manager_api.patch(f"{PLANS}{plan['id']}/", {"first_month": "2027-04", "last_month": "2027-12"},
                                 format="json")
    assert response.status_code == 400
    assert "2027-03 is outside the plan's months, 2027-04 to 2027-12" in response.json()["workloads"]["0"]["start"][0]
    assert CapacityPlan.objects.get(pk=plan["id"]).first_month == date(2027, 1, 1)


def test_the_schema_gives_the_month_format(tmp_path):
    path = tmp_path / "schema.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(path))
    schemas = json.loads(path.read_text())["components"]["schemas"]
    for schema, field in [("CapacityPlan", "first_month"), ("CapacityPlan", "last_month"), ("PlanWorkload", "start"),
                          ("AnalysisMonth", "month"), ("WorkloadDemand", "start"), ("Scenario", "met_from_month")]:
        prop = schemas[schema]["properties"][field]
        assert prop["type"] == "string" and prop["pattern"] == months.PATTERN, (schema, field)
    assert "start_month" not in schemas["PlanWorkload"]["properties"]
    assert "alone" in schemas["CapacityPlan"]["properties"]["horizon_months"]["description"]


# --- pages -------------------------------------------------------------------------------------------------


def edit_url(plan):
    return f"/planning/capacity-plans/{plan.pk}/edit/"


def test_plan_form_round_trip_in_months(manager_client):
    form = manager_client.get("/planning/capacity-plans/add/").content.decode()
    first = forecast.add_months(date.today(), 1)
    assert re.search(rf'type="month" name="first_month" value="{first:%Y-%m}"', form)
    assert re.search(rf'type="month" name="last_month" value="{forecast.add_months(first, 11):%Y-%m}"', form)
    assert 'name="horizon_months"' in form and 'type="hidden" name="horizon_months"' in form
    response = manager_client.post("/planning/capacity-plans/add/", {
        "name": "2027", "first_month": "2027-03", "last_month": "2028-02", **ASSUMPTIONS})
    assert response.status_code == 302
    plan = CapacityPlan.objects.get(name="2027")
    assert (plan.first_month, plan.horizon_months, plan.last_month) == (date(2027, 3, 1), 12, date(2028, 2, 1))
    form = manager_client.get(edit_url(plan)).content.decode()
    assert 'value="2027-03"' in form and 'value="2028-02"' in form
    page = manager_client.get(plan.get_absolute_url()).content.decode()
    assert "<th>Months</th><td>2027-03 to 2028-02 (12 months)</td>" in page
    listing = manager_client.get("/planning/capacity-plans/").content.decode()
    assert "2027-03 to 2028-02" in listing


@pytest.mark.parametrize(("first", "last", "message"), [
    ("2027-03", "2027-01", "The last month (2027-01) is before the first (2027-03)."),
    ("2027-01", "2037-01", "2027-01 to 2037-01 is 121 months; a plan covers at most 120."),
    ("2027-13", "2027-12", "Enter a month as YYYY-MM, e.g. 2027-03."),
    ("next month", "2027-12", "Enter a month as YYYY-MM, e.g. 2027-03."),
    ("2027-01", "", "This field is required."),
])
def test_plan_form_refuses_bad_months_and_saves_nothing(manager_client, first, last, message):
    response = manager_client.post("/planning/capacity-plans/add/", {
        "name": "2027", "first_month": first, "last_month": last, **ASSUMPTIONS})
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert message in page and page.count(message) == 1
    assert f'value="{first}"' in page  # what was typed is kept
    assert not CapacityPlan.objects.exists()


def test_plan_form_keeps_the_workloads_inside_the_months(manager_client, manager):
    plan = CapacityPlan.objects.create(name="2027", first_month=date(2027, 1, 1), horizon_months=12, owner=manager)
    PlanWorkload.objects.create(plan=plan, name="70B", start=date(2027, 10, 1), gpu_model=make_gpu_model(),
                                inputs={"params_billion": 70, "tokens_billion": 2000})
    values = {"name": "2027", "first_month": "2027-01", "last_month": "2027-06", **ASSUMPTIONS}
    response = manager_client.post(edit_url(plan), values)
    assert response.status_code == 200
    assert "Workloads start outside 2027-01 to 2027-06: 70B (2027-10)." in html.unescape(response.content.decode())
    plan.refresh_from_db()
    assert plan.horizon_months == 12


@pytest.mark.django_db(transaction=True)
def test_a_manager_sets_the_months_in_a_browser(browser_page):
    """Chromium's month inputs: a last month before the first is refused in place, then the plan is saved with
    its months and its page shows them."""
    session, page = browser_page, browser_page.page
    user = make_user("max", MANAGER)
    page.goto("/accounts/login/?next=/planning/capacity-plans/add/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", "pw-max")
    page.get_by_role("button", name="Log in").click()
    page.locator("#id_name").fill("2027 roadmap")
    page.locator("#id_first_month").fill("2027-03")
    page.locator("#id_last_month").fill("2027-01")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("The last month (2027-01) is before the first (2027-03).").wait_for()
    assert page.locator("#id_first_month").input_value() == "2027-03"  # what was entered is kept
    page.locator("#id_last_month").fill("2028-02")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("2027-03 to 2028-02 (12 months)").wait_for()
    plan = CapacityPlan.objects.get(name="2027 roadmap")
    assert (plan.first_month, plan.horizon_months) == (date(2027, 3, 1), 12)
    session.assert_clean()


# --- the analysis --------------------------------------------------------------------------------------------


def test_a_workload_counts_from_its_calendar_month(viewer_api, manager_client):
    plan = CapacityPlan.objects.create(name="2027", first_month=date(2027, 1, 1), horizon_months=12)
    PlanWorkload.objects.create(plan=plan, name="70B", start=date(2027, 5, 1),
                                gpu_model=GPUModel.objects.get(name="H100 SXM 80GB"),
                                inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 256, "mfu": 0.4,
                                        "goodput": 1})
    node_with_gpus(node_model=NodeModel.objects.get(name="DGX H100"))
    an = analysis.analyse(plan, today=TODAY)
    [workload] = an.workloads
    # 589,583 GPU-hours over 4 months from May 2027: May to August, nothing before or after.
    assert (workload.start, workload.index, workload.months) == (date(2027, 5, 1), 4, 4)
    planned = {f"{month:%Y-%m}": hours for month, _, hours, *_ in an.rows}
    assert [m for m, hours in planned.items() if hours] == ["2027-05", "2027-06", "2027-07", "2027-08"]
    assert planned["2027-05"] == pytest.approx(8.4e23 / (989.4e12 * 0.40) / 3600 / 4)

    data = viewer_api.get(f"{PLANS}{plan.pk}/analysis/").json()
    assert data["workloads"][0]["start"] == "2027-05"
    assert [m["month"] for m in data["months"] if m["workload_gpu_hours"]] == ["2027-05", "2027-06", "2027-07",
                                                                                "2027-08"]
    page = manager_client.get(f"/planning/capacity-plans/{plan.pk}/analysis/").content.decode()
    for month in data["months"]:  # the page's month-by-month rows carry the API's figures
        row = re.search(rf"<tr><td>{month['month']} <small[^>]*>[^<]*</small></td>(.*?)</tr>", page).group(1)
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        assert cells[1] == f"{month['workload_gpu_hours']:,.0f}" and cells[2] == f"{month['demand_gpu_hours']:,.0f}"
    for scenario in data["scenarios"]:
        if scenario["met_from_month"]:
            assert re.fullmatch(months.PATTERN, scenario["met_from_month"])
            assert scenario["met_from_month"] in page
    assert "Scenarios over 12 months, 2027-01 to 2027-12" in page
    for chart in ("plan-capacity-chart", "plan-cost-chart"):  # the charts' x axes: the same months
        found = re.search(rf'<script id="{chart}" type="application/json">(.*?)</script>', page)
        assert json.loads(found.group(1))["x"] == [m["month"] for m in data["months"]]


def test_the_forecast_follows_the_calendar():
    # Eight months of a rising history: a plan from March gives March the same forecast as a plan from January.
    history = [(date(2026, 3 + i, 1), 1000.0 + 100 * i + (15 if i % 2 else -15)) for i in range(8)]  # to 2026-10
    from_january = forecast.forecast(history, date(2027, 1, 1), 6)
    from_march = forecast.forecast(history, date(2027, 3, 1), 4)
    assert from_march.mean == pytest.approx(from_january.mean[2:])
    assert from_january.mean[0] < from_january.mean[5]  # the trend goes on
    # A plan from July 2026, inside the history: its months up to the history's end are forecast as today (the
    # first month after the history); later months step on from there.
    from_july = forecast.forecast(history, date(2026, 7, 1), 8)
    next_month = forecast.forecast(history, date(2026, 11, 1), 4)
    assert from_july.mean[:5] == pytest.approx([next_month.mean[0]] * 5)
    assert from_july.mean[4:] == pytest.approx(next_month.mean)


def test_a_plan_that_started_in_the_past_says_so(db):
    gpus = node_with_gpus(node_model=NodeModel.objects.get(name="DGX H100")).gpus.all()
    days = [date(2026, 9, 1) + timedelta(days=i) for i in range(91)]
    GPUDaily.objects.bulk_create([GPUDaily(gpu=g, day=d, hours=24, util_mean=50.0) for g in gpus for d in days])
    plan = CapacityPlan.objects.create(name="2026", first_month=date(2026, 10, 1), horizon_months=6)
    an = analysis.analyse(plan, today=TODAY)
    assert [f"{m:%Y-%m}" for m in an.months] == ["2026-10", "2026-11", "2026-12", "2027-01", "2027-02", "2027-03"]
    assert an.forecast.mean == pytest.approx([4 * 730] * 6)  # 4 busy GPUs in every month, the past ones too
    assert any(note.startswith("The plan started in 2026-10, before this month") for note in an.notes)
    current = CapacityPlan.objects.create(name="2026-12", first_month=date(2026, 12, 1), horizon_months=6)
    assert not any("started in" in note for note in analysis.analyse(current, today=TODAY).notes)


# --- the migrations ------------------------------------------------------------------------------------------

BEFORE = ("planning", "0008_plan_calendar_scope_summary")
AFTER = ("planning", "0009_workload_calendar_start")


@pytest.mark.django_db(transaction=True)
def test_the_migrations_give_plans_and_workloads_calendar_months():
    """0008's data step: a plan made on 2026-03-15 starts in 2026-04 and its workload in month 3 starts in 2026-06.
    0009 fills a start still missing (a workload saved with bulk_create, a history record from before 0008)
    before it makes the start required, and drops start_month."""
    gpu = make_gpu_model()
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    try:
        old = MigrationExecutor(connection).loader.project_state([BEFORE]).apps
        Plan, Workload = old.get_model("planning", "CapacityPlan"), old.get_model("planning", "PlanWorkload")
        History = old.get_model("planning", "HistoricalPlanWorkload")
        plan = Plan.objects.create(name="old", horizon_months=12)
        Plan.objects.filter(pk=plan.pk).update(created=datetime(2026, 3, 15, 10, tzinfo=UTC))
        workload = Workload.objects.create(plan=plan, name="70B", start_month=3, gpu_model_id=gpu.pk, inputs={})
        import_module("planning.migrations.0008_plan_calendar_scope_summary").calendar_months(old, None)
        plan.refresh_from_db()
        workload.refresh_from_db()
        assert (plan.first_month, workload.start) == (date(2026, 4, 1), date(2026, 6, 1))

        Workload.objects.filter(pk=workload.pk).update(start=None, start_month=5)
        History.objects.create(id=workload.pk, plan_id=plan.pk, name="70B", start_month=2, gpu_model_id=gpu.pk,
                               inputs={}, history_date=datetime(2026, 3, 20, tzinfo=UTC), history_type="+")
        MigrationExecutor(connection).migrate([AFTER])
        # The models as of 0009 (today's have fields that later migrations add).
        new = MigrationExecutor(connection).loader.project_state([AFTER]).apps
        assert new.get_model("planning", "PlanWorkload").objects.get(pk=workload.pk).start == date(2026, 8, 1)
        assert new.get_model("planning", "HistoricalPlanWorkload").objects.get().start == date(2026, 5, 1)
        assert "start_month" not in {c.name for c in connection.introspection.get_table_description(
            connection.cursor(), PlanWorkload._meta.db_table)}

        MigrationExecutor(connection).migrate([BEFORE])  # and back: the start month from the start
        assert Workload.objects.get(pk=workload.pk).start_month == 5
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
