"""API fields of the plans: a calendar month as "YYYY-MM" (``planning.plans.months``), with its pattern in the
schema."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .. import months


@extend_schema_field({"type": "string", "pattern": months.PATTERN, "example": months.EXAMPLE})
class MonthField(serializers.Field):
    """A calendar month, "YYYY-MM"; stored as the month's first day."""

    default_error_messages = {"invalid": "Enter a month as YYYY-MM, e.g. 2027-03."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            return months.parse(data)
        except ValueError as error:
            raise serializers.ValidationError(str(error), code="invalid") from error

    def to_representation(self, value):
        return value if isinstance(value, str) else months.label(value)  # the analysis hands over labels already
