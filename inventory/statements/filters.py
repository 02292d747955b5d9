"""Filters of the statement and rate card lists, for the pages and the API alike."""

import django_filters

from portal.filters import MonthFilter, SearchFilterSet

from .models import RateCard, Statement


class StatementFilterSet(SearchFilterSet):
    """Statements by month ("YYYY-MM"), team (its name; "no team" for the jobs of none) and a search on the team."""

    search_fields = ("team__name",)
    month = MonthFilter(method="in_month", label="Month (YYYY-MM)")
    team = django_filters.CharFilter(method="of_team", label="Team")

    class Meta:
        model = Statement
        fields = ["month", "team"]

    def in_month(self, queryset, name, value):
        return queryset.filter(month=value) if value else queryset

    def of_team(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(team__isnull=True) if value == "no team" else queryset.filter(team__name=value)


class RateCardFilterSet(SearchFilterSet):
    search_fields = ("note", "currency")

    class Meta:
        model = RateCard
        fields = ["currency"]
