"""The portal's base table: django-tables2 for the header, sorting, pagination and exports, and a faster
body for long pages.

django-tables2 renders each cell through its generic machinery (an ``inspect.signature`` per call of a
render method, a reverse() per link, a template node per cell): about 1.4 ms per row of the node list, 0.7 s
for 500 rows. ``PortalTable.body_html`` builds the same ``<tr>``/``<td>`` markup in Python with each column's
work prepared once per page: the accessor, which arguments its render method takes, its link. A column it
cannot prepare (a many-to-many column, cell attributes computed per row, links with their own attributes or
reverse arguments) is rendered per cell by django-tables2 as before, in the same row.
"""

import html
import operator
from functools import partialmethod

import django_tables2 as tables
from django.conf import settings
from django.db import models
from django.template import Context
from django.template.base import render_value_in_context
from django.utils.encoding import force_str
from django.utils.hashable import make_hashable
from django.utils.safestring import mark_safe
from django_tables2.columns.base import Column
from django_tables2.columns.linkcolumn import BaseLinkColumn
from django_tables2.utils import Accessor, signature

from .models import PortalModel

CONTEXT = Context()  # autoescape on, localization and time zone from the settings: as a page renders {{ cell }}


class PortalTable(tables.Table):
    """A table whose body ``templates/portal/table.html`` takes from ``body_html``."""

    def body_html(self):
        """The body's rows, as the template's loop renders them; empty when there are none."""
        cells = [_cell_renderer(self, bound_column) for bound_column in self.columns]
        plain_rows = not self.row_attrs  # then a row's attributes are its even/odd class
        rows = []
        for row in self.paginated_rows:
            tds = "".join(cell(row) for cell in cells)
            attrs = f'class="{row.get_even_odd_css_class()}"' if plain_rows else row.attrs.as_html()
            rows.append(f"\n  <tr {attrs}>\n  {tds}\n  </tr>\n")
        return mark_safe("".join(rows))


def _escape(value):
    """``conditional_escape`` without its lazy-string wrapper (called for every cell)."""
    return value.__html__() if hasattr(value, "__html__") else html.escape(str(value))


def cell_html(format_string, *args):
    """``format_html`` for a render method called on every row: the same escaping, without its lazy-string
    wrappers."""
    return mark_safe(format_string.format(*map(_escape, args)))


def _shown(value):
    """What the template's ``{{ cell }}`` prints: strings escaped, other values localized first (an int without
    thousand separators is its digits)."""
    if isinstance(value, str):
        return _escape(value)
    if type(value) is int and not settings.USE_THOUSAND_SEPARATOR:
        return str(value)
    return render_value_in_context(value, CONTEXT)


def _cell_renderer(table, bound_column):
    """A function of a row giving the column's ``<td>``."""
    column = bound_column.column
    td = _static_td(table, bound_column)
    content = None if td is None or isinstance(column, tables.ManyToManyColumn) else _content(table, bound_column)
    if content is None:
        return lambda row: _generic_td(row, bound_column)
    return lambda row: f"<td {td}>{content(row)}</td>"


def _generic_td(row, bound_column):
    # As the template's loop: the cell first, then the attributes that may depend on it.
    cell = row.get_cell(bound_column.name)
    bound_column.current_value, bound_column.current_record = cell, row.record
    return f"<td {bound_column.attrs['td'].as_html()}>{_shown(cell)}</td>"


def _static_td(table, bound_column):
    attrs = {**table.attrs, **bound_column.column.attrs}
    td = attrs.get("td", attrs.get("cell", {}))
    if any(callable(value) for value in td.values()):
        return None
    bound_column.current_value = bound_column.current_record = None
    return bound_column.attrs["td"].as_html()


def _arguments(function):
    """Which of a row's arguments ``function`` takes (None: all), as django-tables2's call_with_appropriate."""
    names, catch_all = signature(function)
    return None if catch_all else set(names)


def _call(function, names, arguments):
    if names is None:
        return function(**arguments)
    if not names <= arguments.keys():
        return None
    return function(**{name: arguments[name] for name in names})


def _content(table, bound_column):
    """A function of a row giving the cell's HTML as BoundRow.get_cell and the template make it; None if it
    cannot be prepared."""
    column, link = bound_column.column, bound_column.link
    value_of = _value_getter(table, bound_column)
    render = bound_column.render
    plain = getattr(render, "__func__", None) is Column.render  # the value itself
    render_names = None if plain else _arguments(render)
    href = _href(table, link, bound_column) if link else None
    if link and href is None:
        return None
    empty, default = column.empty_values, _shown(bound_column.default)
    text_link = isinstance(column, BaseLinkColumn) and column.text is not None

    def content(row):
        record = row.record
        try:
            value = value_of(record)
        except Exception:
            if text_link:
                return _shown(row.get_cell(bound_column.name))
            value = None
        if value in empty:
            return default
        if plain and not link:  # most cells: no arguments to gather
            return _shown(value)
        arguments = {"value": value, "record": record, "column": column, "bound_column": bound_column,
                     "bound_row": row, "table": table}
        shown = value if plain else _call(render, render_names, arguments)
        url = href(arguments) if link else None
        if url is None:
            return _shown(shown)
        return f'<a href="{_escape(url)}">{_escape(shown)}</a>'  # as LinkTransform's format_html

    return content


def _resolver(accessor, model):
    """A function of a record giving ``accessor.resolve(record)``: plain attribute lookups on model instances,
    a callable (a method) left to the accessor."""
    if model is None or not all(bit.isidentifier() for bit in accessor.bits):
        return accessor.resolve
    attributes = operator.attrgetter(".".join(accessor.bits))

    def resolve(record):
        value = attributes(record)
        return accessor.resolve(record) if callable(value) else value

    return resolve


def _value_getter(table, bound_column):
    """The cell's value from a record, as django-tables2's accessor finds it; a choices field shows its label
    (``get_FOO_display``)."""
    accessor = Accessor(bound_column.accessor)
    model = table.data.model or table._meta.model
    field = accessor.get_field(model)
    resolve = _resolver(accessor, model)
    if not getattr(field, "choices", ()):
        return resolve
    *path, last = accessor.bits
    owner, display = Accessor(accessor.SEPARATOR.join(path)), f"get_{last}_display"
    method = vars(model).get(display) if model is not None and not path else None
    if isinstance(method, partialmethod) and method.func is models.Model._get_FIELD_display:
        # Django's own get_FOO_display, with its choices made a dict once per page instead of once per row.
        labels, attname = dict(make_hashable(field.flatchoices)), field.attname

        def label(record):
            value = getattr(record, attname)
            return force_str(labels.get(make_hashable(value), value), strings_only=True)

        return label

    def value(record):
        penultimate = owner.resolve(record, quiet=True) if path else record
        display_fn = getattr(penultimate, display, None) if isinstance(penultimate, models.Model) else None
        return display_fn() if display_fn else resolve(record)

    return value


def _href(table, link, bound_column):
    """A function of the cell's arguments giving the link's URL as LinkTransform.compose_url, or None where the
    link needs django-tables2 (its own attributes, reverse arguments)."""
    if link.attrs or link.reverse_args:
        return None
    if callable(link.url):
        names = _arguments(link.url)
        return lambda arguments: _call(link.url, names, arguments)
    accessor = Accessor(link.accessor if link.accessor is not None else bound_column.name)
    target_of = _resolver(accessor, table.data.model or table._meta.model)
    around_id = {}  # per model: its detail URL around the id, looked up once per page

    def linkify(arguments):
        target, record = target_of(arguments["record"]), arguments["record"]
        target = target if hasattr(target, "get_absolute_url") else record
        kind = type(target)
        if kind.get_absolute_url is not PortalModel.get_absolute_url or not isinstance(target.pk, int):
            return target.get_absolute_url()
        if kind not in around_id:
            around_id[kind] = kind.url_around_id()
        prefix, suffix = around_id[kind]
        return f"{prefix}{target.pk}{suffix}"

    return linkify
