"""The base of every app's filter sets (list pages and API alike): the ``q`` search, the state checkboxes, the
Any / Yes / No boolean and a calendar month; and the list pages' paginator."""

import django_filters
from django import forms
from django.core.paginator import Paginator
from django.db.models import Q

from .forms import CheckboxSelectMultiple, MonthField, Select

STATE_WIDGET = CheckboxSelectMultiple(attrs={"class": "inline-choices"})


def yes_no_filter(**kwargs):
    """A boolean filter shown as Any / Yes / No (rather than django-filter's "Unknown")."""
    widget = forms.Select(choices=[("", "Any"), ("true", "Yes"), ("false", "No")])
    return django_filters.BooleanFilter(widget=widget, **kwargs)


class SearchFilterSet(django_filters.FilterSet):
    """Adds ``q``: a case-insensitive match on any of ``search_fields``."""

    q = django_filters.CharFilter(method="search", label="Search")
    search_fields: tuple = ()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A choice of objects (a site, a rack: 125 options on the node list) is drawn on every list page: drawn in
        # Python, not through Django's widget templates (its choices are flat, as portal.forms.Select needs).
        for filter_ in self.filters.values():
            if isinstance(filter_, django_filters.ModelChoiceFilter) and "widget" not in filter_.extra:
                filter_.extra["widget"] = Select

    def search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        match = Q()
        for field in self.search_fields:
            match |= Q(**{f"{field}__icontains": value})
        return queryset.filter(match)


class MonthFilter(django_filters.CharFilter):
    """A calendar month, "YYYY-MM" (``portal.forms.MonthField``): the filter's method gets its first day. A text
    filter to the API schema, as it was."""

    field_class = MonthField


MAX_PER_PAGE = 500


class BoundedPaginator(Paginator):
    """The list pages' paginator. django-tables2 takes ``?per_page=`` from the URL as it is: a negative one was a 500,
    a huge one every row on one page. Kept from 1 to ``MAX_PER_PAGE``."""

    def __init__(self, object_list, per_page, *args, **kwargs):
        super().__init__(object_list, min(max(int(per_page), 1), MAX_PER_PAGE), *args, **kwargs)
