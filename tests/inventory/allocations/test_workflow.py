"""Allocation requests and their decisions (``inventory.allocations.workflow``): who may ask, four eyes, a second
manager above the threshold, overlaps refused, changes and renewals written to the allocation with its history."""

from datetime import date

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import override_settings

from inventory.allocations import workflow
from inventory.models import AllocationRequest, Team, TeamAllocation, TeamMember
from portal.roles import MANAGER, RESEARCHER
from tests.helpers.accounts import make_user

R = AllocationRequest


@pytest.fixture
def people(db):
    team = Team.objects.create(name="vision")
    lead = make_user("lead", RESEARCHER)  # the team's own manager
    TeamMember.objects.create(team=team, user=lead, role="manager")
    member = make_user("member", RESEARCHER)
    TeamMember.objects.create(team=team, user=member)
    return {"team": team, "lead": lead, "member": member, "outsider": make_user("outsider", RESEARCHER),
            "ann": make_user("ann", MANAGER), "bob": make_user("bob", MANAGER)}


def ask(people, who="lead", **terms):
    values = {"start": date(2027, 1, 1), "end": date(2027, 3, 31), "gpu_hours": 20_000, "max_gpus": 32, **terms}
    return workflow.request(people[who], people["team"], "pretraining run", **values)


def test_a_team_manager_asks_and_a_manager_approves(people):
    pending = ask(people)
    assert pending.status == R.Status.PENDING and pending.approvals_needed == 1
    with pytest.raises(PermissionDenied, match="Only managers"):
        workflow.approve(pending, people["member"])
    done = workflow.approve(pending, people["ann"], "ok")
    assert done.status == R.Status.APPROVED and done.decided_by == people["ann"]
    allocation = TeamAllocation.objects.get()
    assert (allocation.team, allocation.gpu_hours, allocation.max_gpus, allocation.start, allocation.end) == (
        people["team"], 20_000, 32, date(2027, 1, 1), date(2027, 3, 31))
    assert done.allocation == allocation
    assert allocation.history.get().history_change_reason == f"New allocation request #{pending.pk} approved"


def test_members_and_outsiders_may_not_ask(people):
    for who in ("member", "outsider"):
        with pytest.raises(PermissionDenied):
            ask(people, who)
    assert not R.objects.exists()


def test_four_eyes_the_requester_never_approves(people):
    pending = ask(people, "ann")
    with pytest.raises(PermissionDenied, match="Four eyes"):
        workflow.approve(pending, people["ann"])
    assert workflow.approve(pending, people["bob"]).status == R.Status.APPROVED


@override_settings(ALLOCATION_SECOND_APPROVAL_GPU_HOURS=10_000)
def test_a_big_budget_needs_two_managers_each_once(people):
    pending = ask(people)
    assert pending.approvals_needed == 2
    assert workflow.approve(pending, people["ann"]).status == R.Status.PENDING
    assert not TeamAllocation.objects.exists()
    with pytest.raises(PermissionDenied, match="already"):
        workflow.approve(pending, people["ann"])
    assert workflow.approve(pending, people["bob"]).status == R.Status.APPROVED
    assert TeamAllocation.objects.count() == 1
    with pytest.raises(ValidationError, match="approved"):
        workflow.approve(pending, make_user("cid", MANAGER))


def test_an_overlapping_allocation_is_refused_a_renewal_follows_and_a_change_changes(people):
    first = workflow.approve(ask(people), people["ann"]).allocation
    with pytest.raises(ValidationError) as refused:
        ask(people, start=date(2027, 3, 1), end=date(2027, 4, 30))
    assert "already has an allocation" in str(refused.value.message_dict["start"])
    ask(people, partition="debug")  # another partition: no overlap
    renewal = workflow.request(people["lead"], None, "next quarter", kind=R.Kind.RENEWAL, allocation=first)
    assert (renewal.start, renewal.end, renewal.gpu_hours) == (date(2027, 4, 1), date(2027, 6, 29), 20_000)
    second = workflow.approve(renewal, people["bob"]).allocation
    assert second != first and TeamAllocation.objects.count() == 2
    change = workflow.request(people["lead"], None, "more", kind=R.Kind.CHANGE, allocation=first, gpu_hours=30_000)
    workflow.approve(change, people["ann"])
    first.refresh_from_db()
    assert first.gpu_hours == 30_000 and first.max_gpus == 32
    assert [record.gpu_hours for record in first.history.order_by("history_date")] == [20_000, 30_000]
    stretch = workflow.request(people["lead"], None, "longer", kind=R.Kind.CHANGE, allocation=first,
                               end=date(2027, 4, 15))
    with pytest.raises(ValidationError, match="already has an allocation"):  # into the renewal's days
        workflow.approve(stretch, people["bob"])
    assert R.objects.get(pk=stretch.pk).status == R.Status.PENDING  # the approval was rolled back with it


def test_reject_needs_a_reason_and_withdraw_is_the_requesters(people):
    pending = ask(people)
    with pytest.raises(ValidationError):
        workflow.reject(pending, people["ann"], " ")
    with pytest.raises(PermissionDenied):
        workflow.withdraw(pending, people["member"])
    assert workflow.reject(pending, people["ann"], "too much").status == R.Status.REJECTED
    with pytest.raises(ValidationError, match="rejected"):
        workflow.withdraw(pending, people["lead"])
    assert workflow.withdraw(ask(people), people["lead"]).status == R.Status.WITHDRAWN


def test_bad_terms_are_field_errors(people):
    with pytest.raises(ValidationError) as refused:
        ask(people, gpu_hours=None, max_gpus=None, end=date(2026, 12, 1))
    assert set(refused.value.message_dict) >= {"gpu_hours", "end"}
