"""Support's action on a recommendation (registered with ``planning.recommendations.actions`` in
``SupportConfig.ready``, since planning may not import support): open a ticket to reclaim the idle nodes, for
the team that owns them, through ``workflow.open_ticket`` (SLA, history and notices as for every ticket)."""

from django.core.exceptions import ValidationError

from inventory.models import Node
from planning.models import RecommendationAction
from planning.recommendations import actions

from . import workflow
from .models import Ticket


def open_reclaim_ticket(rec, user):
    """A capacity ticket for the reclaim recommendation ``rec``: its nodes and their idle figures (as the rule
    measured them), for their team when one team owns them all. One per recommendation."""
    earlier = RecommendationAction.objects.filter(recommendation=rec, action="open_ticket").first()
    if earlier is not None:
        raise ValidationError(f"A ticket was opened for it already ({earlier.said}).")
    by_team, unowned = actions.owners(rec)
    rows = actions.reclaim_rows(rec)
    hostnames = [row["hostname"] for row in rows]
    teams = sorted(by_team, key=lambda team: team.name)
    nodes = list(Node.objects.filter(hostname__in=hostnames).order_by("hostname"))
    owned_by = ", ".join(team.name for team in teams) or "no team"
    ticket = Ticket(
        title=f"Reclaim idle nodes: {rec.title}"[:200],
        description=(f"From recommendation #{rec.pk} ({rec.get_kind_display()}).\n\n{rec.summary}\n\n"
                     f"Nodes (owned by {owned_by}):\n{actions.node_lines(rows)}\n\nSuggested action: {rec.action}"),
        category=Ticket.Category.CAPACITY, priority=Ticket.Priority.P4,
        team=teams[0] if len(teams) == 1 and not unowned else None,
        node=nodes[0] if len(nodes) == 1 else None, site_id=rec.site_id,
    )
    workflow.open_ticket(ticket, user)
    return f"Ticket #{ticket.pk} opened for {', '.join(hostnames)} (team {owned_by}).", ticket.get_absolute_url()


def register():
    actions.register(actions.Action("open_ticket", "Open a ticket", actions.is_reclaim, open_reclaim_ticket, order=20,
                                    once=True))
