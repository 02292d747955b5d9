"""What several planning features share: money fields, the currency check, a catalog line (node model, GPU model
or description), the money format of tables and the API's writable nested lists."""

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models, transaction

from inventory.models import GPUModel, NodeModel

MONEY = {"max_digits": 14, "decimal_places": 2, "validators": [MinValueValidator(0)]}


def check_currency(currency):
    """The error message for a currency that is not a three-letter ISO 4217 code; "" when it is one."""
    if currency and len(currency) == 3 and currency.isalpha():
        return ""
    return "Use a three-letter ISO 4217 code, e.g. USD."


class CatalogLine(models.Model):
    """So many of one catalog model. Exactly one of node model, GPU model, or a free description (switches,
    storage, cables) is set."""

    node_model = models.ForeignKey(NodeModel, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    gpu_model = models.ForeignKey(GPUModel, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    description = models.CharField(max_length=200, blank=True)
    quantity = models.PositiveIntegerField(validators=[MinValueValidator(1)])

    class Meta:
        abstract = True

    def __str__(self):
        return f"{self.quantity} × {self.what}"

    @property
    def what(self):
        return str(self.node_model or self.gpu_model or self.description)

    def clean(self):
        chosen = [x for x in (self.node_model_id, self.gpu_model_id) if x]
        if len(chosen) > 1:
            raise ValidationError("A line is for a node model or a GPU model, not both.")
        if not chosen and not self.description:
            raise ValidationError("Say what the line is for: a node model, a GPU model or a description.")


def money(value, currency):
    if not value:
        return "—"
    return f"{value:,.0f} {currency}" if value == value.to_integral_value() else f"{value:,.2f} {currency}"


class NestedListMixin:
    """A parent serializer with writable nested lists (``nested``: list field → the child's FK to the parent):
    each list is created with the parent and replaced on update when given."""

    nested = {}

    def validate(self, attrs):
        lists = {name: attrs.pop(name) for name in self.nested if name in attrs}
        attrs = super().validate(attrs)
        return {**attrs, **lists}

    def create(self, validated_data):
        lists = {name: validated_data.pop(name, []) for name in self.nested}
        with transaction.atomic():
            instance = super().create(validated_data)
            self._write_nested(instance, lists)
        return instance

    def update(self, instance, validated_data):
        lists = {name: validated_data.pop(name) for name in self.nested if name in validated_data}
        with transaction.atomic():
            instance = super().update(instance, validated_data)
            for name in lists:
                getattr(instance, name).all().delete()
            self._write_nested(instance, lists)
        return instance

    def _write_nested(self, instance, lists):
        for name, rows in lists.items():
            model = self.fields[name].child.Meta.model
            model.objects.bulk_create(model(**{self.nested[name]: instance}, **row) for row in rows)
