"""Webhooks (the secret is write-only) and the delivery log with every attempt nested."""

from rest_framework import serializers

from portal.api.serializers import COMMON, TIMESTAMPS, EnumChoiceField, OutboundErrorsMixin, PortalModelSerializer

from ..models import Webhook, WebhookAttempt, WebhookDelivery


class WebhookSerializer(PortalModelSerializer):
    """A webhook. ``secret`` signs each payload (HMAC-SHA256, ``X-Portal-Signature``): required on create,
    never shown; left out (or blank) on update it stays as it was."""

    secret = serializers.CharField(write_only=True, required=False, allow_blank=True, max_length=200,
                                   style={"input_type": "password"},
                                   help_text="Required on create; write-only. Omit on update to keep it.")
    events = serializers.ListField(child=EnumChoiceField(Webhook.Event), allow_empty=True, required=False,
                                   help_text="Event names this webhook receives.")

    class Meta:
        model = Webhook
        fields = [*COMMON, "name", "url", "secret", "events", "enabled", *TIMESTAMPS]

    def validate(self, attrs):
        if not attrs.get("secret"):
            if self.instance is None:
                raise serializers.ValidationError({"secret": ["A new webhook needs a secret."]})
            attrs.pop("secret", None)
        if "events" in attrs:
            attrs["events"] = list(dict.fromkeys(attrs["events"]))  # keep the order, drop repeats
        return super().validate(attrs)


WEBHOOK_ERRORS_PERMISSION = "planning.change_webhook"


class WebhookAttemptSerializer(OutboundErrorsMixin, serializers.ModelSerializer):
    outbound_error_fields = ("error",)
    outbound_errors_permission = WEBHOOK_ERRORS_PERMISSION

    class Meta:
        model = WebhookAttempt
        fields = ["id", "at", "status_code", "error", "duration_ms"]


class WebhookDeliverySerializer(OutboundErrorsMixin, serializers.ModelSerializer):
    """One event sent (or being sent) to one webhook, with each attempt. The errors (``last_error``, each
    attempt's ``error``) are null for those who may not change webhooks (only managers read errors)."""

    outbound_error_fields = ("last_error",)
    outbound_errors_permission = WEBHOOK_ERRORS_PERMISSION

    url = serializers.HyperlinkedIdentityField(view_name="planning-api:webhookdelivery-detail")
    webhook_name = serializers.CharField(source="webhook.name", read_only=True)
    event = serializers.CharField(read_only=True, help_text="A Webhook event, or `ping` for a test event.")
    status = serializers.CharField(read_only=True, help_text="`pending`, `sent` or `failed`.")
    attempt_log = WebhookAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id", "url", "webhook", "webhook_name", "event", "payload", "status", "attempts", "last_status_code",
            "last_error", "created", "last_attempt_at", "next_attempt_at", "attempt_log",
        ]
        read_only_fields = fields
