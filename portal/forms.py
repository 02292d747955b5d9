import re
from datetime import date

from django import forms
from django.core.exceptions import BadRequest
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


# --- Values from a URL or a form: one parser each, for every page and the API ------------------------------------

MAX_ID = 2**63 - 1  # the largest id a BigAutoField (PostgreSQL's bigint) holds: a larger one is a DataError


def whole_number(value, low=0, high=MAX_ID):
    """``value`` as a whole number from ``low`` to ``high``, or None. ASCII digits only: ``"²".isdigit()`` is true
    but ``int()`` and PostgreSQL refuse it."""
    text = "" if value is None else str(value)
    if not (text.isascii() and text.isdigit()):
        return None
    number = int(text)
    return number if low <= number <= high else None


def object_id(value):
    """An object's id from a URL or a form (``?site=2``, ``job=7``), or None for anything no row can have."""
    return whole_number(value, low=1)


def required_id(value, name):
    """``object_id(value)``; for anything no row can have, ``BadRequest``: a 400 that says so (``portal.middleware``)
    rather than a ValueError from the lookup (``job=abc`` was a 500)."""
    found = object_id(value)
    if found is None:
        raise BadRequest(f"“{name}” must be the id of an object: a whole number from 1.")
    return found


# The dates a URL or a form may name. Python's run from year 1 to 9999, and the portal counts from what it is given (the
# next month, a range's hours, a time zone's offset): at either end that overflowed (``?month=9999-12``, a 500).
FIRST_YEAR, LAST_YEAR = 1900, 2999
DAY_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
MONTH_PATTERN = re.compile(r"([0-9]{4})-(0[1-9]|1[0-2])")
YEARS_MESSAGE = f"Enter a year from {FIRST_YEAR} to {LAST_YEAR}."


class OutOfCalendar(ValueError):
    """A well-formed date or month in a year out of ``FIRST_YEAR`` … ``LAST_YEAR``."""


def parse_day(text):
    """The date ``text`` ("YYYY-MM-DD") names; ``ValueError`` with a message for people."""
    text = str(text).strip()
    try:
        day = date.fromisoformat(text) if DAY_PATTERN.fullmatch(text) else None
    except ValueError:
        day = None
    if day is None:
        raise ValueError("Enter a date as YYYY-MM-DD, e.g. 2026-11-30.")
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise OutOfCalendar(YEARS_MESSAGE)
    return day


def parse_month(text):
    """The first day of the month ``text`` ("YYYY-MM") names; ``ValueError`` with a message for people."""
    found = MONTH_PATTERN.fullmatch(str(text).strip())
    if not found:
        raise ValueError("Enter a month as YYYY-MM, e.g. 2026-11.")
    if not FIRST_YEAR <= int(found[1]) <= LAST_YEAR:
        raise OutOfCalendar(YEARS_MESSAGE)
    return date(int(found[1]), int(found[2]), 1)


class MonthField(forms.Field):
    """A calendar month, "YYYY-MM": its first day (``parse_month``)."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return parse_month(value)
        except ValueError as error:
            raise forms.ValidationError(str(error), code="invalid") from None


def add_service_error(form, error):
    """A service's refusal (``ValidationError``, by field where it names one of the form's; ``PermissionDenied``) put
    on the form that called it, so the page re-renders with the message."""
    from django.core.exceptions import ValidationError

    if isinstance(error, ValidationError) and hasattr(error, "error_dict"):
        for field, problems in error.message_dict.items():
            form.add_error(field if field in form.fields else None, problems)
    elif isinstance(error, ValidationError):
        form.add_error(None, error.messages)
    else:
        form.add_error(None, str(error))
