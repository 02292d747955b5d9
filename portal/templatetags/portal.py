from django import template
from django.utils.safestring import mark_safe

from portal import registry

register = template.Library()


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
