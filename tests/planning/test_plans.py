"""Capacity plans: the workflow (second manager approves, events with comments), editing only while draft,
the bill of materials of an approved plan, the plan.approved webhook, purchase orders against plans, and
permissions."""

from datetime import date
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from planning.models import CapacityPlan, Contract, PlanEvent, PlanItem, PlanWorkload, Webhook, WebhookDelivery
from planning.plans import workflow as plans
from portal.roles import MANAGER, PROCUREMENT
from tests.factories import make_gpu_model, make_node_model, make_site
from tests.helpers.accounts import make_user, token_client
from tests.helpers.plans import PLANS, act, create_plan, plan_body

ORDERS = "/api/planning/purchase-orders/"


@pytest.fixture
def catalog(db):
    return {"node_model": make_node_model(gpu_slots=8), "gpu_model": make_gpu_model()}


@pytest.fixture
def api(manager_api, catalog):
    return manager_api


@pytest.fixture
def second(db):
    user = make_user("mia", MANAGER)
    return user, token_client(user)


def approved_plan(api, second, catalog):
    plan = create_plan(api, catalog)
    assert act(api, plan["id"], "submit", "please").status_code == 200
    response = act(second[1], plan["id"], "approve", "go ahead")
    assert response.status_code == 200, response.data
    return plan


def test_create_with_workloads_and_items(api, catalog):
    plan = create_plan(api, catalog)
    assert plan["status"] == "draft"
    assert [i["currency"] for i in plan["items"]] == ["USD", "USD", "EUR"]
    assert plan["items"][0]["total"] == "1000000.00"
    assert plan["workloads"][0]["gpu_hours"] > 0


def test_invalid_workloads_are_refused(api, catalog):
    beyond = plan_body(catalog)["workloads"][0] | {"start": "2028-01"}
    response = api.post(PLANS, plan_body(catalog, workloads=[beyond]), format="json")
    assert response.status_code == 400
    assert response.data["workloads"][0]["start"] == [
        "2028-01 is outside the plan's months, 2027-01 to 2027-12: choose a month in them, or change the plan's "
        "months."]
    absurd = plan_body(catalog)["workloads"][0] | {"inputs": {"params_billion": -1, "tokens_billion": 10}}
    response = api.post(PLANS, plan_body(catalog, name="x", workloads=[absurd]), format="json")
    assert response.status_code == 400 and "params_billion" in str(response.data)
    unknown = plan_body(catalog)["workloads"][0] | {"inputs": {"params": 7}}
    response = api.post(PLANS, plan_body(catalog, name="y", workloads=[unknown]), format="json")
    assert response.status_code == 400 and "Unknown sizing inputs: params" in str(response.data)
    stalled = plan_body(catalog)["workloads"][0] | {"inputs": {"params_billion": 7, "tokens_billion": 10, "mfu": 0}}
    response = api.post(PLANS, plan_body(catalog, name="z", workloads=[stalled]), format="json")
    assert response.status_code == 400 and "mfu: Must be greater than 0." in str(response.data)
    assert not CapacityPlan.objects.filter(name__in=["x", "y", "z"]).exists()  # nothing half saved


def test_workflow_second_manager_approves(api, second, manager, catalog):
    plan = create_plan(api, catalog)
    assert act(api, plan["id"], "approve").status_code == 400  # not submitted yet
    submitted = act(api, plan["id"], "submit", "for Q3")
    assert submitted.status_code == 200 and submitted.data["status"] == "submitted"
    assert submitted.data["submitted_by"] == "max"
    refused = act(api, plan["id"], "approve")
    assert refused.status_code == 400 and "second manager" in refused.data["detail"]
    approved = act(second[1], plan["id"], "approve", "ok")
    assert approved.status_code == 200 and approved.data["decided_by"] == "mia"
    assert act(second[1], plan["id"], "reject", "too late").status_code == 400  # approved is final
    events = api.get(f"{PLANS}{plan['id']}/events/").data
    assert [(e["username"], e["from_status"], e["to_status"], e["comment"]) for e in events] == [
        ("max", "draft", "submitted", "for Q3"), ("mia", "submitted", "approved", "ok")]


def test_reject_needs_a_comment_and_reopen(api, second, catalog):
    plan = create_plan(api, catalog)
    act(api, plan["id"], "submit")
    assert act(second[1], plan["id"], "reject").status_code == 400
    own = act(api, plan["id"], "reject", "changed my mind")  # four eyes on a rejection too, as on the page
    assert own.status_code == 400 and "second manager" in own.data["detail"]
    assert act(second[1], plan["id"], "reject", "too expensive").data["status"] == "rejected"
    assert act(api, plan["id"], "submit").status_code == 400
    reopened = act(api, plan["id"], "reopen", "cheaper now")
    assert reopened.data["status"] == "draft" and reopened.data["submitted_by"] is None
    assert PlanEvent.objects.filter(plan_id=plan["id"]).count() == 3


def test_submit_needs_a_bill_of_materials(api, catalog):
    plan = create_plan(api, catalog, items=[])
    response = act(api, plan["id"], "submit")
    assert response.status_code == 400 and "bill-of-materials" in response.data["detail"]


def test_edit_and_delete_only_while_draft(api, catalog):
    plan = create_plan(api, catalog)
    url = f"{PLANS}{plan['id']}/"
    assert api.patch(url, {"description": "v2", "items": [plan_body(catalog)["items"][0]]}, format="json").data[
        "description"] == "v2"
    assert PlanItem.objects.filter(plan_id=plan["id"]).count() == 1
    act(api, plan["id"], "submit")
    refused = api.patch(url, {"description": "v3"}, format="json")
    assert refused.status_code == 400 and "only a draft plan" in str(refused.data)
    assert api.delete(url).status_code == 409
    assert CapacityPlan.objects.get(pk=plan["id"]).description == "v2"


def test_status_is_read_only(api, catalog):
    plan = create_plan(api, catalog, status="approved")
    assert plan["status"] == "draft"


def test_bom_only_for_approved_plans_with_totals(api, second, catalog):
    plan = create_plan(api, catalog)
    assert api.get(f"{PLANS}{plan['id']}/bom/").status_code == 409
    act(api, plan["id"], "submit")
    act(second[1], plan["id"], "approve")
    bom = api.get(f"{PLANS}{plan['id']}/bom/").data
    assert [line["total"] for line in bom["lines"]] == ["1000000.00", "960000.00", "80000.00"]
    assert bom["totals"] == {"EUR": "80000.00", "USD": "1960000.00"}


def test_approve_emits_plan_approved_webhook(api, second, catalog, django_capture_on_commit_callbacks):
    hook = Webhook.objects.create(name="erp", url="https://erp.example.org/hook", secret="s",
                                  events=["plan.approved"])
    Webhook.objects.create(name="other", url="https://x.example.org/", secret="s", events=["delivery.received"])
    with django_capture_on_commit_callbacks():
        plan = approved_plan(api, second, catalog)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.webhook, delivery.event) == (hook, "plan.approved")
    assert delivery.payload["plan"]["id"] == plan["id"] and delivery.payload["plan"]["approved_by"] == "mia"
    assert delivery.payload["bill_of_materials"]["totals"] == {"EUR": "80000.00", "USD": "1960000.00"}


def test_domain_refuses_unknown_transitions(manager, catalog):
    plan = CapacityPlan.objects.create(name="p")
    PlanItem.objects.create(plan=plan, description="storage", quantity=1, unit_cost=Decimal(1))
    with pytest.raises(ValidationError, match="cannot become rejected"):
        plans.reject(plan, manager, "no")
    with pytest.raises(ValidationError, match="cannot become draft"):
        plans.reopen(plan, manager)
    assert plans.submit(plan, manager).status == "submitted"


def test_workload_model_validation(catalog):
    plan = CapacityPlan.objects.create(name="p", first_month=date(2027, 1, 1), horizon_months=6)
    workload = PlanWorkload(plan=plan, name="w", start=date(2027, 7, 1), gpu_model=catalog["gpu_model"],
                            inputs={"params_billion": 7})
    with pytest.raises(ValidationError) as error:
        workload.clean()
    assert error.value.message_dict["start"] == [
        "2027-07 is outside the plan's months, 2027-01 to 2027-06: choose a month in them, or change the plan's "
        "months."]
    workload.start = date(2026, 12, 1)
    with pytest.raises(ValidationError, match="2026-12 is outside"):
        workload.clean()
    workload.start = date(2027, 6, 15)  # the last month; a day inside it counts as the month
    with pytest.raises(ValidationError, match="Missing sizing inputs: tokens_billion"):
        workload.clean()
    assert workload.start == date(2027, 6, 1)
    with pytest.raises(ValidationError, match="Missing sizing inputs: tokens_billion"):
        workload.clean()


# --- Purchase orders against plans -----------------------------------------------------------------


def order_body(catalog, **fields):
    return {"vendor": "Supermicro", "reference": "PO-9", "site": make_site().pk,
            "lines": [{"node_model": catalog["node_model"].pk, "quantity": 4, "unit_price": "250000.00"}], **fields}


def test_order_references_an_approved_plan(api, second, catalog):
    plan = approved_plan(api, second, catalog)
    procurement = token_client(make_user("erp", PROCUREMENT))
    assert procurement.get(f"{PLANS}{plan['id']}/bom/").status_code == 200
    response = procurement.post(ORDERS, order_body(catalog, plan=plan["id"]), format="json")
    assert response.status_code == 201, response.data
    assert response.data["plan"] == plan["id"] and response.data["contract"] is None


def test_order_against_a_draft_plan_or_nothing_is_refused(api, catalog):
    plan = create_plan(api, catalog)
    response = api.post(ORDERS, order_body(catalog, plan=plan["id"]), format="json")
    assert response.status_code == 400 and "approved plans only" in str(response.data["plan"])
    response = api.post(ORDERS, order_body(catalog), format="json")
    assert response.status_code == 400 and "approved plan" in str(response.data)
    contract = Contract.objects.create(kind="purchase", vendor="Supermicro", reference="C-9", start=date(2026, 1, 1))
    assert api.post(ORDERS, order_body(catalog, contract=contract.pk), format="json").status_code == 201


def test_permissions(api, viewer_api, catalog):
    plan = create_plan(api, catalog)
    assert viewer_api.get(f"{PLANS}{plan['id']}/").status_code == 200
    assert viewer_api.post(PLANS, plan_body(catalog, name="v"), format="json").status_code == 403
    assert act(viewer_api, plan["id"], "submit").status_code == 403
    act(api, plan["id"], "submit")
    assert act(viewer_api, plan["id"], "approve").status_code == 403
    procurement = token_client(make_user("erp", PROCUREMENT))
    assert act(procurement, plan["id"], "approve").status_code == 403
