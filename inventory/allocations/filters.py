"""Filter sets of the allocation and request lists."""

import django_filters

from portal.filters import SearchFilterSet

from .models import AllocationRequest, TeamAllocation


class TeamAllocationFilterSet(SearchFilterSet):
    search_fields = ("team__name", "partition", "gpu_model__name")

    class Meta:
        model = TeamAllocation
        fields = ["team", "partition", "gpu_model"]


class AllocationRequestFilterSet(SearchFilterSet):
    search_fields = ("team__name", "partition", "reason")
    status = django_filters.MultipleChoiceFilter(choices=AllocationRequest.Status.choices)
    kind = django_filters.MultipleChoiceFilter(choices=AllocationRequest.Kind.choices)

    class Meta:
        model = AllocationRequest
        fields = ["status", "kind", "team"]
