from ..filters import SearchFilterSet
from .models import DirectoryGroupMapping


class DirectoryGroupMappingFilterSet(SearchFilterSet):
    search_fields = ("group", "team")

    class Meta:
        model = DirectoryGroupMapping
        fields = ["source", "role", "team"]
