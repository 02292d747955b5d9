"""Filter set of the recommendation list."""

import django_filters

from portal.filters import STATE_WIDGET, SearchFilterSet

from .models import Recommendation

R = Recommendation


class RecommendationFilterSet(SearchFilterSet):
    search_fields = ("title", "summary", "partition")
    status = django_filters.MultipleChoiceFilter(choices=R.Status.choices, widget=STATE_WIDGET)
    kind = django_filters.MultipleChoiceFilter(choices=R.Kind.choices, widget=STATE_WIDGET)
    severity = django_filters.MultipleChoiceFilter(choices=R.Severity.choices, widget=STATE_WIDGET)
    # Raised after a moment: the home page's "new since your last visit" links here with that visit's time.
    raised_after = django_filters.IsoDateTimeFilter(field_name="created", lookup_expr="gt", label="Raised after")

    class Meta:
        model = Recommendation
        fields = ["status", "kind", "severity", "partition", "site"]
