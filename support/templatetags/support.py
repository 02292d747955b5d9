"""``{% load support %}``: Markdown rendered safely and SLA badges."""

from django import template
from django.utils.html import format_html

from .. import rendering, sla

register = template.Library()

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
