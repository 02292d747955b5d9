"""What a manager can do about a recommendation besides accepting it (issue 37): for a reclaim (idle nodes)
recommendation, mail the teams that own the nodes and open a ticket for it; its page also offers "Move these
nodes" (``inventory.partitionmoves``), pre-filled.

Actions are registered (``register``): planning's own here (``notify_team``), support's from its ``AppConfig.ready``
(``open_ticket``: planning may not import support). ``perform`` locks the recommendation's row, checks the action
still applies, runs it and records it (``RecommendationAction``: who, when, what was done), so the page says it was
done. The figures a mail or ticket names are those the recommendation's rule computed (its evidence's node rows,
``planning.plans.needs.evidence_rows``), never counted again.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import transaction

from inventory.allocations.alerts import recipients
from inventory.models import Node, Team

from ..plans.needs import evidence_rows
from .models import Recommendation, RecommendationAction

RECLAIM_KEY = f"{Recommendation.Kind.UNDER_USED}:idle:"  # the idle-nodes rule's keys (rules/idle.py)


@dataclass(frozen=True)
class Action:
    key: str
    label: str  # the button
    applies: Callable  # (recommendation) -> bool
    run: Callable  # (recommendation, user) -> (what was done, URL of what it made or "")
    order: int = 50
    once: bool = False  # not offered again once done (a ticket); a notice may be sent again


ACTIONS = {}


def register(action):
    """Offer ``action`` on the recommendations it applies to (registering the same key again replaces it)."""
    ACTIONS[action.key] = action


def is_reclaim(rec):
    """A recommendation to reclaim idle nodes, with its nodes listed."""
    return rec.key.startswith(RECLAIM_KEY) and bool(reclaim_rows(rec))


def reclaim_rows(rec):
    """The idle nodes' rows as the rule wrote them (hostname, idle days, idle GPU-hours, their cost…)."""
    return [row for row in evidence_rows(rec.evidence or {}) if "idle_days" in row]


def offered(rec, user):
    """The actions ``user`` may take on ``rec`` now, in order."""
    if not user.has_perm("planning.act_on_recommendation", rec):
        return []
    done = set(rec.actions.values_list("action", flat=True))
    return [a for a in sorted(ACTIONS.values(), key=lambda a: (a.order, a.key))
            if a.applies(rec) and not (a.once and a.key in done)]


@transaction.atomic
def perform(key, rec, user):
    """Run the registered action ``key`` on ``rec`` for ``user`` and record it; returns the record."""
    rec = Recommendation.objects.select_for_update().get(pk=rec.pk)
    if not user.has_perm("planning.act_on_recommendation", rec):
        raise PermissionDenied("Only managers act on recommendations.")
    action = ACTIONS.get(key)
    if action is None or not action.applies(rec):
        raise ValidationError(f"“{key}” is not an action on this recommendation.")
    said, url = action.run(rec, user)
    return RecommendationAction.objects.create(recommendation=rec, action=key, user=user, username=user.get_username(),
                                               said=said, url=url or "")


def owners(rec):
    """(team → the rows of its nodes, rows of nodes no team owns) for a reclaim recommendation (one query each)."""
    rows = reclaim_rows(rec)
    team_of = dict(Node.objects.filter(hostname__in=[r["hostname"] for r in rows])
                   .values_list("hostname", "owner_team"))
    teams = {t.name: t for t in Team.objects.filter(name__in=set(team_of.values()) - {None})
             .select_related("pi")}
    by_team, unowned = {}, []
    for row in rows:
        team = teams.get(team_of.get(row["hostname"]))
        if team is None:
            unowned.append(row)
        else:
            by_team.setdefault(team, []).append(row)
    return by_team, unowned


def node_lines(rows):
    currency = settings.COST_CURRENCY
    return "\n".join(
        f"- {r['hostname']}: idle {r['idle_days']} day(s), {r['idle_gpu_hours']:,.1f} idle GPU-hours "
        f"({r['idle_cost']:,.2f} {currency}), mean utilization {r['util_mean']:.1f} %, idle in "
        f"{r['idle_weeks_before']} weeks before" for r in rows)


def notice(rec, team, rows, user):
    """The mail to a team about its idle nodes: (subject, body)."""
    subject = f"[Cluster Portal] {team}: {len(rows)} of your nodes sat idle ({rec.title})"
    body = (f"Hello {team},\n\n{rec.summary}\n\nYour team's nodes in it, with the figures the analysis measured:\n"
            f"{node_lines(rows)}\n\nWhat the portal suggests: {rec.action}\n\nIf you need these nodes, answer this "
            f"mail or {user.get_full_name() or user.get_username()} ({user.email or 'the cluster managers'}) before "
            "they are moved to a shared partition.\n\nRecommendation #"
            f"{rec.pk}: {settings.PORTAL_URL}{rec.get_absolute_url()}\n")
    return subject, body


def notify_team(rec, user):
    """Mail each owning team (its address, PI and managers) about its idle nodes."""
    by_team, unowned = owners(rec)
    said = []
    for team, rows in sorted(by_team.items(), key=lambda item: item[0].name):
        to = recipients(team)
        if not to:
            said.append(f"{team}: no address (no team e-mail, PI or manager with one): not mailed")
            continue
        subject, body = notice(rec, team, rows, user)
        send_mail(subject, body, None, to)
        said.append(f"mailed {team} ({', '.join(to)}) about {', '.join(r['hostname'] for r in rows)}")
    if unowned:
        said.append(f"no owning team for {', '.join(r['hostname'] for r in unowned)}")
    if not by_team:
        raise ValidationError("No team owns these nodes: there is nobody to notify. Set the nodes' owning team.")
    return "Notified the owning team: " + "; ".join(said) + ".", ""


register(Action("notify_team", "Notify the owning team", is_reclaim, notify_team, order=10))
