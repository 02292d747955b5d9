"""The portal's base table: django-tables2 for the header, sorting, pagination and exports, and a faster
body for long pages.

django-tables2 renders each cell through its generic machinery (an ``inspect.signature`` per call of a
render method, a reverse() per link, a template node per cell): about 1.4 ms per row of the node list, 0.7 s
for 500 rows. ``PortalTable.body_html`` builds the same ``<tr>``/``<td>`` markup in Python with each column's
work prepared once per page: the accessor, which arguments its render method takes, its link. A column it
cannot prepare (a many-to-many column, cell attributes computed per row, links with their own attributes or
reverse arguments) is rendered per cell by django-tables2 as before, in the same row.
"""

import functools
import html
import operator
import re
from functools import partialmethod
from urllib.parse import quote

import django_tables2 as tables
from django.conf import settings
from django.db import models
from django.template import Context
from django.template.base import render_value_in_context
from django.utils.encoding import force_str
from django.utils.hashable import make_hashable
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator, capfirst
from django_tables2.columns.base import Column
from django_tables2.columns.linkcolumn import BaseLinkColumn
from django_tables2.utils import Accessor, signature

from . import changelog
from .models import PortalModel, TablePreference

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


TABLES_WITH_CHOICE = {}  # class name -> table: the tables whose columns each user chooses


class ColumnChoice:
    """A list table whose columns each user chooses, as NetBox's "Configure table": ``default_columns`` are shown,
    in that order, until the user chooses; ``required_columns`` (the row's checkbox, its link) are always shown,
    first. The choice is a ``TablePreference`` under the class's name; applied as django-tables2's ``sequence``
    and ``exclude``, so the body is rendered as before (``PortalTable.body_html`` included)."""

    default_columns = ()
    required_columns = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        TABLES_WITH_CHOICE[cls.__name__] = cls

    @classmethod
    def shown_columns(cls, saved):
        """The columns shown for a stored choice, in order: the names in it this table has (a column removed since
        is skipped), required ones it lacks first; the defaults when it names no other column or is not a list."""
        names = saved if isinstance(saved, list) else []
        known = list(dict.fromkeys(name for name in names if isinstance(name, str) and name in cls.base_columns))
        if all(name in cls.required_columns for name in known):
            known = [name for name in cls.default_columns if name in cls.base_columns]
        return [*(name for name in cls.required_columns if name not in known), *known]

    @classmethod
    def column_kwargs(cls, saved):
        """The table's ``sequence`` and ``exclude`` for a stored choice."""
        shown = cls.shown_columns(saved)
        return {"sequence": [*shown, "..."], "exclude": [name for name in cls.base_columns if name not in shown]}

    @classmethod
    def headers(cls):
        """{column name: its header}, as the table shows them (model fields' verbose names included)."""
        model = cls._meta.model
        table = cls(model._default_manager.none() if model is not None else [])
        return {column.name: str(column.verbose_name) for column in table.columns.all()}

    @classmethod
    def column_menu(cls, saved, next_url):
        """What ``portal/table_columns.html`` shows: every column with whether it is shown and its position
        (shown ones first, in their order), and where saving returns to."""
        headers, shown = cls.headers(), cls.shown_columns(saved)
        hidden = [name for name in cls.base_columns if name not in shown]
        rows = [{"name": name, "header": headers.get(name) or name, "shown": name in shown,
                 "required": name in cls.required_columns} for name in [*shown, *hidden]]
        return {"table": cls.__name__, "rows": rows, "next": next_url}


def saved_columns(user, table_class):
    """The user's stored column choice for ``table_class`` (one query), or None."""
    if not user.is_authenticated:
        return None
    return TablePreference.objects.filter(user=user, table=table_class.__name__).values_list(
        "columns", flat=True).first()


_NEEDS_ESCAPE = re.compile("[&<>\"']").search


def _escape(value):
    """``conditional_escape`` without its lazy-string wrapper (called for every cell); a plain string without a
    character to escape is returned as it is."""
    if type(value) is str:
        return html.escape(value) if _NEEDS_ESCAPE(value) else value
    return value.__html__() if hasattr(value, "__html__") else html.escape(str(value))


def cell_html(format_string, *args):
    """``format_html`` for a render method called on every row: the same escaping, without its lazy-string
    wrappers."""
    return SafeString(format_string.format(*map(_escape, args)))  # mark_safe() of a str, without its wrapper


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


class RelatedColumn(tables.Column):
    """A related object's name (an annotation, e.g. ``site_name``) linked to its page by the related id
    (``site_id``): no related object built per row. ``PortalTable.body_html`` makes the link with string
    formatting; the generic machinery (exports, other tables) uses the same ``linkify``."""

    def __init__(self, model, id_attribute, **kwargs):
        self.related_model, self.id_attribute = model, id_attribute
        super().__init__(linkify=lambda record: model.url_of(getattr(record, id_attribute)), **kwargs)


def _related_link(value_of, column, default):
    """The cell of a ``RelatedColumn``: the link around the related id, looked up once per page."""
    prefix, suffix = column.related_model.url_around_id()
    id_of, empty = operator.attrgetter(column.id_attribute), column.empty_values

    def content(row):
        record = row.record
        value, related_id = value_of(record), id_of(record)
        if value in empty:
            return default
        if related_id is None:
            return _shown(value)
        return f'<a href="{_escape(f"{prefix}{related_id}{suffix}")}">{_escape(value)}</a>'

    return content


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


def _render_caller(render, names, table, bound_column):
    """A function of (value, record) calling a render method that takes only those and the per-page arguments
    (the table, the column): the common case, without a dict of arguments per cell; None otherwise."""
    per_page = {"table": table, "column": bound_column.column, "bound_column": bound_column}
    if names is None or not names <= {"value", "record", *per_page}:
        return None
    bound = functools.partial(render, **{name: per_page[name] for name in names & per_page.keys()})
    if {"value", "record"} <= names:
        return lambda value, record: bound(value=value, record=record)
    if "value" in names:
        return lambda value, record: bound(value=value)
    if "record" in names:
        return lambda value, record: bound(record=record)
    return lambda value, record: bound()


def _content(table, bound_column):
    """A function of a row giving the cell's HTML as BoundRow.get_cell and the template make it; None if it
    cannot be prepared."""
    column, link = bound_column.column, bound_column.link
    value_of = _value_getter(table, bound_column)
    render = bound_column.render
    plain = getattr(render, "__func__", None) is Column.render  # the value itself
    render_names = None if plain else _arguments(render)
    empty, default = column.empty_values, _shown(bound_column.default)
    if isinstance(column, RelatedColumn) and plain:
        return _related_link(value_of, column, default)
    href = _href(table, link, bound_column) if link else None
    if link and href is None:
        return None
    text_link = isinstance(column, BaseLinkColumn) and column.text is not None
    call_render = None if plain or link else _render_caller(render, render_names, table, bound_column)

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
        if call_render is not None:  # a render method of the value and the record
            return _shown(call_render(value, record))
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
        # The labels translated once too: the language does not change within a page.
        labels = {key: force_str(label, strings_only=True) for key, label in make_hashable(field.flatchoices)}
        attname = field.attname

        def label(record):
            value = getattr(record, attname)
            label = labels.get(make_hashable(value), value)
            return label if type(label) is str else force_str(label, strings_only=True)

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


class SelectColumn(tables.CheckBoxColumn):
    """A list's selection checkboxes (the bulk actions' rows), each named for screen readers after its row
    ("Select node-a01"): ``label`` gives the row's name from its record. The header says "Select" to screen
    readers only (a box there would select nothing)."""

    def __init__(self, label=str, **kwargs):
        self.label = label
        super().__init__(accessor="pk", attrs={"input": {"name": "select"}}, **kwargs)

    @property
    def header(self):
        return mark_safe('<span class="sr-only">Select</span>')

    def render(self, value, record):
        # CheckBoxColumn's markup for these attributes, without its per-cell attribute machinery.
        return cell_html('<input type="checkbox" name="select" value="{}" aria-label="Select {}">', value,
                         self.label(record))


class ChangeTable(ColumnChoice, PortalTable):
    """The change log (/changes/): history records of every tracked model, newest first, as
    ``changelog.recent_changes`` gives them (already in order: not sortable)."""

    when = tables.DateTimeColumn(accessor="history_date", format="Y-m-d H:i:s", verbose_name="When")
    who = tables.Column(accessor="history_user", verbose_name="Who", default="system")
    action = tables.Column(accessor="history_type", verbose_name="Action")
    kind = tables.Column(accessor="model_opts__verbose_name", verbose_name="Type")
    target = tables.Column(accessor="shown", verbose_name="Object", empty_values=(),
                           attrs={"td": {"class": "wrap"}})  # a bill's line is named by its long description
    reason = tables.Column(accessor="history_change_reason", verbose_name="Reason", default="",
                           attrs={"td": {"class": "wrap"}})
    request_id = tables.Column(verbose_name="Request", default="")

    default_columns = ("when", "who", "action", "kind", "target", "reason", "request_id")
    required_columns = ("when", "target")

    class Meta:
        orderable = False
        attrs = {"class": "table compact"}

    def render_who(self, value):
        return value.get_username()

    def render_action(self, value):
        return changelog.ACTIONS.get(value, value)

    def render_kind(self, value):
        return capfirst(value)

    def render_target(self, record, value):
        if record.history_type == "-" or not hasattr(value, "get_absolute_url"):  # deleted, or has no page
            return str(value)
        return cell_html('<a href="{}">{}</a>', value.get_absolute_url(), value)

    def render_request_id(self, value):
        return cell_html('<a href="?request_id={}" title="Every change of this request">{}</a>', quote(value),
                         Truncator(value).chars(10))
