"""The utilization dashboard's table rows, drawn in Python: it draws every group and least-used row on each
request, and the template's variables and filters cost about 30 µs a row. Figures are written as the group tables'
template wrote them (``decimals:1``, ``whole``)."""

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString

from portal.templatetags.portal import decimals, whole

register = template.Library()


@register.simple_tag
def group_rows(groups, currency):
    """``<tr>``s of a group table: name, GPUs, mean utilization, GPU-hours, idle GPU-hours, idle cost."""
    currency = escape(currency)
    return SafeString("".join(
        f"<tr><td>{escape(g['name'])}</td><td>{g['gpus']}</td><td>{decimals(g['util_mean'], 1)}</td>"
        f"<td>{whole(g['gpu_hours'])}</td><td>{whole(g['idle_gpu_hours'])}</td>"
        f"<td>{whole(g['idle_cost'])} {currency}</td></tr>"
        for g in groups))


@register.simple_tag
def least_used_rows(nodes, currency):
    """``<tr>``s of a least-used table: node (linked), state, partition, team, mean utilization, idle GPU-hours,
    idle cost."""
    currency = escape(currency)
    return SafeString("".join(
        f"<tr><td><a href=\"{escape(n['url'])}\">{escape(n['name'])}</a></td><td>{escape(n['state_label'])}</td>"
        f"<td>{escape(n['partition'] or '—')}</td><td>{escape(n['team'] or '—')}</td>"
        f"<td>{decimals(n['util_mean'], 1)}</td><td>{whole(n['idle_gpu_hours'])}</td>"
        f"<td>{whole(n['idle_cost'])} {currency}</td></tr>"
        for n in nodes))
