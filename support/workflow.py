"""The ticket workflow: every change of status, assignee or priority, and every comment, goes through here,
so pages, API and tasks keep the SLA clock and send the same notices.

    new → triaged → in progress ⇄ waiting on vendor / waiting on requester → resolved → closed
                                                                             resolved → in progress (reopen)

Support staff (``support.work_tickets``, see ``support.policy``) may make any allowed move. A requester may answer
a ticket waiting on them (back to in progress: a comment of theirs does it too), confirm a resolution (close),
reopen a resolved ticket, and withdraw a new one (close).

Every change locks the ticket's row and reads it again first (``lock``), so two requests racing apply one after
the other, each to what the other stored: no change is lost, and a move is checked against the status as stored
(a double submit of "close" then "reopen" leaves the ticket closed). A move may name the status it was asked
from (``expected``, what the page showed): if that is no longer the stored one it is refused (``StaleStatus``).
"""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from . import notifications, policy, sla
from .models import Ticket, TicketComment

S = Ticket.Status
HISTORY_REASON_LENGTH = 100

ALLOWED = {
    S.NEW: {S.TRIAGED, S.IN_PROGRESS, S.WAITING_VENDOR, S.WAITING_REQUESTER, S.RESOLVED, S.CLOSED},
    S.TRIAGED: {S.IN_PROGRESS, S.WAITING_VENDOR, S.WAITING_REQUESTER, S.RESOLVED, S.CLOSED},
    S.IN_PROGRESS: {S.TRIAGED, S.WAITING_VENDOR, S.WAITING_REQUESTER, S.RESOLVED},
    S.WAITING_VENDOR: {S.IN_PROGRESS, S.WAITING_REQUESTER, S.RESOLVED},
    S.WAITING_REQUESTER: {S.IN_PROGRESS, S.WAITING_VENDOR, S.RESOLVED, S.CLOSED},
    S.RESOLVED: {S.IN_PROGRESS, S.CLOSED},
    S.CLOSED: set(),
}
REQUESTER_MOVES = {(S.WAITING_REQUESTER, S.IN_PROGRESS), (S.RESOLVED, S.CLOSED), (S.RESOLVED, S.IN_PROGRESS),
                   (S.NEW, S.CLOSED)}


class StaleStatus(ValidationError):
    """The ticket is no longer in the status the request was made from (someone moved it meanwhile)."""

    def __init__(self, ticket, expected, target):
        self.current = ticket.status
        super().__init__({"status": f"Ticket #{ticket.pk} is now {S(ticket.status).label.lower()}, not "
                                    f"{S(expected).label.lower()}: someone changed it meanwhile, so it was not "
                                    f"moved to {S(target).label.lower()}."})


def lock(ticket):
    """Lock the ticket's row until the transaction ends and read every stored field into ``ticket`` again
    (callers set their changes after this, never before)."""
    ticket.refresh_from_db(from_queryset=Ticket.objects.select_for_update(of=("self",)))
    return ticket


def is_staff(user):
    """Support staff (``user`` None: the system, which is not)."""
    return user is not None and user.has_perm("support.work_tickets")


def allowed_targets(ticket, user=None):
    """Statuses ``user`` may move the ticket to now (``user`` None: the system, any allowed move)."""
    targets = ALLOWED[S(ticket.status)]
    if user is not None and not is_staff(user):
        if not user.has_perm("support.change_status", ticket):
            return []
        targets = {target for target in targets if (ticket.status, target) in REQUESTER_MOVES}
    return [s for s in S if s in targets]


def save_ticket(ticket, user, reason=""):
    ticket._change_reason = reason[:HISTORY_REASON_LENGTH]
    if user is not None and user.is_authenticated:
        ticket._history_user = user
    ticket.save()


def record_response(ticket, user, now=None):
    """The first action of support staff on a ticket is its first response."""
    if ticket.first_response_at is None and is_staff(user):
        ticket.first_response_at = now or timezone.now()


@transaction.atomic
def open_ticket(ticket, user=None, notify=True):
    """Save a new ticket with its SLA due times; tell the people concerned."""
    if user is not None and user.is_authenticated and ticket.requester_id is None \
            and ticket.source == Ticket.Source.PERSON:
        ticket.requester = user
    ticket.fill_site()
    sla.apply_policy(ticket)
    save_ticket(ticket, user, "Opened")
    if notify:
        notifications.notify(ticket, notifications.CREATED, actor=user)
    return ticket


@transaction.atomic
def change_status(ticket, target, user=None, note="", now=None, notify=True, expected=None, changes=None):
    """Move the ticket to ``target``; raises ``ValidationError`` (field ``status``) if not allowed, and
    ``StaleStatus`` if ``expected`` is given and no longer the stored status. ``changes`` (field: value) are
    saved with the move, in the same history record."""
    if target not in S.values:
        raise ValidationError({"status": f"'{target}' is not a ticket status."})
    lock(ticket)
    if expected and ticket.status != expected:
        raise StaleStatus(ticket, expected, target)
    if target == ticket.status:
        return ticket
    for name, value in (changes or {}).items():
        setattr(ticket, name, value)
    if target not in allowed_targets(ticket, user):
        allowed = ", ".join(S(s).label for s in allowed_targets(ticket, user)) or "none"
        raise ValidationError({"status": f"Cannot go from {S(ticket.status).label} to {S(target).label}; "
                                         f"allowed here: {allowed}."})
    now = now or timezone.now()
    previous = ticket.status
    if previous == S.WAITING_REQUESTER:
        sla.resume(ticket, now)
    if target == S.WAITING_REQUESTER:
        sla.pause(ticket, now)
    record_response(ticket, user, now)
    if target == S.RESOLVED:
        ticket.resolved_at = now
    elif target == S.CLOSED:
        ticket.closed_at = now
        ticket.resolved_at = ticket.resolved_at or now
    elif previous in Ticket.CLOSED_STATES:  # reopened: the resolution clock runs again
        ticket.resolved_at = None
    ticket.status = target
    save_ticket(ticket, user, note or f"{S(previous).label} → {S(target).label}")
    if note:
        add_comment(ticket, user, note, notify=False)
    if notify:
        notifications.notify(ticket, notifications.STATUS, actor=user, note=note)
    return ticket


@transaction.atomic
def set_fields(ticket, user, reason, **values):
    """Save plain fields (e.g. the RMA number) on the locked, freshly read ticket."""
    lock(ticket)
    for name, value in values.items():
        setattr(ticket, name, value)
    save_ticket(ticket, user, reason)
    return ticket


ASSET_FIELDS = ("site", "node", "gpu", "switch", "storage_system")


@transaction.atomic
def edit(ticket, user, changes, reason="Edited"):
    """Save ``changes`` (field: value) on the locked, freshly read ticket, for the edit page and the API alike:
    another asset brings its own SLA (the due times computed again); a priority and an assignee go through
    ``set_priority`` and ``assign`` (SLA, first response, notices)."""
    changes = dict(changes)
    priority, has_assignee = changes.pop("priority", None), "assignee" in changes
    assignee = changes.pop("assignee", None)
    lock(ticket)
    assets = [getattr(ticket, f"{name}_id") for name in ASSET_FIELDS]
    for name, value in changes.items():
        setattr(ticket, name, value)
    if assets != [getattr(ticket, f"{name}_id") for name in ASSET_FIELDS]:
        sla.apply_policy(ticket)
    save_ticket(ticket, user, reason)
    if priority:
        set_priority(ticket, priority, user)
    if has_assignee:
        assign(ticket, assignee, user)
    return ticket


@transaction.atomic
def assign(ticket, assignee, user=None, notify=True, now=None):
    lock(ticket)
    if ticket.assignee_id == (assignee.pk if assignee else None):
        return ticket
    if assignee is not None and not is_staff(assignee):
        raise ValidationError({"assignee": f"{assignee.get_username()} is not support staff."})
    ticket.assignee = assignee
    record_response(ticket, user, now)
    save_ticket(ticket, user, f"Assigned to {assignee.get_username()}" if assignee else "Unassigned")
    if notify:
        notifications.notify(ticket, notifications.ASSIGNED, actor=user)
    return ticket


@transaction.atomic
def set_priority(ticket, priority, user=None):
    """A new priority brings the SLA for it: the due times are computed again from when the ticket opened."""
    if priority not in Ticket.Priority.values:
        raise ValidationError({"priority": f"'{priority}' is not a priority."})
    lock(ticket)
    if priority == ticket.priority:
        return ticket
    ticket.priority = priority
    sla.apply_policy(ticket)
    record_response(ticket, user)
    save_ticket(ticket, user, f"Priority {priority}")
    return ticket


@transaction.atomic
def add_comment(ticket, user, body, internal=False, notify=True, now=None):
    """A comment; support staff's first public comment is the first response, and the requester's answer to a
    ticket waiting on them sets it back in progress (the SLA clock runs again)."""
    if internal and not (user is not None and user.has_perm("support.internal_comments")):
        raise ValidationError({"internal": "Only support staff write internal comments."})
    lock(ticket)
    now = now or timezone.now()
    comment = TicketComment.objects.create(
        ticket=ticket, author=user if user is not None and user.is_authenticated else None,
        author_name=user.get_username() if user is not None and user.is_authenticated else "system",
        body=body, internal=internal, created=now,
    )
    if not internal and is_staff(user) and ticket.first_response_at is None:
        ticket.first_response_at = now
        save_ticket(ticket, user, "First response")
    if ticket.status == S.WAITING_REQUESTER and user is not None and policy.is_requester(user, ticket):
        change_status(ticket, S.IN_PROGRESS, user, now=now, notify=False)
    if notify:
        notifications.notify(ticket, notifications.COMMENTED, actor=user, comment=comment)
    return comment
