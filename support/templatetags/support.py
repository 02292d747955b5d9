"""``{% load support %}``: Markdown rendered safely, SLA badges, and the support panel of node and GPU pages."""

from django import template
from django.urls import reverse
from django.utils.html import format_html

from .. import rendering, sla
from ..models import Ticket

register = template.Library()

ASSET_TICKET_LIMIT = 10


@register.filter
def markdown(text):
    return rendering.render(text)


@register.simple_tag
def sla_badge(ticket, now=None):
    """The ticket's SLA state as a badge, with the time the running clock counts down to."""
    state = sla.state(ticket, now)
    due = sla.next_due(ticket, now)
    title = f"due {due:%Y-%m-%d %H:%M}" if due and ticket.is_open else ""
    return format_html('<span class="badge sla sla-{}" title="{}">{}</span>', state.replace(" ", "-"), title, state)


@register.inclusion_tag("support/asset_tickets.html", takes_context=True)
def asset_tickets(context, asset):
    """On a node or GPU page: "Report a problem" (pre-filling the asset) and the open tickets on it."""
    request = context["request"]
    user = request.user
    field = "gpu" if asset._meta.model_name == "gpu" else "node"
    tickets = []
    if user.has_perm("support.read_ticket"):
        tickets = list(Ticket.objects.visible_to(user).open().filter(**{field: asset})
                       .select_related("assignee")[:ASSET_TICKET_LIMIT])
    can_report = user.has_perm("support.open_ticket")
    gpus = list(asset.gpus.exclude(state="retired").order_by("slot")) if field == "node" and can_report else []
    return {
        "asset": asset, "tickets": tickets, "gpus": gpus, "add_url": reverse("support:ticket_add"),
        "report_url": f"{reverse('support:ticket_add')}?{field}={asset.pk}"
        if can_report else None,
        "list_url": f"{reverse('support:ticket_list')}?{field}={asset.pk}",
    }
