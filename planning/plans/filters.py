"""Filter set of the capacity plan list."""

import django_filters

from portal.filters import STATE_WIDGET, SearchFilterSet

from .models import CapacityPlan


class CapacityPlanFilterSet(SearchFilterSet):
    search_fields = ("name", "description")
    status = django_filters.MultipleChoiceFilter(choices=CapacityPlan.Status.choices, widget=STATE_WIDGET)

    class Meta:
        model = CapacityPlan
        fields = ["status", "owner"]
