import django_filters

from portal.filters import SearchFilterSet

from .models import Team


class TeamFilterSet(SearchFilterSet):
    search_fields = ("name", "description", "email")
    member = django_filters.CharFilter(field_name="members__username", label="Member (username)", distinct=True)

    class Meta:
        model = Team
        fields = ["name", "pi", "email", "member"]
