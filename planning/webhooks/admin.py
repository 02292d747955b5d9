"""Django admin for webhooks, with a write-only secret, and their deliveries read-only with their attempts."""

from django import forms
from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .models import Webhook, WebhookAttempt, WebhookDelivery


class WebhookForm(forms.ModelForm):
    """The secret is write-only: never shown; left empty on a change, the stored one is kept."""

    url = forms.URLField(max_length=500, assume_scheme="https")
    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), required=False, max_length=200,
                             help_text="Signs each payload (HMAC-SHA256). Leave empty to keep the current secret.")

    class Meta:
        model = Webhook
        fields = ["name", "url", "secret", "events", "enabled"]

    def clean_secret(self):
        secret = self.cleaned_data["secret"]
        if not secret and not self.instance.pk:
            raise forms.ValidationError("A new webhook needs a secret.")
        return secret or self.instance.secret


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
