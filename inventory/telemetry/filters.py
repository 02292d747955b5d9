"""Filter sets of the telemetry lists, shared by the pages and the API."""

from datetime import UTC

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

from portal.filters import SearchFilterSet, yes_no_filter

from .models import GPUHourly, TelemetrySource, UnknownSeries


class TelemetrySourceFilterSet(SearchFilterSet):
    search_fields = ("name", "url")
    enabled = yes_no_filter()
    stale = yes_no_filter(field_name="stale_since", lookup_expr="isnull", exclude=True, label="Stale")

    class Meta:
        model = TelemetrySource
        fields = ["kind", "site", "enabled", "stale"]


class UnknownSeriesFilterSet(SearchFilterSet):
    search_fields = ("key", "uuid", "hostname", "model_name")
    source = django_filters.ModelChoiceFilter(queryset=TelemetrySource.objects.all())

    class Meta:
        model = UnknownSeries
        fields = ["source"]


class UTCDateTimeField(IsoDateTimeField):
    """An ISO 8601 date and time, compared in UTC: ISO 8601 and Python accept offsets up to ±23:59, PostgreSQL
    only up to ±15:59 (``+23:58`` was a 500)."""

    def to_python(self, value):
        value = super().to_python(value)
        try:
            return value.astimezone(UTC) if value is not None else None
        except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
            raise forms.ValidationError("Out of the range of dates.", code="invalid") from None


class UTCDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UTCDateTimeField


class GPUHourlyFilterSet(django_filters.FilterSet):
    """Hourly GPU rows of one GPU, node or site, over ``since`` ≤ hour < ``until``."""

    node = django_filters.NumberFilter(field_name="gpu__node")
    site = django_filters.NumberFilter(field_name="gpu__node__site")
    since = UTCDateTimeFilter(field_name="hour", lookup_expr="gte")
    until = UTCDateTimeFilter(field_name="hour", lookup_expr="lt")

    class Meta:
        model = GPUHourly
        fields = ["gpu"]
