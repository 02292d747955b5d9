"""Filter sets of the allocation and request lists."""

import django_filters

from portal.filters import SearchFilterSet

from .models import AllocationRequest, TeamAllocation
from .policy import awaiting_decision


class TeamAllocationFilterSet(SearchFilterSet):
    search_fields = ("team__name", "partition", "gpu_model__name")

    class Meta:
        model = TeamAllocation
        fields = ["team", "partition", "gpu_model"]


class AllocationRequestFilterSet(SearchFilterSet):
    search_fields = ("team__name", "partition", "reason")
    status = django_filters.MultipleChoiceFilter(choices=AllocationRequest.Status.choices)
    kind = django_filters.MultipleChoiceFilter(choices=AllocationRequest.Kind.choices)
    awaiting_me = django_filters.BooleanFilter(method="awaiting_my_decision", label="Awaiting my decision")

    class Meta:
        model = AllocationRequest
        fields = ["status", "kind", "team"]

    def awaiting_my_decision(self, queryset, name, value):
        """The requests the user may decide now (the home page's "awaiting your decision" links here)."""
        if not value or self.request is None:
            return queryset
        return awaiting_decision(queryset, self.request.user)
