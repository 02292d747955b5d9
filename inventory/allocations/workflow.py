"""Requests for allocations and their decisions: the one service the pages and the API call.

    pending → approved   (enough managers approved: one, or two from ALLOCATION_SECOND_APPROVAL_GPU_HOURS)
            → rejected   (a manager)
            → withdrawn  (its requester or a manager)

A request is new (an allocation for a team), a change (of an allocation's limits or period) or a renewal (the same
terms for the period after an allocation's). When the last approval needed arrives, the request writes the
allocation: a new one for a new request or a renewal, the same one for a change, its change record naming the
request. Each service locks the request's row and checks its status and who acts on the row as stored then; writing
an allocation also locks the team's row, so that two approvals racing cannot give a team two allocations of the same
scope on the same day.
"""

from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from ..teams.models import Team
from .models import AllocationApproval, AllocationRequest, TeamAllocation

R = AllocationRequest
TERMS = ("partition", "gpu_model", "start", "end", "gpu_hours", "max_gpus", "fairshare")


def request(user, team, reason, kind=R.Kind.NEW, allocation=None, **terms):
    """A pending request by ``user`` for ``team`` (a change or renewal: of ``allocation``, its terms by default, a
    renewal's period the one after it, as long). Raises ``PermissionDenied`` or ``ValidationError`` (by field)."""
    if allocation is not None:
        team = allocation.team
    if not user.has_perm("inventory.request_allocation", team):
        raise PermissionDenied("Only a manager or one of the team's managers may request its allocations.")
    if kind != R.Kind.NEW and allocation is None:
        raise ValidationError({"allocation": "A change or a renewal names the allocation it changes or renews."})
    if kind == R.Kind.NEW and allocation is not None:
        raise ValidationError({"allocation": "A new allocation changes none; ask for a change or a renewal."})
    values = {**default_terms(allocation, kind), **{name: value for name, value in terms.items() if name in TERMS}}
    pending = R(team=team, kind=kind, allocation=allocation, reason=reason, requested_by=user, **values)
    pending.full_clean()
    if kind != R.Kind.CHANGE:
        check_no_overlap(pending)
    pending.save()
    return pending


def default_terms(allocation, kind):
    """What a change or a renewal of ``allocation`` asks for unless told otherwise: its terms (a renewal: for the
    period after it, as long)."""
    if allocation is None:
        return {}
    terms = {name: getattr(allocation, name) for name in TERMS}
    if kind == R.Kind.RENEWAL:
        terms["start"] = allocation.end + timedelta(days=1)
        terms["end"] = terms["start"] + (allocation.end - allocation.start)
    return terms


def check_no_overlap(terms, except_allocation=None):
    """Raise ``ValidationError`` when the team already has an allocation of the same partition and GPU model on one
    of the days of ``terms``."""
    clash = (TeamAllocation.objects.filter(team=terms.team, partition=terms.partition, gpu_model=terms.gpu_model,
                                           start__lte=terms.end, end__gte=terms.start)
             .exclude(pk=getattr(except_allocation, "pk", None)).first())
    if clash is not None:
        raise ValidationError({"start": f"The team already has an allocation of {clash.scope} from {clash.start} to "
                                        f"{clash.end}: ask for a change of it, or a renewal after it."})


@transaction.atomic
def _locked(pending):
    return R.objects.select_for_update().get(pk=pending.pk)


@transaction.atomic
def approve(pending, user, comment=""):
    """``user``'s approval of ``pending``; with the last one needed, the allocation is written. Returns the request
    as stored after it."""
    pending = _locked(pending)
    if not pending.is_pending:
        raise ValidationError(f"The request is {pending.get_status_display().lower()}; only a pending one can be "
                              "approved.")
    if not user.has_perm("inventory.decide_allocation_request", pending):
        if pending.requested_by_id == user.pk:
            raise PermissionDenied("Four eyes: a request is approved by a manager other than its requester.")
        if pending.approvals.filter(user=user).exists():
            raise PermissionDenied("You approved this request already: it needs another manager's approval.")
        raise PermissionDenied("Only managers approve allocations.")
    AllocationApproval.objects.create(request=pending, user=user, comment=comment or "")
    if pending.approvals.count() >= pending.approvals_needed:
        pending.allocation = write_allocation(pending)
        _decide(pending, R.Status.APPROVED, user, comment)
    return pending


def write_allocation(pending):
    """The allocation ``pending`` grants, written under the team's lock."""
    Team.objects.select_for_update().get(pk=pending.team_id)
    if pending.kind == R.Kind.CHANGE:
        allocation = TeamAllocation.objects.select_for_update().get(pk=pending.allocation_id)
        check_no_overlap(pending, except_allocation=allocation)
    else:
        check_no_overlap(pending)
        allocation = TeamAllocation(team_id=pending.team_id)
    for name in TERMS:
        setattr(allocation, name, getattr(pending, name))
    allocation._change_reason = f"{pending.get_kind_display()} request #{pending.pk} approved"
    allocation.save()
    return allocation


@transaction.atomic
def reject(pending, user, comment):
    """A manager's rejection of ``pending``, with the reason (required)."""
    if not (comment or "").strip():
        raise ValidationError({"comment": "Say why the request is rejected: the team reads it."})
    pending = _locked(pending)
    if not pending.is_pending:
        raise ValidationError(f"The request is {pending.get_status_display().lower()}; only a pending one can be "
                              "rejected.")
    if not user.has_perm("inventory.decide_allocation_request", pending):
        raise PermissionDenied("Only a manager other than its requester rejects a request.")
    return _decide(pending, R.Status.REJECTED, user, comment)


@transaction.atomic
def withdraw(pending, user, comment=""):
    """The requester (or a manager) takes back a pending request."""
    pending = _locked(pending)
    if not user.has_perm("inventory.withdraw_allocation_request", pending):
        if not pending.is_pending:
            raise ValidationError(f"The request is {pending.get_status_display().lower()} already.")
        raise PermissionDenied("Only its requester or a manager withdraws a request.")
    return _decide(pending, R.Status.WITHDRAWN, user, comment)


def _decide(pending, status, user, comment):
    pending.status, pending.decided_by, pending.decided_at = status, user, timezone.now()
    pending.decision_comment = comment or ""
    pending._change_reason = f"pending → {status}"
    pending.save()
    return pending
