"""Filter set of the partition moves (pages and API)."""

import django_filters

from portal.filters import SearchFilterSet

from .models import PartitionMove


class PartitionMoveFilterSet(SearchFilterSet):
    search_fields = ("from_partition", "to_partition", "reason", "nodes__hostname")
    status = django_filters.MultipleChoiceFilter(choices=PartitionMove.Status.choices)

    class Meta:
        model = PartitionMove
        fields = ["status", "from_partition", "to_partition", "recommendation"]

    def search(self, queryset, name, value):
        return super().search(queryset, name, value).distinct()
