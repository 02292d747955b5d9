"""Filter sets for the contract pages (and the API: the same ``?kind=support&expiring_within=60``)."""

from datetime import timedelta

import django_filters
from django import forms
from django.db.models import Q
from django.utils import timezone

from inventory.models import Site
from portal.filters import STATE_WIDGET, SearchFilterSet, yes_no_filter

from .coverage import BOTH, NO_SUPPORT, WARRANTY_ENDED
from .models import Contract
from .queries import renewal_alerts


class ContractFilterSet(SearchFilterSet):
    search_fields = ("vendor", "reference", "title", "notes")
    kind = django_filters.MultipleChoiceFilter(choices=Contract.Kind.choices, widget=STATE_WIDGET)
    vendor = django_filters.CharFilter(lookup_expr="iexact")
    active = yes_no_filter(method="filter_active", label="Active today")
    auto_renew = yes_no_filter(label="Renews automatically")
    expiring_within = django_filters.NumberFilter(
        # Bounded: a date past year 9999 cannot be computed (it was a 500).
        method="filter_expiring_within", label="Ends within (days)", min_value=0, max_value=36500,
        widget=forms.NumberInput(attrs={"min": 0, "placeholder": "e.g. 60"}),
    )
    site = django_filters.ModelChoiceFilter(field_name="sites", queryset=Site.objects.all(), label="Covers site")
    renewal_due = yes_no_filter(method="filter_renewal_due", label="Renewal alert open")

    class Meta:
        model = Contract
        fields = ["kind", "vendor", "owner", "auto_renew"]

    def filter_active(self, queryset, name, value):
        today = timezone.localdate()
        active = Q(start__lte=today) & (Q(end__isnull=True) | Q(end__gte=today))
        return queryset.filter(active) if value else queryset.exclude(active)

    def filter_renewal_due(self, queryset, name, value):
        due = Q(pk__in=renewal_alerts().values("contract"))
        return queryset.filter(due) if value else queryset.exclude(due)

    def filter_expiring_within(self, queryset, name, value):
        today = timezone.localdate()
        return queryset.filter(end__gte=today, end__lte=today + timedelta(days=int(value)))


class UncoveredNodeFilterSet(SearchFilterSet):
    search_fields = ("hostname", "serial")
    site = django_filters.ModelChoiceFilter(queryset=Site.objects.all())
    reason = django_filters.ChoiceFilter(choices=[(r, r.capitalize()) for r in (NO_SUPPORT, WARRANTY_ENDED, BOTH)],
                                         label="Reason")
