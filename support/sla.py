"""SLA computation: plain functions over a ticket, no HTTP.

- ``policy_for(ticket)``: the response and resolution hours for the ticket's priority, from the active support
  contract covering its asset (a GPU is covered through its node, rack and site; see ``planning.contracts.coverage``).
  Where several cover it, the strictest promise wins; where none does (or it has no term for the priority),
  ``settings.SUPPORT_DEFAULT_SLA`` applies.
- ``apply_policy(ticket)``: sets ``response_due`` and ``resolution_due`` = opened + hours + time paused.
- ``pause`` / ``resume``: the clock stops while the ticket waits on the requester; resuming moves both due
  times later by the time paused.
- ``state(ticket, now)``: ``met``, ``breached``, ``breaching soon``, ``paused`` or ``ok``, for lists and pages.
- ``announce_breaches(now)``: the ``ticket.sla_breached`` business event for each clock that ran out lately.
"""

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from planning.contracts import coverage
from planning.models import Contract, SLATerm
from portal import events

OK, SOON, BREACHED, PAUSED, MET = "ok", "breaching soon", "breached", "paused", "met"


@dataclass(frozen=True)
class Policy:
    response_hours: Decimal
    resolution_hours: Decimal
    contract: Contract | None = None

    @property
    def label(self):
        source = f"contract {self.contract}" if self.contract else "default policy"
        return f"respond {self.response_hours:g} h, resolve {self.resolution_hours:g} h ({source})"


def default_policy(priority):
    response, resolution = settings.SUPPORT_DEFAULT_SLA[priority]
    return Policy(Decimal(response), Decimal(resolution))


def covering_support_contracts(ticket, day=None):
    """Active support contracts covering the ticket's most specific asset."""
    kinds = [Contract.Kind.SUPPORT]
    if ticket.gpu_id:
        return coverage.contracts_covering_gpu(ticket.gpu, day, kinds)
    if ticket.node_id:
        return coverage.contracts_covering_node(ticket.node, day, kinds)
    active = coverage.active_contracts(day, kinds)
    if ticket.switch_id:
        match = Q(switches=ticket.switch_id) | Q(sites=ticket.switch.site_id)
        if ticket.switch.rack_id:
            match |= Q(racks=ticket.switch.rack_id)
    elif ticket.storage_system_id:
        match = Q(storage_systems=ticket.storage_system_id) | Q(sites=ticket.storage_system.site_id)
    elif ticket.site_id:
        match = Q(sites=ticket.site_id)
    else:
        return active.none()
    return active.filter(pk__in=Contract.objects.filter(match).values("pk"))


def policy_for(ticket, day=None):
    """The SLA for the ticket's priority: the strictest covering support contract's term, else the default."""
    if day is None and ticket.opened:
        day = timezone.localtime(ticket.opened).date()
    terms = (SLATerm.objects.filter(contract__in=covering_support_contracts(ticket, day), priority=ticket.priority)
             .select_related("contract").order_by("resolution_hours", "response_hours", "contract_id"))
    term = terms.first()
    if term is None:
        return default_policy(ticket.priority)
    return Policy(term.response_hours, term.resolution_hours, term.contract)


def _hours(value):
    return timedelta(hours=float(value))


def apply_policy(ticket, policy=None):
    """Set the ticket's due times (and the contract they come from) from its priority and asset."""
    policy = policy or policy_for(ticket)
    ticket.sla_contract = policy.contract
    paused = timedelta(seconds=ticket.paused_seconds)
    ticket.response_due = ticket.opened + _hours(policy.response_hours) + paused
    ticket.resolution_due = ticket.opened + _hours(policy.resolution_hours) + paused
    return policy


def pause(ticket, now=None):
    if ticket.paused_since is None:
        ticket.paused_since = now or timezone.now()


def resume(ticket, now=None):
    """End a pause: the time waited on the requester moves both due times later."""
    if ticket.paused_since is None:
        return timedelta(0)
    waited = max((now or timezone.now()) - ticket.paused_since, timedelta(0))
    ticket.paused_seconds += int(waited.total_seconds())
    if ticket.response_due:
        ticket.response_due += waited
    if ticket.resolution_due:
        ticket.resolution_due += waited
    ticket.paused_since = None
    return waited


def effective_due(ticket, field, now=None):
    """A due time as it stands now: a running pause pushes it later by the time paused so far."""
    due = getattr(ticket, field)
    if due is not None and ticket.paused_since is not None:
        due += max((now or timezone.now()) - ticket.paused_since, timedelta(0))
    return due


def next_due(ticket, now=None):
    """What the running clock counts down to: the first response, then the resolution."""
    if ticket.first_response_at is None:
        return effective_due(ticket, "response_due", now)
    return effective_due(ticket, "resolution_due", now)


def state(ticket, now=None):
    """``met`` / ``breached`` for a resolved ticket; ``paused``, ``breached``, ``breaching soon`` or ``ok``
    for an open one."""
    now = now or timezone.now()
    if not ticket.is_open:
        if ticket.resolution_due is None:
            return MET
        late_response = ticket.first_response_at is None or ticket.first_response_at > ticket.response_due
        late = ticket.resolved_at is None or ticket.resolved_at > ticket.resolution_due
        return BREACHED if late or late_response else MET
    if ticket.response_due is None:
        return OK
    breached_response = ticket.first_response_at is not None and ticket.first_response_at > ticket.response_due
    due = next_due(ticket, now)
    if breached_response or due <= now:
        return BREACHED
    if ticket.paused_since is not None:
        return PAUSED
    if due <= now + timedelta(hours=settings.SUPPORT_BREACHING_SOON_HOURS):
        return SOON
    return OK


def remaining(ticket, now=None):
    """Time left on the running clock (negative when breached), or None."""
    due = next_due(ticket, now)
    return due - (now or timezone.now()) if due else None


BREACH_LOOKBACK = timedelta(days=1)  # a clock that ran out longer ago than this is no news


def announce_breaches(now=None, lookback=BREACH_LOOKBACK):
    """Emit ``ticket.sla_breached`` for each open ticket whose running clock ran out within ``lookback`` (beat runs
    this every few minutes: the same breach told again is the same event, which a subscriber records once).
    Returns how many were told."""
    from .models import Ticket

    now = now or timezone.now()
    since = now - lookback
    told = 0
    lately = Q(first_response_at__isnull=True, response_due__gt=since) | Q(resolution_due__gt=since)
    for ticket in Ticket.objects.due_before(now).filter(lately).select_related("team", "node"):
        due = next_due(ticket, now)
        if due is None or due <= since:
            continue
        events.emit("ticket.sla_breached", {
            "ticket_id": ticket.pk, "title": ticket.title, "priority": ticket.get_priority_display(),
            "clock": "response" if ticket.first_response_at is None else "resolution", "due": due,
            "team": ticket.team.name if ticket.team_id else None, "requester_id": ticket.requester_id,
            "node": ticket.node.hostname if ticket.node_id else None,
        })
        told += 1
    return told
