"""Races against a live server on PostgreSQL (issue 15): threads started on a barrier send conflicting state
changes at once, several trials each, as two people (or a double click, or a retrying client) do.

Each test reads the outcome the way a user would, from the stored rows: the lifecycle record of a node has no
impossible step (each record starts where the one before ended) and exactly one of two conflicting moves won;
a ticket keeps every change made to it (a status change and a concurrent edit of another field are both in the
final row), a double submit of "close" and "reopen" never reopens a closed ticket; a ticket's title never
reaches another team's records; a recommendation accepted and dismissed at once is decided once, with at most
one plan (issue 33); and N concurrent retries with one ``Idempotency-Key`` or ``external_id`` all
get the first answer (201, same body) while exactly one order or delivery exists.
"""

import re
from datetime import date
from functools import partial

import pytest

from inventory import lifecycle
from inventory.models import GPU, LifecycleState, Node, StateTransition
from planning.models import CapacityPlan, Contract, Delivery, PurchaseOrder, Recommendation
from support import faults, workflow
from support.models import Ticket
from tests.factories import RecommendationFactory, make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.races import TIMEOUT, Portal, in_process, race

pytestmark = pytest.mark.django_db(transaction=True)

L = LifecycleState
S = Ticket.Status
THREADS = 12
TRIALS = 4


@pytest.fixture
def portal(live_server):
    return Portal(live_server.url)


def assert_lifecycle_consistent(obj):
    """Every lifecycle record starts where the one before it ended, and the last one is the stored state."""
    records = list(StateTransition.objects.filter(object_id=obj.pk, content_type__model=obj._meta.model_name)
                   .order_by("created", "pk"))
    for before, after in zip(records, records[1:], strict=False):
        assert after.from_state == before.to_state, [(r.from_state, r.to_state) for r in records]
    obj.refresh_from_db()
    assert records[-1].to_state == obj.state
    return records


def in_service_node():
    node = make_node()
    for state in (L.BURN_IN, L.IN_SERVICE):
        lifecycle.transition(node, state)
    return node


def current_field(page):
    """The state or status the page's workflow form was rendered with (its hidden ``current`` field)."""
    return re.search(r'name="current" value="([^"]*)"', page.text).group(1)


# --- Lifecycle from the pages --------------------------------------------------------------------------


def test_conflicting_lifecycle_posts_from_the_node_page_have_one_winner(portal):
    for _ in range(TRIALS):
        node = in_service_node()
        url = f"/inventory/nodes/{node.pk}/"
        shown = current_field(portal.session().get(portal.base + url, timeout=TIMEOUT))
        assert shown == L.IN_SERVICE
        sessions = [portal.session() for _ in range(THREADS)]
        targets = [L.RETIRED if i % 2 else L.DEGRADED for i in range(THREADS)]
        pages = race(*(partial(portal.post_page, s, f"{url}transition/", {"to": t, "reason": "race", "current": shown})
                       for s, t in zip(sessions, targets, strict=True)))
        assert all(page.status_code == 200 for page in pages)
        records = assert_lifecycle_consistent(node)
        moves = [r for r in records if r.from_state == L.IN_SERVICE]
        assert len(moves) == 1 and len(records) == 3, [(r.from_state, r.to_state) for r in records]
        refused = [page for page in pages if "someone changed it meanwhile" in page.text]
        assert len(refused) == THREADS - 1  # each loser is told, on the page, that nothing was changed


def test_conflicting_lifecycle_transitions_through_the_api_have_one_winner(portal):
    for _ in range(TRIALS):
        node = in_service_node()
        url = f"/api/inventory/nodes/{node.pk}/transition/"
        targets = [L.RETIRED if i % 2 else L.DEGRADED for i in range(THREADS)]
        answers = race(*(partial(portal.api, "POST", url, {"to": t, "from_state": "in_service"}) for t in targets))
        codes = sorted(a.status_code for a in answers)
        assert codes == [200] + [409] * (THREADS - 1), codes
        winner = next(a for a in answers if a.status_code == 200).json()["state"]
        assert all(a.json()["state"] == winner for a in answers if a.status_code == 409)
        records = assert_lifecycle_consistent(node)
        assert len(records) == 3


def test_the_fault_task_and_a_page_retiring_the_gpu_apply_one_after_the_other(portal):
    """The telemetry fault task degrades an in-service GPU while someone retires it from its page: the GPU ends
    retired with a consistent record (degraded then retired, or retired alone), never "degraded" after "retired"."""
    for _ in range(TRIALS * 2):
        node = in_service_node()
        gpu = make_gpu(node=node)
        for state in (L.BURN_IN, L.IN_SERVICE):
            lifecycle.transition(gpu, state)
        fault = faults.Fault(Ticket.Fault.XID, "XID 79", node=node, gpu=gpu)
        session = portal.session()
        form = {"to": L.RETIRED, "reason": "race", "current": L.IN_SERVICE}
        ticket, page = race(in_process(partial(faults.open_ticket, fault, notify=False)),
                            partial(portal.post_page, session, f"/inventory/gpus/{gpu.pk}/transition/", form))
        assert ticket is not None and page.status_code == 200
        records = assert_lifecycle_consistent(gpu)
        if "someone changed it meanwhile" in page.text:  # the task was first: the page's move was refused
            assert [r.to_state for r in records[2:]] == [L.DEGRADED]
        else:
            assert gpu.state == L.RETIRED and [r.to_state for r in records[2:]] in ([L.RETIRED],
                                                                                    [L.DEGRADED, L.RETIRED])


# --- Tickets -------------------------------------------------------------------------------------------


def make_ticket(status=S.NEW, **fields):
    ticket = workflow.open_ticket(Ticket(title="Ticket under test", priority="P3", **fields), notify=False)
    path = {S.TRIAGED: [S.TRIAGED], S.IN_PROGRESS: [S.IN_PROGRESS], S.RESOLVED: [S.IN_PROGRESS, S.RESOLVED]}
    for step in path.get(status, []):
        workflow.change_status(ticket, step, notify=False)
    return ticket


def statuses_in_history(ticket):
    return [h.status for h in ticket.history.order_by("history_date", "history_id")]


def test_double_submit_of_close_and_reopen_never_reopens_a_closed_ticket(portal):
    for _ in range(TRIALS):
        ticket = make_ticket(S.RESOLVED)
        url = f"/support/tickets/{ticket.pk}/"
        shown = current_field(portal.session().get(portal.base + url, timeout=TIMEOUT))
        assert shown == S.RESOLVED
        sessions = [portal.session() for _ in range(THREADS)]
        targets = [S.CLOSED if i % 2 else S.IN_PROGRESS for i in range(THREADS)]
        pages = race(*(partial(portal.post_page, s, f"{url}status/", {"status": t, "current": shown})
                       for s, t in zip(sessions, targets, strict=True)))
        assert all(page.status_code == 200 for page in pages)
        history = statuses_in_history(ticket)
        assert history.count(S.RESOLVED) == 1, history
        after = history[history.index(S.RESOLVED) + 1:]
        assert len(after) == 1, history  # one move from resolved: the other posts changed nothing
        ticket.refresh_from_db()
        assert ticket.status == after[0]
        if ticket.status == S.CLOSED:
            assert ticket.closed_at is not None


def test_status_moves_racing_edits_of_other_fields_lose_nothing(portal):
    """The API's transition, the queue's inline status and priority (htmx), and PATCHes of the title and the
    description, all at once on one ticket: every one of them is in the final row."""
    for trial in range(TRIALS):
        ticket = make_ticket(S.NEW)
        api = f"/api/support/tickets/{ticket.pk}/"
        inline = f"/support/tickets/{ticket.pk}/inline/"
        htmx = {"HX-Request": "true"}
        title, description = f"Renamed {trial}", f"Described {trial}"
        s1, s2 = portal.session(), portal.session()
        answers = race(
            partial(portal.api, "POST", f"{api}transition/", {"status": "triaged"}),
            partial(portal.api, "PATCH", api, {"title": title}),
            partial(portal.api, "PATCH", api, {"description": description}),
            partial(portal.post_page, s1, inline, {"priority": "P1"}, **htmx),
            partial(portal.post_page, s2, inline, {"status": "in_progress", "current": "triaged"}, **htmx),
        )
        assert [a.status_code for a in answers] == [200] * 5, [a.text[:300] for a in answers]
        ticket.refresh_from_db()
        assert (ticket.title, ticket.description, ticket.priority) == (title, description, "P1")
        # The inline move was made from "triaged": applied if the transition was in first, refused otherwise.
        moved = "someone changed it meanwhile" not in answers[4].text
        assert ticket.status == (S.IN_PROGRESS if moved else S.TRIAGED)
        history = statuses_in_history(ticket)
        steps = [s for i, s in enumerate(history) if i == 0 or s != history[i - 1]]
        assert steps == [S.NEW, S.TRIAGED] + ([S.IN_PROGRESS] if moved else []), history


def test_the_edit_page_and_a_bulk_patch_racing_a_status_move_lose_nothing(portal):
    """The full edit form and a bulk PATCH write back every field of the ticket: neither may write back a status
    read before a concurrent move committed."""
    for trial in range(TRIALS):
        ticket = make_ticket(S.NEW)
        move = f"/api/support/tickets/{ticket.pk}/transition/"
        edit = {"title": f"Edited {trial}", "category": "hardware", "priority": "P3"}
        answers = race(partial(portal.api, "POST", move, {"status": "triaged"}),
                       partial(portal.post_page, portal.session(), f"/support/tickets/{ticket.pk}/edit/", edit))
        assert [a.status_code for a in answers] == [200] * 2, [a.text[:300] for a in answers]
        ticket.refresh_from_db()
        assert (ticket.status, ticket.title) == (S.TRIAGED, f"Edited {trial}")
        answers = race(partial(portal.api, "POST", move, {"status": "in_progress"}),
                       partial(portal.api, "PATCH", "/api/support/tickets/", [{"id": ticket.pk, "priority": "P1"}]))
        assert [a.status_code for a in answers] == [200] * 2, [a.text[:300] for a in answers]
        ticket.refresh_from_db()
        assert (ticket.status, ticket.title, ticket.priority) == (S.IN_PROGRESS, f"Edited {trial}", "P1")


def test_concurrent_api_transitions_from_one_status_have_one_winner(portal):
    for _ in range(TRIALS):
        ticket = make_ticket(S.IN_PROGRESS)
        url = f"/api/support/tickets/{ticket.pk}/transition/"
        targets = [S.RESOLVED if i % 2 else S.WAITING_VENDOR for i in range(THREADS)]
        answers = race(*(partial(portal.api, "POST", url, {"status": t, "from_status": "in_progress"})
                         for t in targets))
        codes = sorted(a.status_code for a in answers)
        assert codes == [200] + [409] * (THREADS - 1), codes
        ticket.refresh_from_db()
        assert all(a.json()["status"] == ticket.status for a in answers)
        assert statuses_in_history(ticket).count(ticket.status) == 1


def test_return_to_service_twice_moves_once_and_keeps_the_title_private(portal):
    for _ in range(TRIALS):
        node = in_service_node()
        lifecycle.transition(node, L.DEGRADED, reason="XID 79")
        ticket = make_ticket(S.RESOLVED, node=node)
        Ticket.objects.filter(pk=ticket.pk).update(title="Vision team: secret project Falcon on this node")
        sessions = [portal.session() for _ in range(THREADS // 2)]
        pages = race(*(partial(portal.post_page, s, f"/support/tickets/{ticket.pk}/return-to-service/", {})
                       for s in sessions))
        assert all(page.status_code == 200 for page in pages)
        records = assert_lifecycle_consistent(node)
        back = [r for r in records if r.to_state == L.IN_SERVICE and r.from_state == L.DEGRADED]
        assert len(back) == 1 and back[0].reason == f"Ticket #{ticket.pk} resolved"
        assert not any("Falcon" in r.reason for r in records)
        assert not node.history.filter(history_change_reason__contains="Falcon").exists()


def test_an_rma_swap_racing_a_status_change_loses_neither(portal):
    for trial in range(TRIALS):
        node = in_service_node()
        gpu = make_gpu(node=node)
        ticket = make_ticket(S.IN_PROGRESS, node=node, gpu=gpu)
        swap = {"part": "gpu", "gpu": gpu.pk, "serial": f"NEW-{trial}", "rma_number": f"RMA-{trial}"}
        page, answer = race(
            partial(portal.post_page, portal.session(), f"/support/tickets/{ticket.pk}/swap/", swap),
            partial(portal.api, "POST", f"/api/support/tickets/{ticket.pk}/transition/",
                    {"status": "waiting_vendor", "from_status": "in_progress"}),
        )
        assert page.status_code == 200 and "Swap recorded" in page.text and answer.status_code == 200
        ticket.refresh_from_db()
        assert (ticket.status, ticket.rma_number) == (S.WAITING_VENDOR, f"RMA-{trial}")
        assert GPU.objects.filter(serial=f"NEW-{trial}", node=node).exists()


# --- Idempotent creates ------------------------------------------------------------------------------------

ORDERS = "/api/planning/purchase-orders/"
DELIVERIES = "/api/planning/deliveries/"


@pytest.fixture
def order_body():
    site, node_model, gpu_model = make_site(), make_node_model(gpu_slots=4), make_gpu_model()
    contract = Contract.objects.create(kind="purchase", vendor="Supermicro", reference="C-1", start=date(2025, 1, 1))

    def body(reference, **extra):
        return {"contract": contract.pk, "vendor": "Supermicro", "reference": reference, "site": site.pk,
                "lines": [{"node_model": node_model.pk, "quantity": 2, "unit_price": "250000.00"},
                          {"gpu_model": gpu_model.pk, "quantity": 3, "unit_price": "30000.00"}], **extra}

    return body


def assert_all_replay_the_first(answers):
    assert [a.status_code for a in answers] == [201] * len(answers), [a.text[:300] for a in answers]
    bodies = [a.json() for a in answers]
    assert all(b == bodies[0] for b in bodies)
    assert sum(a.headers.get("Idempotent-Replayed") != "true" for a in answers) == 1  # one ran, the rest replayed
    return bodies[0]


def test_concurrent_retries_with_one_idempotency_key_all_get_the_first_answer(portal, order_body):
    for trial in range(TRIALS):
        body, key = order_body(f"PO-K-{trial}"), f"key-{trial}"
        answers = race(*[partial(portal.api, "POST", ORDERS, body, **{"Idempotency-Key": key})] * THREADS)
        first = assert_all_replay_the_first(answers)
        assert PurchaseOrder.objects.filter(reference=f"PO-K-{trial}").count() == 1
        delivery = {"order": first["id"], "items": [{"line": first["lines"][0]["id"], "serial": f"SN-{trial}",
                                                     "hostname": f"new-{trial}"}]}
        retry = partial(portal.api, "POST", DELIVERIES, delivery, **{"Idempotency-Key": f"d-{key}"})
        answers = race(*[retry] * THREADS)
        assert_all_replay_the_first(answers)
        assert Delivery.objects.filter(order=first["id"]).count() == 1
        assert Node.objects.filter(hostname=f"new-{trial}").count() == 1


def test_concurrent_retries_with_one_external_id_all_get_the_first_answer(portal, order_body):
    for trial in range(TRIALS):
        body = order_body(f"PO-E-{trial}", external_id=f"erp-{trial}")
        answers = race(*[partial(portal.api, "POST", ORDERS, body)] * THREADS)
        first = assert_all_replay_the_first(answers)
        assert PurchaseOrder.objects.filter(external_id=f"erp-{trial}").count() == 1
        delivery = {"order": first["id"], "external_id": f"dn-{trial}",
                    "items": [{"line": first["lines"][0]["id"], "serial": f"SN-E-{trial}", "hostname": f"e-{trial}"}]}
        answers = race(*[partial(portal.api, "POST", DELIVERIES, delivery)] * THREADS)
        assert_all_replay_the_first(answers)
        assert Delivery.objects.filter(external_id=f"dn-{trial}").count() == 1


def test_a_cancel_racing_deliveries_never_cancels_a_delivered_order(portal, order_body):
    for trial in range(TRIALS):
        order = portal.api("POST", ORDERS, order_body(f"PO-C-{trial}")).json()
        line = order["lines"][0]["id"]
        cancel = partial(portal.api, "POST", f"{ORDERS}{order['id']}/cancel/")
        deliveries = [partial(portal.api, "POST", DELIVERIES, {"order": order["id"], "items": [
            {"line": line, "serial": f"SN-C-{trial}-{i}", "hostname": f"c-{trial}-{i}"}]}) for i in range(2)]
        answers = race(cancel, *deliveries)
        assert answers[0].status_code in (200, 409) and {a.status_code for a in answers[1:]} <= {201, 400}
        cancelled = PurchaseOrder.objects.get(pk=order["id"]).status == PurchaseOrder.Status.CANCELLED
        delivered = Delivery.objects.filter(order=order["id"]).count()
        assert cancelled != bool(delivered), (cancelled, delivered, [a.text[:200] for a in answers])
        assert delivered == sum(a.status_code == 201 for a in answers[1:])


# --- Recommendations -------------------------------------------------------------------------------------


def test_accepts_and_dismissals_of_one_recommendation_at_once_decide_it_once(portal):
    """Accept ∥ accept ∥ dismiss ∥ dismiss, from the API and the page: one decision, and an accepted
    recommendation made exactly one draft plan (a double click on "accept" must not make two)."""
    for trial in range(TRIALS):
        rec = RecommendationFactory()
        api = f"/api/planning/recommendations/{rec.pk}/"
        page = f"/planning/recommendations/{rec.pk}/"
        answers = race(
            partial(portal.api, "POST", f"{api}accept/", {"comment": ""}),
            partial(portal.api, "POST", f"{api}dismiss/", {"reason": "known"}),
            partial(portal.post_page, portal.session(), f"{page}accept/", {}),
            partial(portal.post_page, portal.session(), f"{page}dismiss/", {"reason": "known"}),
        )
        assert sorted(a.status_code for a in answers[:2]) in ([200, 400], [400, 400]), [a.text for a in answers]
        rec.refresh_from_db()
        assert rec.status in (Recommendation.Status.ACCEPTED, Recommendation.Status.DISMISSED)
        plans = CapacityPlan.objects.filter(name__contains=f"(recommendation #{rec.pk})")
        assert plans.count() == (rec.status == Recommendation.Status.ACCEPTED), trial
        assert rec.plan_id == (plans.get().pk if plans else None)

