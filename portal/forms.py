from django import forms
from django.forms.models import ModelChoiceIterator
from django.forms.utils import flatatt
from django.utils.html import escape
from django.utils.safestring import mark_safe


class DateInput(forms.DateInput):
    """The browser's date picker."""

    input_type = "date"


def flat_choices(choices):
    """A widget's choices as a list. A model choice field's are read in one plain query: its own iterator reads
    them through a server-side cursor on PostgreSQL (declare, fetch, close: three round trips)."""
    if isinstance(choices, ModelChoiceIterator):
        empty = [] if choices.field.empty_label is None else [("", choices.field.empty_label)]
        return empty + [choices.choice(obj) for obj in choices.queryset.all()]
    return [choice for choice in choices]  # not list(), which asks for len(): a COUNT for a lazy queryset


class Select(forms.Select):
    """Django's select, drawn in Python from its choices rather than through its widget templates and option
    dictionaries: the same markup in a fraction of the time, which counts in a filter form of many choices rendered
    on every request (the utilization dashboard's: about 20 ms through the templates). Choices in option groups
    are drawn by Django."""

    def render(self, name, value, attrs=None, renderer=None):
        choices = flat_choices(self.choices)
        if any(isinstance(label, (list, tuple)) for _, label in choices):
            return super().render(name, value, attrs, renderer)
        chosen, has_selected, options = self.format_value(value), False, []
        for option_value, label in choices:
            option_value = "" if option_value is None else option_value
            # As optgroups(): only the first matching option is selected unless the select takes several.
            selected = (self.allow_multiple_selected or not has_selected) and str(option_value) in chosen
            has_selected |= selected
            options.append(f'<option value="{escape(option_value)}"{" selected" if selected else ""}>'
                           f"{escape(label)}</option>")
        attrs = self.build_attrs(self.attrs, attrs)
        if self.allow_multiple_selected:
            attrs["multiple"] = True
        return mark_safe(f'<select name="{escape(name)}"{flatatt(attrs)}>{"".join(options)}</select>')


class CheckboxSelectMultiple(forms.CheckboxSelectMultiple):
    """Django's checkboxes, drawn in Python as ``Select`` is: the list pages' state filter draws eight on every
    request. The same markup as Django's templates; choices in option groups are drawn by Django."""

    def render(self, name, value, attrs=None, renderer=None):
        choices = flat_choices(self.choices)
        if any(isinstance(label, (list, tuple)) for _, label in choices):
            return super().render(name, value, attrs, renderer)
        attrs = self.build_attrs(self.attrs, attrs)
        chosen, id_ = self.format_value(value), attrs.get("id")
        options = []
        for index, (option_value, label) in enumerate(choices):
            option_value = "" if option_value is None else option_value
            option_attrs = dict(attrs)  # as create_option: the widget's attributes on every box
            if str(option_value) in chosen:
                option_attrs["checked"] = True
            if id_:
                option_attrs["id"] = self.id_for_label(id_, str(index))
            label_for = f' for="{escape(option_attrs["id"])}"' if option_attrs.get("id") else ""
            options.append(f'<div>\n    <label{label_for}><input type="{self.input_type}" name="{escape(name)}" '
                           f'value="{escape(option_value)}"{_attributes(option_attrs)}>\n {escape(label)}</label>\n\n'
                           f"</div>")
        outer = f' id="{escape(id_)}"' if id_ else ""
        outer += f' class="{escape(attrs["class"])}"' if attrs.get("class") else ""
        return mark_safe(f"<div{outer}>{''.join(options)}\n</div>")


def _attributes(attrs):
    """Attributes as django/forms/widgets/attrs.html writes them: False left out, True as a bare name."""
    return "".join("" if value is False else f" {escape(key)}" if value is True else f' {escape(key)}="{escape(value)}"'
                   for key, value in attrs.items())


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'procurement sync'.")
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, help_text="Leave empty for a token that does not expire."
    )
