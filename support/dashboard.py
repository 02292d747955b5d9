"""Support's panels: on the home dashboard, and on node and GPU pages (registered in ``SupportConfig.ready``)."""

from django.urls import reverse

from portal.registry import Tile

from . import queries
from .models import Ticket

ASSET_TICKET_LIMIT = 10
HOME_ROWS = 4  # the home dashboard stays one screen: the full queue is one click away


def support_tiles(request):
    """Open tickets the user may see that breached their SLA, and open hardware tickets."""
    if not request.user.has_perm("support.read_ticket"):
        return None
    counts = queries.home_counts(request.user)
    tickets = reverse("support:ticket_list")
    return [
        Tile("sla-breached", "tickets past their SLA", str(counts["breached"]), f"{tickets}?sla=breached",
             warn=bool(counts["breached"])),
        Tile("hardware-tickets", "open hardware tickets", str(counts["hardware"]),
             f"{tickets}?category=hardware&open=true"),
    ]


def sla_panel(request):
    """Open tickets the user may see that breach their SLA or soon will."""
    if not request.user.has_perm("support.read_ticket"):
        return None
    return {"sla_tickets": queries.at_risk(request.user, limit=HOME_ROWS)}  # breached or breaching soon


def asset_tickets_panel(request, asset):
    """On a node or GPU page: "Report a problem" (pre-filling the asset) and the open tickets on it."""
    user = request.user
    if not user.has_perm("support.read_ticket"):
        return None
    field = "gpu" if asset._meta.model_name == "gpu" else "node"
    tickets = list(Ticket.objects.visible_to(user).open().filter(**{field: asset})
                   .select_related("assignee")[:ASSET_TICKET_LIMIT])
    can_report = user.has_perm("support.open_ticket")
    gpus = list(asset.gpus.exclude(state="retired").order_by("slot")) if field == "node" and can_report else []
    return {
        "asset": asset, "tickets": tickets, "gpus": gpus, "add_url": reverse("support:ticket_add"),
        "report_url": f"{reverse('support:ticket_add')}?{field}={asset.pk}" if can_report else None,
        "list_url": f"{reverse('support:ticket_list')}?{field}={asset.pk}",
    }
