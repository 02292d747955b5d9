"""Filter sets of the webhook list (pages) and the delivery log (API)."""

import django_filters

from .models import Webhook, WebhookDelivery


class WebhookFilterSet(django_filters.FilterSet):
    class Meta:
        model = Webhook
        fields = ["enabled"]


class WebhookDeliveryFilterSet(django_filters.FilterSet):
    event = django_filters.CharFilter()  # not a choice filter: test events are "ping"

    class Meta:
        model = WebhookDelivery
        fields = ["webhook", "event", "status"]
