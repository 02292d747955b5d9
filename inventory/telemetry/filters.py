"""Filter sets of the telemetry lists, shared by the pages and the API."""

import django_filters

from inventory.filters import SearchFilterSet, yes_no_filter

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


class GPUHourlyFilterSet(django_filters.FilterSet):
    """Hourly GPU rows of one GPU, node or site, over ``since`` ≤ hour < ``until``."""

    node = django_filters.NumberFilter(field_name="gpu__node")
    site = django_filters.NumberFilter(field_name="gpu__node__site")
    since = django_filters.IsoDateTimeFilter(field_name="hour", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="hour", lookup_expr="lt")

    class Meta:
        model = GPUHourly
        fields = ["gpu"]
