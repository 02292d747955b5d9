"""The notification rule list's filters (pages and API)."""

from portal.filters import SearchFilterSet

from .models import NotificationRule


class NotificationRuleFilterSet(SearchFilterSet):
    search_fields = ("name",)

    class Meta:
        model = NotificationRule
        fields = ["q", "team", "channel", "digest", "enabled"]
