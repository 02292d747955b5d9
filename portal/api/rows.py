"""Read-optimized list answers: a page of a large list read with ``.values()`` and formatted by one small
formatter per field, derived once per request from the serializer's fields, instead of a model instance and
the whole serializer machinery per row (5-7 times slower on 1,000 rows).

The JSON is the serializer's: each value goes through its field's own ``to_representation``, nulls stay
nulls, the ``url`` is the detail route with the row's id. A serializer with a field this cannot read from a
column (nested serializers, method fields, model properties, many-to-many, its own ``to_representation``)
gets ``None`` from ``values_rows`` and the view uses the serializer as before.
"""

from django.core.exceptions import FieldDoesNotExist
from django.db.models import QuerySet
from rest_framework import fields, relations, serializers

from portal.models import URL_SENTINEL

# Fields whose ``to_representation`` depends on the value alone (subclasses that keep it, such as
# ``portal.api.serializers.EnumChoiceField``, qualify too).
PLAIN = (
    fields.CharField, fields.IntegerField, fields.BigIntegerField, fields.FloatField, fields.DecimalField,
    fields.BooleanField, fields.DateField, fields.DateTimeField, fields.ChoiceField, fields.UUIDField,
    fields.DurationField,
)
# Fields whose ``to_representation`` returns a value of this type as it is (``str(value)``, ``int(value)``).
NATIVE = {fields.CharField: str, fields.IntegerField: int}


class ValuesRow:
    """A ``.values()`` row read as attributes (``row.node.hostname`` reads ``node__hostname``), so that a model's
    ``__str__`` runs on it without a model instance. ``relations`` are the lookup prefixes that stand for a
    related object (``node``), not for its id."""

    __slots__ = ("_row", "_relations", "_prefix")

    def __init__(self, row, relations=frozenset(), prefix=""):
        self._row, self._relations, self._prefix = row, relations, prefix

    def __getattr__(self, name):
        key = self._prefix + name
        if key in self._relations:
            return ValuesRow(self._row, self._relations, f"{key}__")
        try:
            return self._row[key]
        except KeyError:
            raise AttributeError(f"{name}: not among the model's display_lookups") from None


class ValuesRows:
    """The ``.values()`` queryset of a list and the formatter of its rows."""

    def __init__(self, queryset, formatters):
        self.queryset = queryset
        self.formatters = formatters  # (field name, function of a values row)

    def format(self, rows):
        formatters = self.formatters
        return [{name: formatter(row) for name, formatter in formatters} for row in rows]


def values_rows(serializer, queryset, extra_lookups=()):
    """``ValuesRows`` for ``serializer`` (one item's serializer, as the list's child) over ``queryset``, or None
    when a field needs the serializer. ``extra_lookups`` are fetched too (what a cursor page orders by)."""
    model = getattr(serializer.Meta, "model", None)
    if (not isinstance(queryset, QuerySet) or queryset.model is not model or queryset._fields is not None
            or type(serializer).to_representation is not serializers.Serializer.to_representation):
        return None
    lookups, formatters = {"pk"}, []
    for field in serializer._readable_fields:  # honours ?fields= and ?brief=1
        formatter = _formatter(field, model, queryset, lookups)
        if formatter is None:
            return None
        formatters.append((field.field_name, formatter))
    return ValuesRows(queryset.values(*sorted(lookups | set(extra_lookups))), formatters)


def _formatter(field, model, queryset, lookups):
    """A function of a values row giving ``field``'s JSON value; adds the columns it reads to ``lookups``."""
    if isinstance(field, relations.HyperlinkedIdentityField):
        return _url_formatter(field)
    if field.source == "__str__":
        return _display_formatter(field, model, lookups)
    if isinstance(field, relations.PrimaryKeyRelatedField):
        if field.pk_field is not None or type(field).get_attribute is not relations.RelatedField.get_attribute:
            return None
        formatter = None  # the id as it is
    elif _plain(field):
        formatter = field.to_representation
        if isinstance(field, fields.DateTimeField) and not hasattr(field, "timezone"):
            field.timezone = field.default_timezone()  # the request's, looked up once instead of per value
    else:
        return None
    lookup = _column(field, model, queryset, wants_id=formatter is None)
    if lookup is None:
        return None
    lookups.add(lookup)
    native = next((kind for base, kind in NATIVE.items() if type(field).to_representation is base.to_representation),
                  None)

    def format_value(row):
        value = row[lookup]
        return value if value is None or formatter is None or type(value) is native else formatter(value)

    return format_value


def _plain(field):
    kind = type(field)
    return (kind.get_attribute is fields.Field.get_attribute
            and any(isinstance(field, base) and kind.to_representation is base.to_representation for base in PLAIN))


def _column(field, model, queryset, wants_id):
    """The ``.values()`` lookup of ``field.source``: a column of the model or of a model it points at (a
    related name), or an annotation of the queryset. None for anything else (properties, many-to-many, a
    related object where the field shows more than its id), and for a path through a nullable relation when
    the field may not be null (the serializer leaves it out)."""
    attrs = field.source_attrs
    if len(attrs) == 1 and attrs[0] in queryset.query.annotations:
        return attrs[0]
    opts, nullable = model._meta, False
    for i, name in enumerate(attrs):
        try:
            model_field = opts.get_field(name)
        except FieldDoesNotExist:
            return None
        if not model_field.concrete or model_field.many_to_many:
            return None
        if i < len(attrs) - 1:
            if not model_field.is_relation:
                return None
            nullable = nullable or model_field.null
            opts = model_field.related_model._meta
        elif model_field.is_relation and not wants_id and name != model_field.attname:
            return None
    if nullable and not field.allow_null:
        return None
    return "__".join(attrs)


def _url_formatter(field):
    """The detail URL, reversed once: each row's id replaces a sentinel id in it."""
    if field.lookup_field != "pk" or field.context.get("format"):
        return None
    prefix, _, suffix = str(field.to_representation(ValuesRow({"pk": URL_SENTINEL}))).partition(str(URL_SENTINEL))
    return lambda row: f"{prefix}{row['pk']}{suffix}"


def _display_formatter(field, model, lookups):
    """``str(obj)``: the model's ``__str__`` run on the row; the model names the columns it reads in
    ``display_lookups`` (``pk`` is always there; without them, no fast path)."""
    display_lookups = getattr(model, "display_lookups", None)
    if display_lookups is None or not _plain(field):
        return None
    lookups.update(display_lookups)
    relations = frozenset("__".join(parts[:i]) for parts in (lookup.split("__") for lookup in display_lookups)
                          for i in range(1, len(parts)))
    to_str, to_representation = model.__str__, field.to_representation
    return lambda row: to_representation(to_str(ValuesRow(row, relations)))
