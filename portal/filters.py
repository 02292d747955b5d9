"""The base of every app's filter sets (list pages and API alike): the ``q`` search, the state checkboxes and the
Any / Yes / No boolean."""

import django_filters
from django import forms
from django.db.models import Q

from .forms import CheckboxSelectMultiple, Select

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
