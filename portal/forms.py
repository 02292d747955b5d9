from django import forms
from django.forms.utils import flatatt
from django.utils.html import escape
from django.utils.safestring import mark_safe


class DateInput(forms.DateInput):
    """The browser's date picker."""

    input_type = "date"


class Select(forms.Select):
    """Django's select, drawn in Python rather than through its widget templates: the same markup (flat choices, no
    option groups) in a fraction of the time, which counts in a filter form of many choices rendered on every
    request (the utilization dashboard's: about 20 ms through the templates)."""

    def render(self, name, value, attrs=None, renderer=None):
        widget = self.get_context(name, value, attrs)["widget"]
        options = "".join(
            f'<option value="{escape(option["value"])}"{" selected" if option["selected"] else ""}>'
            f'{escape(option["label"])}</option>'
            for _, choices, _ in widget["optgroups"] for option in choices)
        return mark_safe(f'<select name="{escape(widget["name"])}"{flatatt(widget["attrs"])}>{options}</select>')


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'procurement sync'.")
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, help_text="Leave empty for a token that does not expire."
    )
