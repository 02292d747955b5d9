"""The webhook list's table (django-tables2)."""

import django_tables2 as tables

from .models import Webhook


class WebhookTable(tables.Table):
    name = tables.Column(linkify=True)

    class Meta:
        model = Webhook
        fields = ["name", "url", "events", "enabled"]
