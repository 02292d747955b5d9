from decimal import ROUND_HALF_UP, Context, Decimal

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.template.defaultfilters import floatformat
from django.utils.safestring import mark_safe

from portal import registry

register = template.Library()


@register.simple_tag
def fixed_url(name):
    """``{% url name %}`` for a view without arguments, reversed once per URLconf and script prefix
    (``registry.fixed_url``): ``base.html`` draws seven on every page."""
    return registry.fixed_url(name)


@register.filter
def get_item(mapping, key):
    """``{{ counts|get_item:state }}``: a dict value by a key held in a variable."""
    return mapping.get(key, "") if mapping else ""


@register.simple_tag(takes_context=True)
def panel(context, template_name, values):
    """``{% panel template values %}``: a dashboard panel (``portal.registry``), its template rendered with the
    page's context plus the values its app computed."""
    with context.push(**values):
        return context.template.engine.get_template(template_name).render(context)


@register.simple_tag(takes_context=True)
def object_panels(context, obj):
    """``{% object_panels object %}``: the panels other apps registered for this object's page (``portal.registry``)."""
    rendered = [panel(context, name, values) for name, values in registry.object_panels(context["request"], obj)]
    return mark_safe("".join(rendered))  # each one a rendered (auto-escaped) template


# ``floatformat`` and ``intcomma`` localize every number: about 40 µs a cell, 6 ms for the utilization dashboard's
# tables. The portal writes numbers one way (en-us: "." before decimals, "," between thousands), so these two
# give the same text from plain arithmetic (tests/portal/test_number_filters.py compares them on any number), and
# leave what is not a plain figure (no number, 10^15 or more, under 10^-15) to Django's filters.

LARGEST, SMALLEST = Decimal(10) ** 15, Decimal(10) ** -15


def _rounded(value, places):
    """``value`` rounded to ``places`` decimals as ``floatformat`` rounds: its decimal text, half up; None for
    what is not a number between 10^-15 and 10^15 (or zero)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    number = Decimal(str(value))
    if not number.is_finite() or abs(number) >= LARGEST or (number and abs(number) < SMALLEST):
        return None
    rounded = number.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP, Context(prec=places + 20))
    return rounded.copy_abs() if not rounded else rounded  # no "-0"


@register.filter
def decimals(value, places):
    """``{{ value|decimals:1 }}``: what ``floatformat:1`` writes ("48.4"; "" for None)."""
    places = int(places)
    rounded = _rounded(value, places)
    return floatformat(value, places) if rounded is None else f"{rounded:f}"


@register.filter
def whole(value):
    """``{{ value|whole }}``: what ``floatformat:0|intcomma`` writes ("2,773"; "" for None)."""
    rounded = _rounded(value, 0)
    return intcomma(floatformat(value, 0)) if rounded is None else f"{int(rounded):,}"
