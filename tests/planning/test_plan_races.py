"""The capacity plan workflow raced against a live server on PostgreSQL (issue 33): submit, approve, reject and
reopen sent at the same moment, from the API and from the plan page, by one manager or by several.

Whatever arrives together, the stored outcome is one that the same calls made one after the other could reach:
the plan's events form a path of allowed moves, no plan is ever approved or rejected by the manager who
submitted it, the plan's fields name the last submitter and decider, and the ``plan.approved`` webhook is
recorded once per approval and never for a refused one. Before the four-eyes check was made on the locked row, a
manager submitting and approving one plan at once approved their own plan in most trials.
"""

import random
from functools import partial

import pytest

from planning.models import CapacityPlan, PlanEvent, WebhookDelivery
from planning.plans import workflow
from planning.plans.forms import CapacityPlanForm
from portal.roles import MANAGER
from tests.factories import CapacityPlanFactory, PlanItemFactory
from tests.helpers.races import Portal, race
from tests.helpers.webhooks import make_hook

pytestmark = pytest.mark.django_db(transaction=True)

S = CapacityPlan.Status
TRIALS = 7
APPROVED = "plan.approved"


@pytest.fixture
def managers(live_server):
    """Three managers logged in: a plan's submitter and two others who may decide it."""
    make_hook("http://192.0.2.1/hook", events=(APPROVED,))  # recorded deliveries are what the test counts
    return [Portal(live_server.url, name, MANAGER) for name in ("alice", "bob", "carol")]


def new_plan(managers, status=S.DRAFT):
    """A plan with one bill-of-materials line, in ``status``: submitted by the first manager, rejected by the
    second."""
    plan = CapacityPlanFactory()
    PlanItemFactory(plan=plan)
    if status != S.DRAFT:
        workflow.submit(plan, managers[0].user)
    if status == S.REJECTED:
        workflow.reject(plan, managers[1].user, "not now")
    plan.refresh_from_db()
    assert plan.status == status
    return plan


def api_call(manager, plan, action):
    return partial(manager.api, "POST", f"/api/planning/plans/{plan.pk}/{action}/", {"comment": f"{action} race"})


def page_call(manager, plan, action):
    return partial(manager.post_page, manager.session(), f"/planning/capacity-plans/{plan.pk}/{action}/",
                   {"comment": f"{action} race"})


def assert_a_serial_outcome(plan):
    """The plan's events (from its creation) are a path of allowed moves; each decision made by someone other than the
    manager who submitted the plan just before; the stored fields agree with the last events; one webhook
    delivery per approval."""
    events = list(PlanEvent.objects.filter(plan=plan).order_by("at", "pk"))
    status, submitter = S.DRAFT, None
    for event in events:
        steps = [(e.from_status, e.to_status, e.username) for e in events]
        assert event.from_status == status and event.to_status in workflow.ALLOWED[status], steps
        if event.to_status == S.SUBMITTED:
            submitter = event.user_id
        elif event.to_status in (S.APPROVED, S.REJECTED):
            assert event.user_id != submitter, f"decided by its submitter: {steps}"
        status = event.to_status
    plan.refresh_from_db()
    assert plan.status == status
    if status in (S.SUBMITTED, S.APPROVED, S.REJECTED):
        assert plan.submitted_by_id == submitter
    if status in (S.APPROVED, S.REJECTED):
        assert plan.decided_by_id == events[-1].user_id
    approvals = sum(e.to_status == S.APPROVED for e in events)
    assert WebhookDelivery.objects.filter(event=APPROVED, payload__plan__id=plan.pk).count() == approvals
    return events


@pytest.mark.parametrize("call", [api_call, page_call], ids=["api", "page"])
def test_submitting_and_approving_at_once_never_approves_ones_own_plan(managers, call):
    """The adversary's finding: one manager posts submit and approve (several times) for a draft at once. Serially
    the approvals are refused either way (a draft cannot be approved; a plan cannot be approved by its
    submitter), so the plan ends submitted, and no approval webhook goes out."""
    alice = managers[0]
    for _ in range(TRIALS):
        plan = new_plan(managers)
        answers = race(call(alice, plan, "submit"), *(call(alice, plan, "approve") for _ in range(5)))
        assert all(a.status_code in (200, 400) for a in answers), [a.status_code for a in answers]
        events = assert_a_serial_outcome(plan)
        assert [e.to_status for e in events] == [S.SUBMITTED]


@pytest.mark.parametrize("call", [api_call, page_call], ids=["api", "page"])
def test_two_managers_deciding_at_once_decide_once(managers, call):
    """Approve ∥ approve ∥ reject ∥ reject by two other managers: exactly one decision, by one of them."""
    alice, bob, carol = managers
    for _ in range(TRIALS):
        plan = new_plan(managers, S.SUBMITTED)
        answers = race(call(bob, plan, "approve"), call(carol, plan, "approve"),
                       call(bob, plan, "reject"), call(carol, plan, "reject"))
        events = assert_a_serial_outcome(plan)
        assert len(events) == 2 and events[-1].user_id in (bob.user.pk, carol.user.pk)
        if call is api_call:
            assert sorted(a.status_code for a in answers) == [200, 400, 400, 400]


def test_any_mix_of_moves_by_anyone_ends_in_a_serial_outcome(managers):
    """Random races: a plan in any status, and submit, approve, reject and reopen from random managers through
    the API and the page at once. Every outcome is one that some serial order of the same calls reaches."""
    rng = random.Random(33)
    for _ in range(TRIALS * 2):
        start = rng.choice([S.DRAFT, S.SUBMITTED, S.REJECTED])
        plan = new_plan(managers, start)
        calls = [rng.choice([api_call, page_call])(rng.choice(managers), plan, rng.choice(list(workflow.TRANSITIONS)))
                 for _ in range(6)]
        race(*calls)
        assert_a_serial_outcome(plan)


def edit_form(plan, **changes):
    """What the plan's edit page posts back, as the browser fills it from the plan, with ``changes``."""
    form = CapacityPlanForm(instance=plan)
    values = {name: form[name].field.prepare_value(form[name].value()) for name in form.fields}
    return {**{name: value for name, value in values.items() if value is not None}, **changes}


def test_an_edit_racing_a_submit_never_changes_a_submitted_plan(managers):
    """Only a draft is edited. The edit page checked that before it locked the plan, so an edit arriving with a
    submit could rename the plan just submitted: serially it is renamed then submitted, or submitted and the
    edit refused, never changed after its submission."""
    alice, bob, _ = managers
    for trial in range(TRIALS):
        plan = new_plan(managers)
        edit = edit_form(plan, name=f"renamed {trial}")
        race(api_call(alice, plan, "submit"),
             partial(bob.post_page, bob.session(), f"/planning/capacity-plans/{plan.pk}/edit/", edit))
        records = list(plan.history.order_by("history_date", "history_id"))
        for before, after in zip(records, records[1:], strict=False):
            assert after.name == before.name or before.status == S.DRAFT, [(r.status, r.name) for r in records]
        assert_a_serial_outcome(plan)

