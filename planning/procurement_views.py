"""Procurement pages: purchase orders and deliveries (read-only; they come in over the API) and webhooks
(managers configure them; the secret is write-only). Declarations over ``portal.generic``."""

import django_filters
import django_tables2 as tables
from django import forms
from django.contrib import messages
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.views import View
from django.views.generic import RedirectView

from portal.generic import ModelPermissionMixin, ObjectListView, ObjectView, RelatedTable, object_urls

from . import procurement, webhooks
from .models import Delivery, DeliveryItem, PurchaseOrder, Webhook
from .tables import money

# --- Tables ---------------------------------------------------------------------------------------


class PurchaseOrderTable(tables.Table):
    reference = tables.Column(linkify=True)
    contract = tables.Column(linkify=True)
    site = tables.Column(linkify=True)

    class Meta:
        model = PurchaseOrder
        fields = ["reference", "vendor", "contract", "site", "status", "ordered_on", "currency"]
        # Orders are not entered on the pages: say where they come from.
        empty_text = ("No purchase orders yet: the procurement system posts them over the API, against an approved "
                      "capacity plan or a purchase contract (docs/procurement.md).")


class OrderLineTable(tables.Table):
    item = tables.Column(accessor="pk", verbose_name="Item", orderable=False)
    quantity = tables.Column("Ordered")
    delivered_count = tables.Column("Delivered")
    remaining = tables.Column(accessor="pk", verbose_name="To come", orderable=False)
    unit_price = tables.Column()

    def render_item(self, record):
        return record.node_model or record.gpu_model or record.description

    def render_remaining(self, record):
        return record.quantity - record.delivered_count

    def render_unit_price(self, record, value):
        return money(value, record.order.currency) if value else f"0 {record.order.currency}"


class DeliveryTable(tables.Table):
    id = tables.Column("Delivery", linkify=True)
    order = tables.Column(linkify=True)
    item_count = tables.Column("Items")

    class Meta:
        model = Delivery
        fields = ["id", "order", "external_id", "delivered_on", "item_count", "created_by"]
        empty_text = ("No deliveries yet: the procurement system posts them over the API as units arrive, and the "
                      "delivered nodes and GPUs appear in the inventory.")


class DeliveryItemTable(tables.Table):
    serial = tables.Column()
    line = tables.Column()
    node = tables.Column(linkify=True)
    gpu = tables.Column("GPU", linkify=True)

    class Meta:
        model = DeliveryItem
        fields = ["serial", "line", "node", "gpu"]


class WebhookTable(tables.Table):
    name = tables.Column(linkify=True)

    class Meta:
        model = Webhook
        fields = ["name", "url", "events", "enabled"]


# --- Filters and forms ----------------------------------------------------------------------------


class PurchaseOrderFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="reference", lookup_expr="icontains", label="Reference")

    class Meta:
        model = PurchaseOrder
        fields = ["q", "status", "vendor", "contract", "site"]


class DeliveryFilterSet(django_filters.FilterSet):
    class Meta:
        model = Delivery
        fields = ["order", "external_id"]


class WebhookFilterSet(django_filters.FilterSet):
    class Meta:
        model = Webhook
        fields = ["enabled"]


class WebhookForm(forms.ModelForm):
    """The secret is write-only: never shown again; leave it empty when editing to keep the current one."""

    url = forms.URLField(label="URL", max_length=500, assume_scheme="https")
    events = forms.MultipleChoiceField(choices=Webhook.Event.choices, widget=forms.CheckboxSelectMultiple)
    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), required=False, max_length=200,
                             help_text="Signs each payload (X-Portal-Signature). Leave empty to keep the current one.")

    class Meta:
        model = Webhook
        fields = ["name", "url", "events", "secret", "enabled"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stored_secret = self.instance.secret
        self.initial["secret"] = ""

    def clean_secret(self):
        secret = self.cleaned_data["secret"] or self.stored_secret
        if not secret:
            raise forms.ValidationError("A new webhook needs a secret.")
        return secret


# --- Views ----------------------------------------------------------------------------------------


class PurchaseOrderListView(ObjectListView):
    queryset = PurchaseOrder.objects.select_related("contract", "site")
    filterset_class = PurchaseOrderFilterSet
    table_class = PurchaseOrderTable


class ReadOnlyObjectView(ObjectView):
    """Orders and deliveries come in over the API and are not edited in the pages."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "can_edit": False, "can_delete": False}


class PurchaseOrderView(ReadOnlyObjectView):
    queryset = PurchaseOrder.objects.select_related("contract", "site", "created_by")
    related_tables = [
        RelatedTable("Lines", OrderLineTable,
                     lambda o: procurement.lines_with_counts().select_related("order").filter(order=o)),
        RelatedTable("Deliveries", DeliveryTable, lambda o: deliveries().filter(order=o),
                     "planning:delivery_list", "order"),
    ]


def deliveries():
    return Delivery.objects.select_related("order", "created_by").annotate(item_count=Count("items"))


class DeliveryListView(ObjectListView):
    queryset = deliveries()
    filterset_class = DeliveryFilterSet
    table_class = DeliveryTable


class DeliveryView(ReadOnlyObjectView):
    queryset = Delivery.objects.select_related("order", "created_by")
    related_tables = [
        RelatedTable("Items", DeliveryItemTable,
                     lambda d: d.items.select_related("line__node_model", "line__gpu_model", "node", "gpu__node")),
    ]


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
        webhooks.emit(webhooks.TEST_EVENT, {"message": "Test event from Cluster Portal."}, webhooks=[webhook])
        messages.success(request, f"Test event queued for {webhook}; the attempts appear below.")
        return HttpResponseRedirect(webhook.get_absolute_url())


procurement_urls = [
    # Orders and deliveries are made through the API (browsable): "add" leads there.
    *object_urls(PurchaseOrder, PurchaseOrderListView, PurchaseOrderView, read_only=True,
                 add_view=RedirectView.as_view(pattern_name="planning-api:purchaseorder-list")),
    *object_urls(Delivery, DeliveryListView, DeliveryView, read_only=True,
                 add_view=RedirectView.as_view(pattern_name="planning-api:delivery-list")),
    *object_urls(Webhook, WebhookListView, WebhookView, WebhookForm,
                 extra=[("<int:pk>/test/", WebhookTestView.as_view(), "test")]),
]
