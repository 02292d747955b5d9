"""Support's panel of the home dashboard (registered in ``SupportConfig.ready``)."""

from . import queries


def sla_panel(request):
    """Open tickets the user may see that breach their SLA or soon will."""
    user = request.user
    if not (user.has_perm("support.view_ticket") or user.has_perm("support.add_ticket")):
        return None
    return {"sla_tickets": queries.at_risk(user)}  # breached or breaching soon
