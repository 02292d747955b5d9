"""Allocation requests raced against a live server on PostgreSQL: approvals, rejections and withdrawals sent at the
same moment, from the API and from the request's page, by several managers and the requester. Whatever arrives
together, the stored outcome is one some serial order reaches: one decision; no approval by the requester nor
twice by one manager; an allocation written once, only when enough managers approved; never two allocations of one
team, scope and day."""

from datetime import date
from functools import partial

import pytest
from django.test import override_settings

from inventory.allocations import workflow
from inventory.models import AllocationApproval, AllocationRequest, Team, TeamAllocation, TeamMember
from portal.roles import MANAGER
from tests.helpers.races import Portal, race

pytestmark = pytest.mark.django_db(transaction=True)

R = AllocationRequest
TRIALS = 5


@pytest.fixture
def people(live_server):
    return [Portal(live_server.url, name, MANAGER) for name in ("alice", "bob", "carol")]


def ask(requester, team, start=date(2027, 1, 1), gpu_hours=1000):
    return workflow.request(requester.user, team, "race", start=start, end=date(2027, 3, 31), gpu_hours=gpu_hours)


def api_call(manager, pending, action):
    return partial(manager.api, "POST", f"/api/inventory/allocation-requests/{pending.pk}/{action}/",
                   {"comment": f"{action} race"})


def page_call(manager, pending, action):
    return partial(manager.post_page, manager.session(), f"/inventory/allocations/requests/{pending.pk}/decide/",
                   {"action": action, "comment": f"{action} race"})


def assert_a_serial_outcome(pending):
    pending.refresh_from_db()
    approvers = list(AllocationApproval.objects.filter(request=pending).values_list("user_id", flat=True))
    assert pending.requested_by_id not in approvers and len(approvers) == len(set(approvers))
    if pending.status == R.Status.APPROVED:
        assert len(approvers) == pending.approvals_needed and pending.decided_by_id == approvers[-1]
        assert TeamAllocation.objects.filter(requests=pending).count() == 1
    else:
        assert len(approvers) < pending.approvals_needed or pending.status != R.Status.PENDING
        assert pending.allocation_id is None
    return pending


@pytest.mark.parametrize("call", [api_call, page_call], ids=["api", "page"])
def test_deciding_at_once_decides_once(people, call):
    alice, bob, carol = people
    for trial in range(TRIALS):
        team = Team.objects.create(name=f"race-{call.__name__[:3]}-{trial}")
        pending = ask(alice, team)
        race(call(bob, pending, "approve"), call(carol, pending, "approve"), call(alice, pending, "approve"),
             call(bob, pending, "reject"), call(alice, pending, "withdraw"))
        assert_a_serial_outcome(pending)
        assert TeamAllocation.objects.filter(team=team).count() == (pending.status == R.Status.APPROVED)


@override_settings(ALLOCATION_SECOND_APPROVAL_GPU_HOURS=500)
def test_two_approvals_needed_two_given_at_once(people):
    """A big request approved by both other managers at once: both approvals count, the allocation once."""
    alice, bob, carol = people
    for trial in range(TRIALS):
        pending = ask(alice, Team.objects.create(name=f"race-big-{trial}"))
        answers = race(api_call(bob, pending, "approve"), api_call(carol, pending, "approve"),
                       api_call(bob, pending, "approve"))
        assert sorted(a.status_code for a in answers) in ([200, 200, 400], [200, 200, 403]), answers
        assert assert_a_serial_outcome(pending).status == R.Status.APPROVED


def test_two_overlapping_requests_approved_at_once_give_one_allocation(people):
    alice, bob, carol = people
    for trial in range(TRIALS):
        team = Team.objects.create(name=f"race-overlap-{trial}")
        TeamMember.objects.create(team=team, user=alice.user, role="manager")
        first, second = ask(alice, team), ask(alice, team, start=date(2027, 2, 1))
        answers = race(api_call(bob, first, "approve"), api_call(carol, second, "approve"))
        assert sorted(a.status_code for a in answers) == [200, 400], [a.text for a in answers]
        assert TeamAllocation.objects.filter(team=team).count() == 1
