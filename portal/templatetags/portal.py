from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    """``{{ counts|get_item:state }}``: a dict value by a key held in a variable."""
    return mapping.get(key, "") if mapping else ""
