"""Webhooks over REST: ``/api/planning/webhooks/`` (managers write; the secret is write-only) and the read-only
delivery log ``/api/planning/webhook-deliveries/`` with every attempt nested."""

from portal.api.viewsets import PortalModelViewSet

from ..filters import WebhookDeliveryFilterSet
from ..models import Webhook, WebhookDelivery
from .serializers import WebhookDeliverySerializer, WebhookSerializer

READ_ONLY = ["get", "head", "options"]


class WebhookViewSet(PortalModelViewSet):
    """Outgoing webhooks: URL, secret (write-only) and the events each receives."""

    queryset = Webhook.objects.all()
    serializer_class = WebhookSerializer
    filterset_fields = ["enabled"]


class WebhookDeliveryViewSet(PortalModelViewSet):
    """The delivery log, newest first: each event for each webhook, its status and every attempt."""

    queryset = WebhookDelivery.objects.select_related("webhook").prefetch_related("attempt_log")
    serializer_class = WebhookDeliverySerializer
    filterset_class = WebhookDeliveryFilterSet
    http_method_names = READ_ONLY
    ordering = ["-created", "-pk"]
