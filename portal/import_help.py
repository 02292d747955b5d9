"""What a CSV import tells before anything is written (``portal.imports`` reads it): the headers a file may use
for each column (the field's name, or the list's export header: an exported file imports back), the values a
column takes (a choice, the name of a related object) on the page and in each error, the first rows as they
will be stored, and the values of a template's example row.
"""

from django import forms
from django.db import models
from django.utils import timezone

from .exports import export_header, iso

ALLOWED_SHOWN = 20  # values named on the page and in an error; the rest counted
PREVIEW_ROWS = 10  # rows of the file shown as they will be stored
EXAMPLE_PREFIX = "example-"


# --- Headers --------------------------------------------------------------------------------------


def header_aliases(form_class, table_class=None, exclude=("select", "actions")):
    """``(aliases, ignored)``: {a header as a file may write it, lowercased: the form's field}, the field's own name
    and the header of the list's column of that name (``table_class``: what the list exports); and the lowercased
    headers of the columns the list exports that the import does not take ("In state for (days)": worked out)."""
    aliases = {name.lower(): name for name in form_class.base_fields}
    ignored = set()
    if table_class is not None:
        table = table_class(form_class._meta.model._default_manager.none())
        for column in table.columns.iterall():
            header = export_header(column).strip().lower()
            if column.name in form_class.base_fields:
                aliases.setdefault(header, column.name)
            elif column.name not in exclude and not column.column.exclude_from_export:
                ignored.add(header)
    return aliases, ignored - aliases.keys()


def rename_columns(columns, rows, aliases, ignored):
    """``(columns, rows, skipped, errors)``: the file's columns and rows under the form's field names, the exported
    columns left out (their headers as the file has them) and an error for two headers that name one field."""
    renamed, skipped, errors, seen = [], [], [], {}
    for column in columns:
        key = column.lower()
        if key in ignored:
            skipped.append(column)
            renamed.append("")  # read_csv drops a column without a name
            continue
        name = aliases.get(key, column)
        if name in seen and name:
            errors.append(f"Columns {seen[name]} and {column} both give {name}.")
        seen[name] = column
        renamed.append(name)
    mapping = dict(zip(columns, renamed, strict=True))
    rows = [(number, {mapping[column]: value for column, value in data.items() if mapping.get(column)})
            for number, data in rows]
    return [name for name in renamed if name], rows, skipped, errors


# --- Allowed values -------------------------------------------------------------------------------


def allowed_values(form_field):
    """``(values, total)`` a column takes: a choice field's values, a named reference's names (the first
    ``ALLOWED_SHOWN``, by name); None for a free value."""
    if isinstance(form_field, forms.ModelChoiceField):
        key = form_field.to_field_name or "pk"
        names = form_field.queryset.order_by(key).values_list(key, flat=True)
        shown = [str(name) for name in names[:ALLOWED_SHOWN + 1]]
        total = names.count() if len(shown) > ALLOWED_SHOWN else len(shown)
        return shown[:ALLOWED_SHOWN], total
    if isinstance(form_field, forms.ChoiceField):
        values = [str(value) for value, _ in form_field.choices if value not in ("", None)]
        return values, len(values)
    return None


def listed(values, total):
    """"a, b, c", or the first ones and how many more there are."""
    if not total:
        return "none yet"
    more = total - len(values)
    return ", ".join(values) + (f", … ({more:,} more)" if more > 0 else "")


def choice_labels(form_field):
    """{value: label} of a choice field whose labels differ from its values ("in_service": "In service")."""
    if isinstance(form_field, forms.ChoiceField) and not isinstance(form_field, forms.ModelChoiceField):
        return {str(value): str(label) for value, label in form_field.choices
                if value not in ("", None) and str(label) != str(value)}
    return {}


def column_help(form_class):
    """``[(name, required, help, allowed)]`` for the page: each column, and what it takes when that is a list."""
    rows = []
    for name, form_field in form_class.base_fields.items():
        allowed = allowed_values(form_field)
        labels = choice_labels(form_field)
        if allowed is not None:
            values = [f"{value} ({labels[value]})" if value in labels else value for value in allowed[0]]
            allowed = listed(values, allowed[1])
        rows.append((name, form_field.required, form_field.help_text or kind_of(form_field), allowed))
    return rows


def kind_of(form_field):
    if isinstance(form_field, forms.DateField):
        return "A date, YYYY-MM-DD."
    if isinstance(form_field, forms.IntegerField):
        return "A whole number."
    if isinstance(form_field, forms.DecimalField | forms.FloatField):
        return "A number (a point for decimals)."
    return ""


class AllowedCache(dict):
    """The values of each column named in errors, looked up once per import."""

    def message(self, name, form_field, error, message):
        """An ``invalid_choice`` error with the values the column takes: "'broken' is not one of: planned, …"."""
        if name not in self:
            self[name] = allowed_values(form_field)
        if self[name] is None:
            return message
        value = (error.params or {}).get("value", "")
        if message.startswith("Select a valid choice"):  # Django's own words, which name none
            return f"'{value}' is not one of: {listed(*self[name])}."
        return f"{message} One of: {listed(*self[name])}."


# --- The first rows as they will be stored ----------------------------------------------------------


def shown(value, form_field=None):
    """A stored value as the file writes it: a related object by the name the column takes, dates in ISO."""
    if value is None:
        return ""
    if isinstance(value, models.Model):
        key = getattr(form_field, "to_field_name", None) or "name"
        return str(getattr(value, key, value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(iso(value))


def stored(obj, name, cleaned=None):
    """The value of column ``name`` on ``obj`` (a field of the model), else in the form's cleaned data."""
    try:
        obj._meta.get_field(name)
    except Exception:
        return (cleaned or {}).get(name)
    return getattr(obj, name, None)


def preview_cells(form, names):
    """``[(value, before)]`` of a valid row: each column as it will be stored, and for an update its stored value
    before where it changes (None where it does not)."""
    cells = []
    for name in names:
        form_field = form.fields.get(name) or form.base_fields.get(name)
        new = shown(stored(form.instance, name, form.cleaned_data), form_field)
        old = shown(stored(form.before, name), form_field) if form.before is not None else new
        cells.append((new, old if old != new else None))
    return cells


# --- A template's example row ------------------------------------------------------------------------


def example_values(form_class):
    """{column: value} of an example row: the first related object by name, a choice field's default, a name no
    object has yet, a date three years on; optional free text left blank. ``portal.imports.template_csv`` checks
    it and blanks what does not pass."""
    model = form_class._meta.model
    unique = {name for name, *_ in _unique_names(model)}
    row = {}
    for name, form_field in form_class.base_fields.items():
        model_field = _model_field(model, name)
        default = model_field.get_default() if model_field is not None and model_field.has_default() else None
        if isinstance(form_field, forms.ModelChoiceField):
            first = form_field.queryset.order_by(form_field.to_field_name or "pk").first()
            value = shown(first, form_field)
        elif isinstance(form_field, forms.ChoiceField):
            allowed = allowed_values(form_field)[0]
            value = str(default) if default is not None and str(default) in allowed else (allowed or [""])[0]
        elif name in unique and isinstance(form_field, forms.CharField):
            value = _free_name(model, name, f"{EXAMPLE_PREFIX}{model._meta.model_name}-")
        elif isinstance(form_field, forms.DateField):
            today = timezone.localdate()
            value = today.replace(year=today.year + 3, day=min(today.day, 28)).isoformat()
        elif default not in (None, ""):
            value = shown(default)
        elif form_field.required and isinstance(form_field, forms.IntegerField | forms.DecimalField):
            value = "100"
        elif form_field.required:
            value = "example"
        else:
            value = ""
        row[name] = value
    return row


def _model_field(model, name):
    try:
        return model._meta.get_field(name)
    except Exception:
        return None


def _unique_names(model):
    """(field name,) of each field that is unique alone or in a unique constraint (a rack's name in its site)."""
    names = [(f.name,) for f in model._meta.concrete_fields if f.unique and not f.primary_key]
    for constraint in model._meta.constraints:
        if isinstance(constraint, models.UniqueConstraint):
            names += [(name,) for name in constraint.fields if not _model_field(model, name).is_relation]
    return names


def _free_name(model, name, prefix):
    """``prefix`` + the first number no object's ``name`` has (one query)."""
    taken = set(model._default_manager.filter(**{f"{name}__startswith": prefix}).values_list(name, flat=True))
    number = 1
    while f"{prefix}{number:02d}" in taken:
        number += 1
    return f"{prefix}{number:02d}"

