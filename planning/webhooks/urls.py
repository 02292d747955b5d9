"""Webhook pages."""

from portal.generic import object_urls

from .forms import WebhookForm
from .models import Webhook
from .views import WebhookListView, WebhookTestView, WebhookView

urlpatterns = object_urls(Webhook, WebhookListView, WebhookView, WebhookForm,
                          extra=[("<int:pk>/test/", WebhookTestView.as_view(), "test")])
