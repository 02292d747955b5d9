"""Django admin for the expansion recommendations."""

from django.contrib import admin

from .models import Recommendation


@admin.register(Recommendation)
class RecommendationAdmin(admin.ModelAdmin):
    """Written by the analysis (``store``); accepted or dismissed on its page or the API."""

    list_display = ["title", "kind", "severity", "status", "partition", "site", "detected_at", "decided_by", "plan"]
    list_filter = ["status", "kind", "severity"]
    search_fields = ["title", "summary", "partition", "key"]
    list_select_related = ["site", "decided_by", "plan"]
    readonly_fields = ["key", "kind", "evidence", "created", "updated", "detected_at", "decided_by", "decided_at",
                       "plan"]
