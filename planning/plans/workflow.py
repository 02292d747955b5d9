"""The capacity plan workflow and its bill of materials.

    draft → submitted → approved
                      → rejected → draft (reopened)

A plan is created as a draft (``create``: a recommendation accepted records it as the plan's first event) and
edited (workloads, bill of materials) only while draft. Approval is a second manager's: the user
who submitted the plan cannot approve it. Every step records a ``PlanEvent`` (who, when, from, to, comment);
approval emits the ``plan.approved`` webhook event with the bill of materials.
"""

from collections import defaultdict

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from portal import events

from ..policy import not_its_submitter
from . import months
from .models import CapacityPlan, PlanEvent

S = CapacityPlan.Status

ALLOWED = {
    S.DRAFT: {S.SUBMITTED},
    S.SUBMITTED: {S.APPROVED, S.REJECTED},
    S.REJECTED: {S.DRAFT},
    S.APPROVED: set(),
}


def check_editable(plan):
    """Raise ``ValidationError`` unless the plan is a draft (the only status in which it may change)."""
    if not plan.is_draft:
        raise ValidationError(f"The plan is {plan.get_status_display().lower()}; only a draft plan can be changed.")


def check_transition(plan, target):
    if target not in ALLOWED[plan.status]:
        options = ", ".join(S(s).label.lower() for s in S if s in ALLOWED[plan.status]) or "none"
        raise ValidationError(f"A {plan.get_status_display().lower()} plan cannot become "
                              f"{S(target).label.lower()}; allowed from here: {options}.")


@transaction.atomic
def _move(plan, target, user, comment, check=None, **fields):
    """Lock the plan's row, then check the transition on what is stored — the status it moves from, and
    ``check(plan, user)``: who may make it — make it and record its event; ``fields`` are set on the plan as well.
    Nothing is checked on the plan the caller loaded: two requests racing are applied one after the other, each
    checked against what the other stored (a submit racing an approval by the same manager: the approval sees
    the plan submitted by that manager and is refused)."""
    plan = CapacityPlan.objects.select_for_update().get(pk=plan.pk)
    check_transition(plan, target)
    if check is not None:
        check(plan, user)
    previous, plan.status = plan.status, target
    for name, value in fields.items():
        setattr(plan, name, value)
    plan._change_reason = f"{previous} → {target}"
    plan.save()
    PlanEvent.objects.create(plan=plan, user=user, username=user.get_username(), from_status=previous,
                             to_status=target, comment=comment or "")
    return plan


def create(user, comment="", **fields):
    """A new draft plan owned by ``user``, its creation recorded as its first event (draft → draft, ``comment``
    saying where it comes from: a recommendation accepted)."""
    plan = CapacityPlan.objects.create(owner=user, **fields)
    PlanEvent.objects.create(plan=plan, user=user, username=user.get_username(), from_status=S.DRAFT,
                             to_status=S.DRAFT, comment=comment or "")
    return plan


def note(plan, user, comment):
    """An event that changes no status: what was done to the draft plan on its creation (its bill filled)."""
    return PlanEvent.objects.create(plan=plan, user=user, username=user.get_username(), from_status=plan.status,
                                    to_status=plan.status, comment=comment)


def check_has_lines(plan, user):
    if not plan.items.exists():
        raise ValidationError("A plan needs at least one bill-of-materials line before it is submitted.")


def check_second_manager(plan, user):
    """Four eyes, on the locked plan (which ``check_transition`` found submitted)."""
    if not not_its_submitter(user, plan):
        raise ValidationError("A second manager approves or rejects: you submitted this plan.")


def submit(plan, user, comment=""):
    return _move(plan, S.SUBMITTED, user, comment, check=check_has_lines, submitted_by=user,
                 submitted_at=timezone.now())


@transaction.atomic  # the approval and its webhook delivery are stored together, or neither
def approve(plan, user, comment=""):
    plan = _move(plan, S.APPROVED, user, comment, check=check_second_manager, decided_by=user,
                 decided_at=timezone.now())
    events.emit("plan.approved", {
        "plan": {"id": plan.pk, "name": plan.name, "first_month": months.label(plan.first_month),
                 "last_month": months.label(plan.last_month), "horizon_months": plan.horizon_months,
                 "approved_by": user.get_username(), "approved_at": plan.decided_at, "comment": comment or ""},
        "bill_of_materials": bill_of_materials(plan),
    })
    return plan


def reject(plan, user, comment=""):
    if not (comment or "").strip():
        raise ValidationError("Say why the plan is rejected (comment).")
    return _move(plan, S.REJECTED, user, comment, check=check_second_manager, decided_by=user,
                 decided_at=timezone.now())


def reopen(plan, user, comment=""):
    """A rejected plan back to draft, to be revised and submitted again."""
    return _move(plan, S.DRAFT, user, comment, submitted_by=None, submitted_at=None, decided_by=None,
                 decided_at=None)


TRANSITIONS = {"submit": submit, "approve": approve, "reject": reject, "reopen": reopen}


def bill_of_materials(plan):
    """The plan's items with their line totals, the grand total per currency and how much of it is estimated
    (lines whose price nobody confirmed yet)."""
    lines, totals, estimated = [], defaultdict(int), defaultdict(int)
    for item in plan.items.select_related("node_model", "gpu_model", "price_confirmed_by"):
        lines.append({
            "id": item.pk, "item": item.what, "node_model": item.node_model_id, "gpu_model": item.gpu_model_id,
            "description": item.description, "note": item.note, "quantity": item.quantity,
            "unit_cost": item.unit_cost, "currency": item.currency, "total": item.total,
            "price_estimated": item.price_estimated,
            "price_confirmed_by": item.price_confirmed_by.username if item.price_confirmed_by else None,
            "price_confirmed_at": item.price_confirmed_at,
        })
        totals[item.currency] += item.total
        if item.price_estimated:
            estimated[item.currency] += item.total
    return {"lines": lines, "totals": dict(sorted(totals.items())),
            "estimated": {currency: estimated.get(currency, 0) for currency in sorted(totals)}}
