"""Webhook pages: managers configure them (the secret is write-only); the detail page shows the last deliveries with
their attempts, and a test event can be sent. Declarations over ``portal.generic``."""

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.views import View

from portal.generic import ModelPermissionMixin, ObjectListView, ObjectView

from . import delivery
from .filters import WebhookFilterSet
from .models import Webhook
from .tables import WebhookTable


class WebhookListView(ObjectListView):
    queryset = Webhook.objects.all()
    filterset_class = WebhookFilterSet
    table_class = WebhookTable


class WebhookView(ObjectView):
    queryset = Webhook.objects.all()
    template_name = "planning/procurement/webhook_detail.html"
    hidden_fields = ("id", "created", "updated", "secret")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["deliveries"] = self.object.deliveries.prefetch_related("attempt_log")[:25]
        return context


class WebhookTestView(ModelPermissionMixin, View):
    """POST: send a ``ping`` event to one webhook (queued like any event)."""

    queryset = Webhook.objects.all()
    permission_action = "change"

    def get_queryset(self):
        return self.queryset

    def post(self, request, pk):
        webhook = get_object_or_404(Webhook, pk=pk)
        delivery.emit(delivery.TEST_EVENT, {"message": "Test event from Cluster Portal."}, webhooks=[webhook])
        messages.success(request, f"Test event queued for {webhook}; the attempts appear below.")
        return HttpResponseRedirect(webhook.get_absolute_url())
