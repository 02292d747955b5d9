"""One flow (issue 18): the sizing page's "Add to plan" carries every input into a draft plan (page and API); the plan
page leads with the answer; the plan list shows each plan's answer from its stored summary, refreshed by a task
when the plan changes and flagged when it is stale; the sizing page's default GPU model when a URL leaves it out."""

import re
from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.template.defaultfilters import floatformat
from django.urls import reverse

from inventory.models import GPUModel, LifecycleState
from planning.models import CapacityPlan, PlanItem, PlanWorkload
from planning.plans import analysis, summary, tasks
from planning.plans import workflow as plans
from planning.plans.forecast import add_months
from planning.plans.forms import PlanWorkloadForm
from portal.roles import MANAGER
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db

pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture, for the journey at the end

H100 = "H100 SXM 80GB"
SIZING = reverse("planning:sizing")
PLANS_API = "/api/planning/plans/"
# A sizing with optional inputs set, one of them to its default (a plan follows the defaults it did not override).
QUERY = {"params_billion": "70", "tokens_billion": "2000", "gpu_model": H100, "num_gpus": "256", "mfu": "0.4",
         "goodput": "1", "precision": "fp8", "seq_len": "4096", "deadline_days": "200"}
INPUTS = {"params_billion": 70.0, "tokens_billion": 2000.0, "num_gpus": 256, "mfu": 0.4, "goodput": 1.0,
          "precision": "fp8", "deadline_days": 200.0}


def h100():
    """The catalog's H100 (a transactional test before this one may have flushed the catalog: then made again)."""
    return GPUModel.objects.filter(name=H100).first() or make_gpu_model(name=H100, bf16_tflops=Decimal("989.4"))


def sizing_url(query=QUERY):
    from django.utils.http import urlencode

    return f"{SIZING}?{urlencode(query)}"


@pytest.fixture
def fleet():
    """16 H100 in service at one site: far too few for a 256-GPU run, so the analysis recommends capacity."""
    node_model = make_node_model(gpu_slots=8)
    site = make_site()
    for _ in range(2):
        node = make_node(site=site, node_model=node_model)
        for _ in range(8):
            make_gpu(node=node, gpu_model=h100(), state=LifecycleState.IN_SERVICE)
    return node_model


def draft(name="2027 expansion", **kw):
    return CapacityPlan.objects.create(name=name, node_price=Decimal("300000"),
                                       rental_gpu_hour_cost=Decimal("2.50"), **kw)


def month(day):
    return f"{day:%Y-%m}"


def submit(plan, user):
    PlanItem.objects.create(plan=plan, description="400G switches", quantity=2, unit_cost=Decimal("40000"))
    plans.submit(plan, user, "")


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


# --- Add to plan from the sizing page ------------------------------------------------------------------------


def test_add_to_plan_carries_every_input_as_the_workload_form_would(manager_client, manager):
    plan = draft()
    page = manager_client.get(sizing_url())
    form = page.context["add_form"]
    assert form.fields["name"].initial == f"70B × 2000B tokens on {H100}"
    assert 'id="add-to-plan-form"' in page.content.decode() and plan.name in page.content.decode()

    start = add_months(plan.first_month, 2)
    response = manager_client.post(sizing_url(), {"plan": plan.pk, "name": "70B fp8", "start": month(start),
                                                  "slurm_account": "llm-team"})
    assert response.status_code == 302 and response.url == f"{plan.get_absolute_url()}#workloads"
    assert f"Added workload 70B fp8 to {plan.name}, from {month(start)}." in messages_of(response)
    workload = PlanWorkload.objects.get(plan=plan)
    assert (workload.name, workload.gpu_model.name, workload.slurm_account) == ("70B fp8", H100, "llm-team")
    assert workload.start == start
    assert workload.inputs == INPUTS
    # The plan's own workload form, given the same inputs, stores the same dict.
    fields = {k: v for k, v in QUERY.items() if k != "gpu_model"}
    same = PlanWorkloadForm({"name": "x", "start": month(start), "gpu_model": workload.gpu_model.pk, **fields},
                            instance=PlanWorkload(plan=plan))
    assert same.is_valid(), same.errors
    assert same.instance.inputs == workload.inputs
    # The plan page sizes it as the sizing page did.
    rows = manager_client.get(plan.get_absolute_url()).context["workloads"]
    assert rows[0].sizing_url.startswith(SIZING) and rows[0].gpu_hours > 0


def test_add_to_a_new_plan_creates_it_as_a_draft_owned_by_the_user(manager_client, manager):
    response = manager_client.post(sizing_url(), {"plan": "", "new_plan": " Sized in 2027 ", "name": "70B",
                                                  "start": month(add_months(CapacityPlan().first_month, 11))})
    plan = CapacityPlan.objects.get(name="Sized in 2027")
    assert response.status_code == 302 and response.url.startswith(plan.get_absolute_url())
    assert plan.is_draft and plan.owner == manager
    assert plan.workloads.get().start == plan.last_month


@pytest.mark.parametrize("case, post, error", [
    ("submitted", {"name": "70B"}, "The plan is submitted; only a draft plan can be changed."),
    ("taken", {"plan": "", "new_plan": "2027 expansion", "name": "70B"},
     "A plan named 2027 expansion exists already"),
    ("outside", {"name": "70B", "start": "2099-01"}, "2099-01 is outside the plan&#x27;s months"),
    ("neither", {"plan": "", "name": "70B"}, "Choose a draft plan, or name a new plan."),
    ("both", {"new_plan": "Another", "name": "70B"}, "Choose a draft plan or name a new one, not both."),
    ("bad month", {"name": "70B", "start": "next spring"}, "YYYY-MM"),
])
def test_a_refused_add_shows_the_result_with_the_error_and_keeps_the_inputs(manager_client, manager, case, post,
                                                                            error):
    plan = draft()
    if case == "submitted":
        PlanWorkload.objects.create(plan=plan, name="base", start=plan.first_month, gpu_model=h100(),
                                    inputs={"params_billion": 7, "tokens_billion": 140})
        submit(plan, manager)
    body = {"plan": plan.pk, "start": month(plan.first_month), "slurm_account": "llm-team", **post}
    response = manager_client.post(sizing_url(), body)
    assert response.status_code == 200
    page = response.content.decode()
    assert error in page
    assert 'id="sizing-result"' in page  # the result stays
    assert 'value="llm-team"' in page and 'name="params_billion" value="70"' in page  # nothing to retype
    assert not PlanWorkload.objects.filter(name="70B").exists()
    assert CapacityPlan.objects.count() == 1


def test_viewers_do_not_see_add_to_plan_and_cannot_post_it(viewer_client):
    plan = draft()
    page = viewer_client.get(sizing_url())
    assert page.status_code == 200 and "add_form" not in page.context
    assert 'id="add-to-plan' not in page.content.decode()
    response = viewer_client.post(sizing_url(), {"plan": plan.pk, "name": "70B", "start": month(plan.first_month)})
    assert response.status_code == 403
    assert not PlanWorkload.objects.exists()


def test_api_adds_a_workload_to_a_draft_plan_in_one_call(manager_api, viewer_api, manager):
    plan = draft()
    gpu = h100()
    body = {"name": "70B fp8", "start": month(add_months(plan.first_month, 2)), "gpu_model": gpu.pk, "inputs": INPUTS}
    assert viewer_api.post(f"{PLANS_API}{plan.pk}/workloads/", body, format="json").status_code == 403
    response = manager_api.post(f"{PLANS_API}{plan.pk}/workloads/", body, format="json")
    assert response.status_code == 201, response.data
    assert response.data["gpu_hours"] > 0 and response.data["inputs"] == INPUTS
    workload = plan.workloads.get()
    assert (workload.inputs, workload.start) == (INPUTS, add_months(plan.first_month, 2))
    again = manager_api.post(f"{PLANS_API}{plan.pk}/workloads/", {**body, "name": "second"}, format="json")
    assert again.status_code == 201 and plan.workloads.count() == 2  # added, the others stay

    after = month(add_months(plan.last_month, 1))
    beyond = manager_api.post(f"{PLANS_API}{plan.pk}/workloads/", {**body, "start": after}, format="json")
    assert beyond.status_code == 400 and "outside the plan's months" in str(beyond.data["start"])
    bad = manager_api.post(f"{PLANS_API}{plan.pk}/workloads/", {**body, "inputs": {"params_billion": 70}},
                           format="json")
    assert bad.status_code == 400 and "tokens_billion" in str(bad.data["inputs"])
    submit(plan, manager)
    refused = manager_api.post(f"{PLANS_API}{plan.pk}/workloads/", body, format="json")
    assert refused.status_code == 400 and "only a draft plan" in refused.data["detail"]
    assert plan.workloads.count() == 2


# --- the answer: plan page, list and API agree -----------------------------------------------------------------


def plan_with_need(name="2027 expansion"):
    plan = draft(name)
    PlanWorkload.objects.create(plan=plan, name="70B", start=add_months(plan.first_month, 5), gpu_model=h100(),
                                inputs=INPUTS)
    return plan


def analysis_part(client, plan):
    return client.get(reverse("planning:capacityplan_analysis", args=[plan.pk]), HTTP_HX_REQUEST="true")


def test_the_plan_page_leads_with_the_answer_the_analysis_and_api_agree(manager_client, manager_api, fleet):
    plan = plan_with_need()
    page = manager_client.get(plan.get_absolute_url()).content.decode()
    answer_at = page.index('id="plan-answer"')
    assert answer_at < page.index('id="workloads"') < page.index('id="bill-of-materials"')
    assert answer_at < page.index('class="fields"')  # above the plan's own inputs too
    assert 'hx-indicator="#plan-answer-progress"' in page and 'id="plan-answer-progress"' in page

    part = analysis_part(manager_client, plan).content.decode()
    answer = re.search(r'<section [^>]*id="plan-answer" hx-swap-oob="true".*?</section>', part, re.S).group(0)
    body = manager_api.get(f"{PLANS_API}{plan.pk}/analysis/").json()
    kind = body["recommendation"]["kind"]
    assert kind, body["recommendation"]
    best = next(s for s in body["scenarios"] if s["kind"] == kind)
    assert f"Recommended: {best['label'].lower()}" in answer
    assert f'id="answer-gpus">{floatformat(max(best["added_gpus"]), "0g")}<' in answer
    assert f'id="answer-cost">{floatformat(best["total_cost"], "0g")} USD<' in answer
    met = best["met_from_month"] or "not met"
    assert f'id="answer-met">{met}<' in answer
    # The same figures in the scenarios table of the analysis.
    assert f'<strong>{floatformat(best["total_cost"], "0g")}</strong>' in part
    # The standalone analysis page leads with the answer too (not out of band).
    whole = manager_client.get(reverse("planning:capacityplan_analysis", args=[plan.pk])).content.decode()
    assert whole.index('id="plan-answer"') < whole.index('id="scenarios"') and "hx-swap-oob" not in whole


def test_the_list_and_the_api_show_the_stored_answer_in_constant_queries(manager_client, manager_api, fleet,
                                                                         django_assert_max_num_queries, monkeypatch):
    first = plan_with_need()
    body = manager_api.get(f"{PLANS_API}{first.pk}/analysis/").json()  # the API's analysis stores the summary
    first.refresh_from_db()
    best = next(s for s in body["scenarios"] if s["kind"] == body["recommendation"]["kind"])
    assert first.summary["recommended"] == best["kind"]
    assert first.summary["cost"] == pytest.approx(best["total_cost"], abs=0.01)
    assert first.summary["gpus_added"] == round(max(best["added_gpus"]))
    assert first.summary["met_from"] == best["met_from_month"]
    assert not summary.is_stale(first)

    def no_forecast(*args, **kwargs):
        raise AssertionError("the list ran the analysis")

    monkeypatch.setattr(analysis, "analyse", no_forecast)
    monkeypatch.setattr(summary, "analyse", no_forecast)
    with django_assert_max_num_queries(12) as one:
        page = manager_client.get("/planning/capacity-plans/")
    queries = len(one)
    row = page.context["table"].rows[0]
    assert row.get_cell("recommended") == best["label"]
    assert row.get_cell("gpus_added") == floatformat(first.summary["gpus_added"], "0g")
    assert row.get_cell("cost") == floatformat(first.summary["cost"], "0g")
    assert row.get_cell("analysed").startswith("as of ") and "changed since" not in row.get_cell("analysed")
    api_row = manager_api.get(PLANS_API).json()["results"][0]
    assert api_row["summary"] == first.summary and api_row["summary_stale"] is False

    for n in range(5):
        plan_with_need(f"plan {n}")
    with django_assert_max_num_queries(queries):
        page = manager_client.get("/planning/capacity-plans/")
    assert [r.get_cell("analysed") for r in page.context["table"].rows].count("not analysed yet") == 5
    summaries = {p["name"]: p["summary"] for p in manager_api.get(PLANS_API).json()["results"]}
    assert summaries == {first.name: first.summary, **{f"plan {n}": None for n in range(5)}}


def test_an_edit_flags_the_summary_stale_and_the_task_refreshes_it(manager_client, fleet, monkeypatch,
                                                                 django_capture_on_commit_callbacks):
    plan = plan_with_need()
    analysis_part(manager_client, plan)  # the plan page's analysis stores the summary
    plan.refresh_from_db()
    before = dict(plan.summary)
    etag = manager_client.get(f"{PLANS_API}{plan.pk}/")["ETag"]

    queued = []
    monkeypatch.setattr(tasks.refresh_plan_summary, "delay", queued.append)
    workload = plan.workloads.get()
    with django_capture_on_commit_callbacks(execute=True):
        response = manager_client.post(reverse("planning:capacityplan_workload_edit", args=[plan.pk, workload.pk]), {
            "name": "70B", "start": month(workload.start), "gpu_model": workload.gpu_model.pk,
            **{**INPUTS, "num_gpus": 512, "deadline_days": ""}})
    assert response.status_code == 302
    assert queued == [plan.pk]
    plan.refresh_from_db()
    assert summary.is_stale(plan)
    assert manager_client.get(f"{PLANS_API}{plan.pk}/")["ETag"] != etag  # the plan's workloads changed
    row = manager_client.get("/planning/capacity-plans/").context["table"].rows[0]
    assert row.get_cell("analysed").endswith(", changed since")

    assert tasks.refresh_plan_summary(plan.pk) is True  # what the worker runs
    plan.refresh_from_db()
    assert not summary.is_stale(plan)
    assert plan.summary["gpus_added"] != before["gpus_added"]  # the 512-GPU run needs more
    assert plan.summary == manager_client.get(f"{PLANS_API}{plan.pk}/").json()["summary"]
    assert tasks.refresh_plan_summary(plan.pk) is False  # queued again by the same change: nothing to do
    tag = manager_client.get(f"{PLANS_API}{plan.pk}/")["ETag"]
    analysis_part(manager_client, plan)  # a refresh of the summary is no edit: the ETag stays
    assert manager_client.get(f"{PLANS_API}{plan.pk}/")["ETag"] == tag


def test_every_kind_of_edit_queues_a_refresh_once_committed(manager_client, manager_api, monkeypatch,
                                                             django_capture_on_commit_callbacks):
    plan = plan_with_need()
    queued = []
    monkeypatch.setattr(tasks.refresh_plan_summary, "delay", queued.append)
    edits = [
        lambda: manager_api.patch(f"{PLANS_API}{plan.pk}/", {"horizon_months": 18}, format="json"),  # the plan
        lambda: manager_api.patch(f"{PLANS_API}{plan.pk}/", {"workloads": []}, format="json"),  # its workloads
        lambda: manager_api.post(f"{PLANS_API}{plan.pk}/workloads/", {  # a workload added
            "name": "7B", "start": month(plan.first_month), "gpu_model": h100().pk,
            "inputs": {"params_billion": 7, "tokens_billion": 140}}, format="json"),
        lambda: manager_client.post(reverse("planning:capacityplan_item_add", args=[plan.pk]), {  # a BOM line
            "description": "400G switches", "quantity": 2, "unit_cost": "40000", "currency": "USD"}),
    ]
    for edit in edits:
        queued.clear()
        with django_capture_on_commit_callbacks(execute=True):
            assert edit().status_code in (200, 201, 302)
        assert set(queued) == {plan.pk}


def test_a_plan_without_need_says_so_and_costs_nothing(manager_client, fleet):
    plan = draft()
    part = analysis_part(manager_client, plan).content.decode()
    assert "No new capacity needed within the horizon" in part
    plan.refresh_from_db()
    assert plan.summary["recommended"] is None and plan.summary["needed"] is False
    assert plan.summary["cost"] is None and plan.summary["gpus_added"] == 0
    row = manager_client.get("/planning/capacity-plans/").context["table"].rows[0]
    assert (row.get_cell("recommended"), row.get_cell("cost")) == ("none needed", "—")


# --- the sizing page's default GPU model -------------------------------------------------------------------------


def test_a_url_without_gpu_model_sizes_on_the_fleets_most_common(viewer_client, fleet):
    response = viewer_client.get(SIZING, {"params_billion": 7, "tokens_billion": 140})
    html = response.content.decode()
    select = re.search(r'<select name="gpu_model".*?</select>', html, re.S).group(0)
    assert re.findall(r'<option value="([^"]*)" selected>', select) == [H100]
    assert not response.context["form"].errors and 'id="sizing-result"' in html


# --- in a browser: sizing → add to plan → the plan page's answer and analysis → the list -------------------------


@pytest.mark.django_db(transaction=True)
def test_journey_sizing_to_plan_to_the_answer(browser_page, fleet, monkeypatch):
    from playwright.sync_api import expect

    from tests.planning.test_journeys_planning import ANALYSIS_TIMEOUT_MS, analysis_loaded, assert_clean, log_in

    session, page = browser_page, browser_page.page
    make_user("max", MANAGER)
    plan = draft()
    # The worker, in-process: the refresh queued on commit runs at once.
    monkeypatch.setattr(tasks.refresh_plan_summary, "delay", tasks.refresh_plan_summary)

    log_in(page, "max", SIZING)
    form = page.locator("#sizing-form")
    form.locator("#id_params_billion").fill("70")
    form.locator("#id_tokens_billion").fill("2000")
    form.locator("#id_gpu_model").select_option(H100)
    form.locator("#id_num_gpus").fill("256")
    form.get_by_role("button", name="Size").click()
    page.wait_for_load_state()
    add = page.locator("#add-to-plan-form")
    expect(add.locator("#id_name")).to_have_value(f"70B × 2000B tokens on {H100}")
    add.locator("#id_plan").select_option(label=plan.name)
    start = add_months(plan.first_month, 2)
    add.locator("#id_start").fill(month(start))
    session.screenshot("flow-01-sizing-add-to-plan")
    with page.expect_navigation(url=re.compile(rf"/planning/capacity-plans/{plan.pk}/")):
        add.get_by_role("button", name="Add to plan").click()
    expect(page.locator(".messages")).to_contain_text(f"Added workload 70B × 2000B tokens on {H100}")
    workload = plan.workloads.get()
    assert (workload.start, workload.inputs) == (start, {"params_billion": 70.0, "tokens_billion": 2000.0,
                                                         "num_gpus": 256})

    # The answer loads with the analysis and leads the page, above the workloads.
    page.locator("#plan-answer #answer-option").wait_for(timeout=ANALYSIS_TIMEOUT_MS)
    analysis_loaded(page)
    expect(page.locator("#answer-option")).to_contain_text("Recommended:")
    boxes = {name: page.locator(f"#{name}").bounding_box() for name in ("plan-answer", "workloads", "scenarios")}
    assert boxes["plan-answer"]["y"] < boxes["workloads"]["y"] < boxes["scenarios"]["y"]
    body = page.request.get(f"/api/planning/plans/{plan.pk}/analysis/",
                            headers={"Accept": "application/json"}).json()
    [demand] = body["workloads"]
    assert demand["gpu_hours"] > 0 and not demand["error"]
    planned = [m["workload_gpu_hours"] for m in body["months"]]
    assert planned[:2] == [0, 0] and planned[2] > 0  # from the start month chosen on the sizing page
    best = next(s for s in body["scenarios"] if s["kind"] == body["recommendation"]["kind"])
    expect(page.locator("#answer-gpus")).to_have_text(floatformat(max(best["added_gpus"]), "0g"))
    expect(page.locator("#answer-cost")).to_have_text(f'{floatformat(best["total_cost"], "0g")} USD')
    session.screenshot("flow-02-plan-answer")

    # The list shows the same answer, refreshed after the change.
    page.goto("/planning/capacity-plans/")
    row = page.locator("#object-table tbody tr", has_text=plan.name)
    expect(row).to_contain_text(best["label"])
    expect(row).to_contain_text(floatformat(best["total_cost"], "0g"))
    expect(row).not_to_contain_text("changed since")
    assert_clean(session)
