"""Capacity plan pages: list and detail for a viewer, the workflow buttons (a second manager approves), the
refusals shown as messages, permissions, constant queries on the plan page, and the workloads and
bill-of-materials lines edited on the plan page (plain forms and htmx) while the plan is a draft."""

import re
from datetime import date
from decimal import Decimal

import pytest
from django.contrib.messages import get_messages

from planning.models import CapacityPlan, PlanEvent, PlanItem, PlanWorkload
from planning.plans import workflow as plans
from planning.sizing import sizing
from portal.roles import MANAGER
from tests.factories import make_gpu_model, make_node_model
from tests.helpers.accounts import make_user

pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture, for the end-to-end test at the end


def make_plan(owner=None, name="2027 expansion", workloads=True):
    plan = CapacityPlan.objects.create(name=name, description="More GPUs", first_month=date(2027, 1, 1),
                                       horizon_months=12, owner=owner)
    gpu = make_gpu_model() if workloads else None
    if workloads:
        PlanWorkload.objects.create(plan=plan, name="70B pretraining", start=date(2027, 3, 1), gpu_model=gpu,
                                    inputs={"params_billion": 70, "tokens_billion": 2000, "num_gpus": 512})
        PlanItem.objects.create(plan=plan, node_model=make_node_model(gpu_slots=8), quantity=4,
                                unit_cost=Decimal("250000.00"))
        PlanItem.objects.create(plan=plan, gpu_model=gpu, quantity=32, unit_cost=Decimal("30000.00"))
        PlanItem.objects.create(plan=plan, description="400G switches", quantity=2, unit_cost=Decimal("40000.00"),
                                currency="EUR")
    return plan


def url(plan, action=""):
    return f"/planning/capacity-plans/{plan.pk}/{action + '/' if action else ''}"


@pytest.fixture
def second_client(db):
    from django.test import Client

    other = Client()
    other.force_login(make_user("mia", MANAGER))
    return other


def test_list_and_detail_render_for_a_viewer(viewer_client, manager):
    plan = make_plan(owner=manager)
    plans.submit(plan, manager, "please review")
    response = viewer_client.get("/planning/capacity-plans/")
    assert response.status_code == 200
    assert "2027 expansion" in response.content.decode()
    assert viewer_client.get("/planning/capacity-plans/?status=submitted&q=2027").context["table"].rows[0]
    assert not viewer_client.get("/planning/capacity-plans/?status=draft").context["table"].rows
    response = viewer_client.get(url(plan))
    assert response.status_code == 200
    page = response.content.decode()
    assert "70B pretraining" in page and "400G switches" in page
    assert "1,960,000.00" in page  # USD grand total: 4 × 250,000 + 32 × 30,000
    assert "80,000.00" in page  # EUR grand total
    assert "please review" in page and "max" in page
    assert response.context["workloads"][0].gpu_hours > 0
    assert response.context["actions"] == []  # a viewer gets no buttons
    assert "Capacity plans" in page  # the nav entry


def test_submit_then_a_second_manager_approves(manager_client, manager, second_client):
    plan = make_plan(owner=manager)
    page = manager_client.get(url(plan)).content.decode()
    assert url(plan, "submit") in page
    response = manager_client.post(url(plan, "submit"), {"comment": "ready"})
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.status == "submitted" and plan.submitted_by == manager

    page = manager_client.get(url(plan)).content.decode()
    assert url(plan, "approve") not in page and ">Approve<" not in page
    response = manager_client.post(url(plan, "approve"), {"comment": "self"}, follow=True)
    assert "you submitted this plan" in " ".join(str(m) for m in response.context["messages"])
    plan.refresh_from_db()
    assert plan.status == "submitted"

    assert url(plan, "approve") in second_client.get(url(plan)).content.decode()
    response = second_client.post(url(plan, "approve"), {"comment": "go ahead"})
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.status == "approved" and plan.decided_by.username == "mia"
    events = list(PlanEvent.objects.filter(plan=plan).values_list("username", "from_status", "to_status", "comment"))
    assert events == [("max", "draft", "submitted", "ready"), ("mia", "submitted", "approved", "go ahead")]


def test_refusals_are_messages(manager_client, manager, second_client):
    plan = make_plan(owner=manager, workloads=False)
    response = manager_client.post(url(plan, "submit"), {"comment": ""})
    assert "at least one bill-of-materials line" in " ".join(m.message for m in get_messages(response.wsgi_request))
    plan = make_plan(owner=manager, name="other")
    plans.submit(plan, manager)
    response = second_client.post(url(plan, "reject"), {"comment": ""}, follow=True)
    assert "Say why" in response.content.decode()
    second_client.post(url(plan, "reject"), {"comment": "too much"})
    plan.refresh_from_db()
    assert plan.status == "rejected"
    assert url(plan, "reopen") in manager_client.get(url(plan)).content.decode()
    manager_client.post(url(plan, "reopen"))
    plan.refresh_from_db()
    assert plan.status == "draft"


# The scenario assumptions with defaults, as the plan form posts them.
ASSUMPTIONS = {"target_utilization": 80, "build_lead_months": 9, "expand_lead_months": 4, "rent_lead_months": 1}


def test_edit_only_while_draft(manager_client, manager):
    response = manager_client.post("/planning/capacity-plans/add/", {
        "name": "New plan", "first_month": "2027-01", "last_month": "2028-12", **ASSUMPTIONS})
    plan = CapacityPlan.objects.get(name="New plan")
    assert response.status_code == 302 and plan.owner == manager and plan.status == "draft"
    assert (plan.first_month, plan.horizon_months) == (date(2027, 1, 1), 24)
    assert manager_client.post(url(plan, "edit"), {"name": "Renamed", "first_month": "2027-01",
                                                   "last_month": "2027-06", **ASSUMPTIONS}).status_code == 302
    plan.refresh_from_db()
    assert plan.name == "Renamed"
    plan = make_plan(owner=manager)
    plans.submit(plan, manager)
    response = manager_client.post(url(plan, "edit"), {"name": "Changed", "first_month": "2027-01",
                                                       "last_month": "2027-06", **ASSUMPTIONS},
                                   follow=True)
    assert "only a draft plan can be changed" in response.content.decode()
    plan.refresh_from_db()
    assert plan.name == "2027 expansion"


def test_viewer_cannot_act(viewer_client, manager):
    plan = make_plan(owner=manager)
    assert viewer_client.post(url(plan, "submit"), {"comment": "x"}).status_code == 403
    assert viewer_client.get(url(plan, "edit")).status_code == 403
    plan.refresh_from_db()
    assert plan.status == "draft" and not plan.events.exists()


def test_admin_change_page_with_inlines(client, manager, django_user_model):
    plan = make_plan(owner=manager)
    plans.submit(plan, manager, "please")
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "pw"))
    page = client.get(f"/admin/planning/capacityplan/{plan.pk}/change/").content.decode()
    assert "70B pretraining" in page and "400G switches" in page and "please" in page


# --- workloads and bill-of-materials lines on the plan page -----------------------------------------------

HX = {"HTTP_HX_REQUEST": "true"}


def workload_body(gpu, **overrides):
    """A workload form as the browser posts it: optional inputs blank, precision at its default."""
    body = {"name": "8x22B MoE", "start": "2027-04", "gpu_model": gpu.pk, "params_billion": 141,
            "active_params_billion": 39, "tokens_billion": 4000, "num_gpus": 768, "precision": "bf16", "mfu": "",
            "seq_len": "", "global_batch_tokens": "", "dataset_tb": "", "checkpoint_interval_hours": "",
            "deadline_days": "", "pue": ""}
    return {**body, **overrides}


def messages_of(response):
    return " ".join(m.message for m in get_messages(response.wsgi_request))


def test_add_edit_delete_workload_with_plain_forms(manager_client, manager):
    plan = make_plan(owner=manager)
    gpu = plan.workloads.get().gpu_model
    page = manager_client.get(url(plan, "workloads/add"))
    assert page.status_code == 200
    form = page.content.decode()
    assert "Parameters (billion)" in form and "Model FLOPs utilisation" in form and 'placeholder="4096"' in form
    assert "one of the plan&#x27;s months, 2027-01 to 2027-12" in form and 'type="month"' in form
    assert 'value="2027-01"' in form and "hx-post" not in form  # a page of its own: a plain form

    response = manager_client.post(url(plan, "workloads/add"), workload_body(gpu))
    assert response.status_code == 302 and response["Location"].endswith(f"{url(plan)}#workloads")
    added = plan.workloads.get(name="8x22B MoE")
    # only what was given: the default precision and the blank inputs are left out
    assert added.inputs == {"params_billion": 141, "active_params_billion": 39, "tokens_billion": 4000,
                            "num_gpus": 768}
    assert added.start == date(2027, 4, 1) and added.gpu_model == gpu
    assert "Added workload 8x22B MoE." in messages_of(response)

    detail = manager_client.get(url(plan))
    page = detail.content.decode()
    row = next(r for r in detail.context["workloads"] if r.workload == added)
    # blank MFU and goodput: the calibrated defaults for 39B active parameters on 768 GPUs
    mfu, _ = sizing.default_mfu(39e9, sizing.GPU.of(gpu), 768)
    goodput, _, _ = sizing.default_goodput(768)
    assert row.gpu_hours == pytest.approx(6 * 39e9 * 4000e9 / (float(gpu.bf16_tflops) * 1e12 * mfu) / 3600 / goodput)
    assert row.summary[2] == "768" and row.summary[3] == "multi node"
    assert f'id="workload-{added.pk}"' in page and "multi node" in page and ">Days</th>" in page
    assert "/planning/sizing/?gpu_model=" in page and "active_params_billion=39" in page
    assert manager_client.get(row.sizing_url).context["form"].is_valid()  # the sizing page, prefilled

    edit = manager_client.get(url(plan, f"workloads/{added.pk}/edit")).content.decode()
    assert 'value="8x22B MoE"' in edit and 'value="39' in edit  # the stored inputs are the form's initial values
    response = manager_client.post(url(plan, f"workloads/{added.pk}/edit"),
                                   workload_body(gpu, name="MoE v2", precision="fp8", mfu="0.3", num_gpus=""))
    assert response.status_code == 302
    added.refresh_from_db()
    assert added.name == "MoE v2"
    assert added.inputs == {"params_billion": 141, "active_params_billion": 39, "tokens_billion": 4000,
                            "precision": "fp8", "mfu": 0.3}

    assert "Delete the workload MoE v2?" in manager_client.get(url(plan, f"workloads/{added.pk}/delete")
                                                                ).content.decode()
    response = manager_client.post(url(plan, f"workloads/{added.pk}/delete"))
    assert response.status_code == 302 and "Deleted workload MoE v2." in messages_of(response)
    assert not plan.workloads.filter(pk=added.pk).exists() and plan.workloads.count() == 1

    # The plan's history shows each line's changes, the deleted workload's included, newest first.
    rows = manager_client.get(url(plan)).context["history"]
    assert rows[0]["changes"] == [("Plan workload “MoE v2”", "", "removed")]
    edited = {change[0]: change[1:] for change in rows[1]["changes"]}
    assert edited["Plan workload “MoE v2”: name"] == ("8x22B MoE", "MoE v2")
    assert "Plan workload “MoE v2”: inputs" in edited
    assert rows[2]["changes"] == [("Plan workload “8x22B MoE”", "", "added")]


def test_workload_with_htmx_redraws_the_section(manager_client, manager):
    plan = make_plan(owner=manager)
    gpu = plan.workloads.get().gpu_model
    response = manager_client.get(url(plan, "workloads/add"), **HX)
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="workloads">') and "<html" not in fragment
    assert f'hx-post="{url(plan, "workloads/add")}"' in fragment and 'hx-target="#workloads"' in fragment

    response = manager_client.post(url(plan, "workloads/add"), workload_body(gpu, name="Dense 8B", params_billion=8,
                                                                             active_params_billion="",
                                                                             tokens_billion=300, num_gpus=64), **HX)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert "Added workload Dense 8B." in fragment and "Dense 8B" in fragment and "70B pretraining" in fragment
    assert 'id="workload-form"' not in fragment  # the form closed
    assert not list(get_messages(response.wsgi_request))  # no message left for the next page
    assert response["HX-Trigger"] == '{"plan-changed": {}}'  # the plan's analysis reloads
    added = plan.workloads.get(name="Dense 8B")

    response = manager_client.post(url(plan, f"workloads/{added.pk}/delete"), **HX)
    assert "Deleted workload Dense 8B." in response.content.decode()
    assert not plan.workloads.filter(name="Dense 8B").exists()
    cancel = manager_client.get(url(plan, "workloads"), **HX).content.decode()
    assert cancel.lstrip().startswith('<section class="card" id="workloads">')
    assert manager_client.get(url(plan, "workloads")).status_code == 302  # without htmx: the plan page


@pytest.mark.parametrize(("overrides", "message"), [
    ({"tokens_billion": -5}, "Must be greater than 0."),
    ({"active_params_billion": 200}, "Active parameters cannot exceed the total parameters."),
    ({"mfu": "1.5"}, "Must be at most 1."),
    ({"start": "2028-01"}, "2028-01 is outside the plan&#x27;s months, 2027-01 to 2027-12"),
    ({"start": "2026-12"}, "2026-12 is outside the plan&#x27;s months, 2027-01 to 2027-12"),
    ({"start": "2027-13"}, "Enter a month as YYYY-MM, e.g. 2027-03."),
    ({"start": "next month"}, "Enter a month as YYYY-MM, e.g. 2027-03."),
    ({"start": ""}, "This field is required."),
    ({"params_billion": ""}, "This field is required."),
    ({"num_gpus": "2.5"}, "Enter a whole number."),
])
def test_bad_workload_input_shows_the_message_and_saves_nothing(manager_client, manager, overrides, message):
    plan = make_plan(owner=manager)
    gpu = plan.workloads.get().gpu_model
    before = list(plan.workloads.values_list("pk", "name", "inputs"))
    for extra in ({}, HX):
        response = manager_client.post(url(plan, "workloads/add"), workload_body(gpu, **overrides), **extra)
        assert response.status_code == 200
        page = response.content.decode()
        assert message in page and "Please correct the errors below." in page
        assert page.count(message) == 1  # said once, at its field
        assert list(plan.workloads.values_list("pk", "name", "inputs")) == before
    existing = plan.workloads.get()
    response = manager_client.post(url(plan, f"workloads/{existing.pk}/edit"), workload_body(gpu, **overrides))
    assert message in response.content.decode()
    assert list(plan.workloads.values_list("pk", "name", "inputs")) == before


def test_fp8_on_a_gpu_without_it_is_refused(manager_client, manager):
    plan = make_plan(owner=manager)
    old = make_gpu_model(fp8_tflops=None, name="Old GPU")
    response = manager_client.post(url(plan, "workloads/add"), workload_body(old, precision="fp8"))
    assert "Old GPU has no FP8 tensor cores; size it in bf16." in response.content.decode()
    assert not plan.workloads.filter(gpu_model=old).exists()


def test_add_edit_delete_bill_of_materials_line(manager_client, manager):
    plan = make_plan(owner=manager)
    node_model = make_node_model(name="Pod node")
    response = manager_client.post(url(plan, "items/add"), {"node_model": node_model.pk, "quantity": 8,
                                                            "unit_cost": "380000.00", "currency": "usd"})
    assert response.status_code == 302
    line = plan.items.get(node_model=node_model)
    assert (line.quantity, line.unit_cost, line.currency) == (8, Decimal("380000.00"), "USD")
    page = manager_client.get(url(plan)).content.decode()
    assert "Pod node" in page and "3,040,000.00" in page and "5,000,000.00" in page  # line and USD grand total

    response = manager_client.post(url(plan, f"items/{line.pk}/edit"), {
        "description": "NVIDIA QM9700 NDR switches", "quantity": 4, "unit_cost": "32000", "currency": "CHF"}, **HX)
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="bill-of-materials">')
    assert "Saved bill-of-materials line 4 × NVIDIA QM9700 NDR switches." in fragment
    line.refresh_from_db()
    assert (line.node_model, line.description, line.currency) == (None, "NVIDIA QM9700 NDR switches", "CHF")

    response = manager_client.post(url(plan, f"items/{line.pk}/delete"))
    assert response.status_code == 302 and not plan.items.filter(pk=line.pk).exists()


@pytest.mark.parametrize(("body", "message"), [
    ({"quantity": 1, "unit_cost": "1", "currency": "USD"}, "Say what the line is for"),
    ({"description": "cables", "quantity": 0, "unit_cost": "1", "currency": "USD"}, "greater than or equal to 1"),
    ({"description": "cables", "quantity": 2, "unit_cost": "1", "currency": "E1"}, "three-letter ISO 4217 code"),
    ({"description": "cables", "quantity": 2, "unit_cost": "-1", "currency": "USD"}, "greater than or equal to 0"),
])
def test_bad_line_shows_the_message_and_saves_nothing(manager_client, manager, body, message):
    plan = make_plan(owner=manager)
    before = list(plan.items.values_list("pk", "quantity", "description"))
    response = manager_client.post(url(plan, "items/add"), body)
    assert response.status_code == 200 and message in response.content.decode()
    response = manager_client.post(url(plan, "items/add"), body, **HX)
    assert message in response.content.decode() and 'id="item-form"' in response.content.decode()
    assert list(plan.items.values_list("pk", "quantity", "description")) == before


def test_a_line_for_a_node_model_and_a_gpu_model_is_refused(manager_client, manager):
    plan = make_plan(owner=manager)
    body = {"node_model": make_node_model().pk, "gpu_model": make_gpu_model().pk, "quantity": 1, "unit_cost": "1",
            "currency": "USD"}
    response = manager_client.post(url(plan, "items/add"), body)
    assert "A line is for a node model or a GPU model, not both." in response.content.decode()
    assert plan.items.count() == 3


def test_a_plan_that_is_not_a_draft_refuses_changes(manager_client, manager):
    plan = make_plan(owner=manager)
    plans.submit(plan, manager)
    workload, line = plan.workloads.get(), plan.items.first()
    page = manager_client.get(url(plan)).content.decode()
    assert "/workloads/add/" not in page and "/items/add/" not in page and "/edit/" not in page
    assert f"/workloads/{workload.pk}/delete/" not in page and f"/items/{line.pk}/delete/" not in page
    assert "Sizing" in page  # the sizing link stays
    gpu = workload.gpu_model
    attempts = [
        ("workloads/add", workload_body(gpu)), (f"workloads/{workload.pk}/edit", workload_body(gpu, name="x")),
        (f"workloads/{workload.pk}/delete", {}),
        ("items/add", {"description": "x", "quantity": 1, "unit_cost": "1", "currency": "USD"}),
        (f"items/{line.pk}/edit", {"description": "x", "quantity": 1, "unit_cost": "1", "currency": "USD"}),
        (f"items/{line.pk}/delete", {}),
    ]
    for path, body in attempts:
        response = manager_client.post(url(plan, path), body)
        assert response.status_code == 302 and response["Location"] == url(plan), path
        assert "The plan is submitted; only a draft plan can be changed." in messages_of(response)
        response = manager_client.post(url(plan, path), body, **HX)
        assert response["HX-Redirect"] == url(plan), path  # the plan page shows the message
    assert manager_client.get(url(plan, "workloads/add")).status_code == 302
    assert list(plan.workloads.values_list("name", flat=True)) == ["70B pretraining"]
    assert plan.items.count() == 3 and not plan.items.filter(description="x").exists()


def test_a_viewer_gets_no_buttons_and_403(viewer_client, manager):
    plan = make_plan(owner=manager)
    workload, line = plan.workloads.get(), plan.items.first()
    page = viewer_client.get(url(plan)).content.decode()
    assert "/workloads/add/" not in page and "/edit/" not in page and "/delete/" not in page
    for path in ("workloads/add", f"workloads/{workload.pk}/edit", f"workloads/{workload.pk}/delete", "items/add",
                 f"items/{line.pk}/edit", f"items/{line.pk}/delete"):
        assert viewer_client.get(url(plan, path)).status_code == 403, path
        assert viewer_client.post(url(plan, path), workload_body(workload.gpu_model)).status_code == 403, path
    assert viewer_client.get(url(plan, "workloads"), **HX).status_code == 200  # the section is only read
    assert plan.workloads.count() == 1 and plan.items.count() == 3


def test_workloads_and_lines_of_another_plan_are_not_found(manager_client, manager):
    plan, other = make_plan(owner=manager), make_plan(owner=manager, name="other")
    workload, line = other.workloads.get(), other.items.first()
    assert manager_client.post(url(plan, f"workloads/{workload.pk}/delete")).status_code == 404
    assert manager_client.get(url(plan, f"items/{line.pk}/edit")).status_code == 404
    assert other.workloads.exists()


def test_a_workload_that_cannot_be_sized_still_shows(viewer_client, manager):
    plan = make_plan(owner=manager)
    plan.workloads.update(inputs={"params_billion": 70})  # as an old API client might have left it
    response = viewer_client.get(url(plan))
    assert response.status_code == 200
    assert "Missing sizing inputs: tokens_billion." in response.content.decode()


@pytest.mark.parametrize("count", [5, 50])
def test_plan_page_queries_are_constant(manager_client, manager, count, django_assert_max_num_queries):
    plan = make_plan(owner=manager)
    gpu = plan.workloads.get().gpu_model
    PlanWorkload.objects.bulk_create(
        PlanWorkload(plan=plan, name=f"run {i}", start=date(2027, 1 + i % 12, 1), gpu_model=gpu,
                     inputs={"params_billion": 7 + i, "tokens_billion": 1000}) for i in range(count - 1))
    PlanItem.objects.bulk_create(PlanItem(plan=plan, description=f"part {i}", quantity=1, unit_cost=Decimal(1))
                                 for i in range(count))
    with django_assert_max_num_queries(16):  # the history of the workloads and lines: one query each
        response = manager_client.get(url(plan))
    assert response.status_code == 200 and len(response.context["workloads"]) == count
    with django_assert_max_num_queries(12):
        assert manager_client.get(url(plan, "workloads"), **HX).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_manager_edits_workloads_inline_in_a_browser(browser_page):
    """The workload form opens in the plan page, a bad input is shown in place, a save and a delete redraw the
    section, all without a page load; the page logs no JS error and no request fails."""
    session = browser_page
    page = session.page
    user = make_user("max", MANAGER)
    plan = make_plan(owner=user)
    page.goto(f"/accounts/login/?next={url(plan)}")
    page.fill("#id_username", user.username)
    page.fill("#id_password", "pw-max")
    with page.expect_navigation(url=re.compile(rf"{url(plan)}$")):
        page.get_by_role("button", name="Log in").click()
    page.evaluate("window.__marker = 1")
    section = page.locator("#workloads")

    section.get_by_role("link", name="Add workload").click()
    form = page.locator("#workload-form")
    form.wait_for()
    form.locator("#id_name").fill("Dense 8B")
    form.locator("#id_start").fill("2027-02")
    form.locator("#id_gpu_model").select_option(label=plan.workloads.get().gpu_model.name)
    form.locator("#id_params_billion").fill("8")
    form.locator("#id_tokens_billion").fill("-5")
    form.get_by_role("button", name="Save").click()
    page.locator("#workload-form .error", has_text="Must be greater than 0.").wait_for()
    assert not plan.workloads.filter(name="Dense 8B").exists()
    session.screenshot("plan-workload-form-error")

    page.locator("#workload-form #id_tokens_billion").fill("300")
    page.locator("#workload-form").get_by_role("button", name="Save").click()
    page.locator("#workloads .message", has_text="Added workload Dense 8B.").wait_for()
    assert page.locator("#workload-form").count() == 0
    added = plan.workloads.get(name="Dense 8B")
    row = page.locator(f"#workload-{added.pk}")
    assert "single" in row.inner_text() or "multi" in row.inner_text()  # its fit class
    session.screenshot("plan-workload-added")

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("link", name="Delete").click()
    page.locator("#workloads .message", has_text="Deleted workload Dense 8B.").wait_for()
    assert page.locator(f"#workload-{added.pk}").count() == 0 and not plan.workloads.filter(pk=added.pk).exists()
    assert page.evaluate("window.__marker") == 1, "a full page load instead of an inline change"
    assert page.url.endswith(url(plan))
    session.assert_clean()
