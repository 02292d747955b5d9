"""The recommendation list's table (django-tables2)."""

import django_tables2 as tables

from .models import Recommendation


class RecommendationTable(tables.Table):
    title = tables.Column(linkify=True)
    site = tables.Column(accessor="site__name", verbose_name="Site")
    plan = tables.Column(linkify=True, verbose_name="Plan")
    detected_at = tables.DateTimeColumn(format="Y-m-d H:i", verbose_name="Last detected")

    class Meta:
        model = Recommendation
        fields = ("title", "kind", "severity", "status", "partition", "site", "detected_at", "plan")
