"""Support's panel of the home dashboard (registered in ``SupportConfig.ready``)."""

from . import queries


def sla_panel(request):
    """Open tickets the user may see that breach their SLA or soon will."""
    if not request.user.has_perm("support.read_ticket"):
        return None
    return {"sla_tickets": queries.at_risk(request.user)}  # breached or breaching soon
