"""Django admin for webhooks, with a write-only secret, and their deliveries read-only with their attempts."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .forms import WebhookForm  # the pages' form: the secret write-only there too
from .models import Webhook, WebhookAttempt, WebhookDelivery


@admin.register(Webhook)
class WebhookAdmin(SimpleHistoryAdmin):
    form = WebhookForm
    list_display = ["name", "url", "events", "enabled"]
    list_filter = ["enabled"]
    search_fields = ["name", "url"]


class WebhookAttemptInline(ReadOnlyMixin, admin.TabularInline):
    model = WebhookAttempt
    fields = ["at", "status_code", "error", "duration_ms"]
    readonly_fields = fields


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "webhook", "event", "status", "attempts", "last_status_code", "created",
                    "next_attempt_at"]
    list_filter = ["status", "event", "webhook"]
    search_fields = ["webhook__name", "last_error"]
    list_select_related = ["webhook"]
    date_hierarchy = "created"
    inlines = [WebhookAttemptInline]
