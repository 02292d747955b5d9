"""``If-Match`` on the API's actions (issue 33): a transition, an accept, a cancel sent with the ETag of a version
that someone changed since is refused with 412 and changes nothing, as a ``PUT`` is; with the current ETag (or
none) it goes ahead. Every detail action that takes a POST is checked to honour it, so a new one cannot forget."""

import pytest
from django.urls import get_resolver

from inventory.models import LifecycleState, Node
from planning.models import CapacityPlan, PurchaseOrder, Recommendation
from support.models import Ticket
from tests.factories import (
    CapacityPlanFactory,
    PlanItemFactory,
    PurchaseOrderFactory,
    RecommendationFactory,
    make_node,
    make_ticket,
)

pytestmark = pytest.mark.django_db


def api_viewsets():
    """Every viewset mounted under /api/ (DRF's view functions carry their class as ``cls``)."""
    found = set()

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns, route)
            elif route.startswith("api/") and getattr(pattern.callback, "cls", None) is not None:
                found.add(pattern.callback.cls)

    walk(get_resolver().url_patterns, "")
    return found


def test_every_detail_action_that_posts_honours_if_match():
    posting = {(cls.__name__, extra.__name__): getattr(extra, "changes_object", False)
               for cls in api_viewsets() if hasattr(cls, "get_extra_actions")
               for extra in cls.get_extra_actions() if extra.detail and "post" in extra.mapping}
    assert len(posting) >= 12, posting  # plans (6), tickets (3), nodes, GPUs, orders, recommendations (2), sources
    assert [name for name, marked in posting.items() if not marked] == []


def draft_plan():
    plan = CapacityPlanFactory()
    PlanItemFactory(plan=plan)
    return plan


# (what, the object, its detail URL, the action, its body, a change someone else makes, the field the action moves)
CASES = {
    "plan submit": (draft_plan, "/api/planning/plans/{}/", "submit", {"comment": ""},
                    {"description": "changed meanwhile"}, "status"),
    "ticket transition": (lambda: make_ticket(title="Fan noise"), "/api/support/tickets/{}/", "transition",
                          {"status": "triaged"}, {"title": "Fan noise, rack 4"}, "status"),
    "node transition": (make_node, "/api/inventory/nodes/{}/", "transition", {"to": LifecycleState.BURN_IN},
                        {"partition": "train"}, "state"),
    "order cancel": (PurchaseOrderFactory, "/api/planning/purchase-orders/{}/", "cancel", {},
                     {"vendor": "Acme Europe"}, "status"),
    "recommendation dismiss": (RecommendationFactory, "/api/planning/recommendations/{}/", "dismiss",
                               {"reason": "known"}, {"summary": "Busier."}, "status"),
}
MODELS = {"plan submit": CapacityPlan, "ticket transition": Ticket, "node transition": Node,
          "order cancel": PurchaseOrder, "recommendation dismiss": Recommendation}


@pytest.mark.parametrize("case", CASES)
def test_an_action_with_a_stale_etag_is_refused_and_changes_nothing(manager_api, case):
    make, detail, action, body, change, moved = CASES[case]
    obj = make()
    url = detail.format(obj.pk)
    read = manager_api.get(url)
    assert read.status_code == 200 and read["ETag"]
    stale = read["ETag"]
    MODELS[case].objects.filter(pk=obj.pk).update(**change)  # someone else's change

    refused = manager_api.post(f"{url}{action}/", body, format="json", HTTP_IF_MATCH=stale)
    assert refused.status_code == 412, refused.content
    assert "has changed since you read it" in refused.json()["detail"]
    before = getattr(obj, moved)
    obj.refresh_from_db()
    assert getattr(obj, moved) == before

    current = manager_api.get(url)["ETag"]
    done = manager_api.post(f"{url}{action}/", body, format="json", HTTP_IF_MATCH=current)
    assert done.status_code == 200, done.content
    obj.refresh_from_db()
    assert getattr(obj, moved) != before
