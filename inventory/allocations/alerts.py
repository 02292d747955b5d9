"""Warnings when a team's use crosses a share of an allocation's budget (``ALLOCATION_ALERT_LEVELS``: 80 and 100 %):
each level once per allocation (an ``AllocationAlert`` row, unique per allocation and level, written before the
e-mail: a retried task sends nothing twice), e-mailed to the team's address, its PI and its managers. The home page's
tile reads ``over_levels``."""

from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone

from portal import events

from . import usage
from .models import AllocationAlert, TeamAllocation


def active(now):
    """Allocations with a budget whose period is under way (or ended today), with their teams."""
    today = timezone.localdate(now)
    return (TeamAllocation.objects.filter(gpu_hours__isnull=False, start__lte=today, end__gte=today)
            .select_related("team", "team__pi", "gpu_model"))


def recipients(team):
    """The team's address, its PI's and its managers' (each once, sorted)."""
    found = {team.email, getattr(team.pi, "email", "")}
    found |= set(team.memberships.filter(role="manager").values_list("user__email", flat=True))
    return sorted(address for address in found if address)


def send_alerts(now=None):
    """Record and e-mail each level newly crossed; returns the alerts written."""
    now = now or timezone.now()
    allocations = list(active(now))
    figures = usage.figures(allocations, now)
    sent = {(alert.allocation_id, alert.level) for alert in
            AllocationAlert.objects.filter(allocation__in=allocations)}
    written = []
    for allocation in allocations:
        row = figures[allocation.pk]
        if row.level is None or (allocation.pk, row.level) in sent:
            continue
        to = recipients(allocation.team)
        try:
            with transaction.atomic():  # a second worker's run loses the race here and sends nothing
                alert = AllocationAlert.objects.create(allocation=allocation, level=row.level,
                                                       used_gpu_hours=row.used, recipients=", ".join(to))
        except IntegrityError:
            continue
        events.emit("allocation.threshold", {  # the notification rules' event: once per allocation and level
            "allocation_id": allocation.pk, "team": allocation.team.name, "scope": str(allocation.scope),
            "level": row.level, "percent": row.percent, "used": round(row.used, 1), "budget": row.budget,
        })
        if to:
            context = {"allocation": allocation, "figures": row, "level": row.level}
            send_mail(f"[Cluster Portal] {allocation.team}: {row.percent} % of its GPU-hour budget used",
                      render_to_string("inventory/allocations/alert.txt", context), None, to)
        written.append(alert)
    return written


def over_levels(user, now=None):
    """The allocations (visible to ``user``) whose use reached a warning level, with their figures, worst first."""
    from .policy import visible

    now = now or timezone.now()
    allocations = list(visible(active(now), user))
    figures = usage.figures(allocations, now)
    found = [(allocation, figures[allocation.pk]) for allocation in allocations if figures[allocation.pk].level]
    return sorted(found, key=lambda pair: -pair[1].share)
