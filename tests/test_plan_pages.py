"""Capacity plan pages: list and detail for a viewer, the workflow buttons (a second manager approves), the
refusals shown as messages, permissions, and constant queries on the list."""

from decimal import Decimal

import pytest
from django.contrib.messages import get_messages

from planning import plans
from planning.models import CapacityPlan, PlanEvent, PlanItem, PlanWorkload
from portal.roles import MANAGER
from tests.conftest import make_user
from tests.factories import make_gpu_model, make_node_model


def make_plan(owner=None, name="2027 expansion", workloads=True):
    plan = CapacityPlan.objects.create(name=name, description="More GPUs", horizon_months=12, owner=owner)
    gpu = make_gpu_model() if workloads else None
    if workloads:
        PlanWorkload.objects.create(plan=plan, name="70B pretraining", start_month=3, gpu_model=gpu,
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
    assert response.context["workloads"][0][1] > 0  # GPU-hours
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


def test_edit_only_while_draft(manager_client, manager):
    response = manager_client.post("/planning/capacity-plans/add/", {"name": "New plan", "horizon_months": 24})
    plan = CapacityPlan.objects.get(name="New plan")
    assert response.status_code == 302 and plan.owner == manager and plan.status == "draft"
    assert manager_client.post(url(plan, "edit"), {"name": "Renamed", "horizon_months": 6}).status_code == 302
    plan.refresh_from_db()
    assert plan.name == "Renamed"
    plan = make_plan(owner=manager)
    plans.submit(plan, manager)
    response = manager_client.post(url(plan, "edit"), {"name": "Changed", "horizon_months": 6}, follow=True)
    assert "only a draft plan can be changed" in response.content.decode()
    plan.refresh_from_db()
    assert plan.name == "2027 expansion"


def test_viewer_cannot_act(viewer_client, manager):
    plan = make_plan(owner=manager)
    assert viewer_client.post(url(plan, "submit"), {"comment": "x"}).status_code == 403
    assert viewer_client.get(url(plan, "edit")).status_code == 403
    plan.refresh_from_db()
    assert plan.status == "draft" and not plan.events.exists()


@pytest.mark.parametrize("count", [2, 20])
def test_list_queries_are_constant(viewer_client, manager, count, django_assert_max_num_queries):
    for index in range(count):
        plan = make_plan(owner=manager, name=f"plan {index}", workloads=False)
        PlanItem.objects.create(plan=plan, description="switches", quantity=1, unit_cost=Decimal("1.00"))
        plans.submit(plan, manager)
    with django_assert_max_num_queries(10):
        response = viewer_client.get("/planning/capacity-plans/")
    assert response.status_code == 200


def test_admin_change_page_with_inlines(client, manager, django_user_model):
    plan = make_plan(owner=manager)
    plans.submit(plan, manager, "please")
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "pw"))
    page = client.get(f"/admin/planning/capacityplan/{plan.pk}/change/").content.decode()
    assert "70B pretraining" in page and "400G switches" in page and "please" in page
