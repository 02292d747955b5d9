"""The planning admin: every changelist and change page renders for a superuser, with a bounded number of
queries; deliveries and webhook deliveries are read-only; a webhook's secret is write-only."""

from datetime import date

import pytest
from django.contrib import admin
from django.urls import reverse

from planning.models import Contract, OrderLine, PurchaseOrder, Webhook, WebhookAttempt, WebhookDelivery
from planning.procurement.orders import ItemIn, receive_delivery
from tests.factories import make_gpu_model, make_node_model, make_site

pytestmark = pytest.mark.django_db


@pytest.fixture
def procurement(admin_user):
    contract = Contract.objects.create(kind="expansion", vendor="NVIDIA", reference="EXP-1", start=date(2026, 1, 1))
    order = PurchaseOrder.objects.create(contract=contract, vendor="NVIDIA", reference="PO-1", site=make_site())
    node_line = OrderLine.objects.create(order=order, node_model=make_node_model(gpu_slots=4), quantity=2,
                                         unit_price=1)
    gpu_line = OrderLine.objects.create(order=order, gpu_model=make_gpu_model(), quantity=8, unit_price=1)
    receive_delivery(order, [ItemIn(node_line, serial="N1", hostname="new-1"),
                             ItemIn(gpu_line, serial="G1", uuid="GPU-1", node="new-1", slot=0)], admin_user)
    hook = Webhook.objects.create(name="erp", url="http://127.0.0.1:9/", secret="very-secret",
                                  events=["delivery.received"])
    sent = WebhookDelivery.objects.create(webhook=hook, event="delivery.received", payload={"x": 1}, attempts=1)
    WebhookAttempt.objects.create(delivery=sent, status_code=500, error="boom")
    return order


@pytest.fixture
def superuser_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "pw"))
    return client


def test_planning_admin_pages_render(procurement, superuser_client, django_assert_max_num_queries):
    models = [m for m in admin.site._registry if m._meta.app_label == "planning"]
    assert {PurchaseOrder, Webhook, WebhookDelivery} <= set(models) and len(models) >= 6
    for model in models:
        opts = model._meta
        with django_assert_max_num_queries(15):
            response = superuser_client.get(reverse(f"admin:planning_{opts.model_name}_changelist"))
        assert response.status_code == 200, opts.label
        obj = model.objects.first()
        if obj is not None:
            response = superuser_client.get(reverse(f"admin:planning_{opts.model_name}_change", args=[obj.pk]))
            assert response.status_code == 200, opts.label
            assert "very-secret" not in response.content.decode()
    page = superuser_client.get(reverse("admin:planning_purchaseorder_change", args=[procurement.pk]))
    delivered = [line.delivered_count for line in page.context["inline_admin_formsets"][0].formset.queryset]
    assert delivered == [1, 1]


def test_deliveries_and_webhook_deliveries_are_read_only(procurement, superuser_client):
    for name in ("delivery", "webhookdelivery"):
        assert superuser_client.get(reverse(f"admin:planning_{name}_add")).status_code == 403
    delivery = procurement.deliveries.get()
    page = superuser_client.get(reverse("admin:planning_delivery_change", args=[delivery.pk])).content.decode()
    assert "new-1" in page and 'name="_save"' not in page


def test_the_webhook_secret_is_write_only(superuser_client):
    add = reverse("admin:planning_webhook_add")
    body = {"name": "erp", "url": "http://127.0.0.1:9/", "events": ["delivery.received"], "enabled": "on"}
    assert "secret" in superuser_client.post(add, body).context["adminform"].form.errors
    assert superuser_client.post(add, {**body, "secret": "s3cret"}).status_code == 302
    hook = Webhook.objects.get()
    change = reverse("admin:planning_webhook_change", args=[hook.pk])
    assert "s3cret" not in superuser_client.get(change).content.decode()
    assert superuser_client.post(change, {**body, "secret": "", "url": "http://127.0.0.1:8/"}).status_code == 302
    hook.refresh_from_db()
    assert (hook.secret, hook.url) == ("s3cret", "http://127.0.0.1:8/")
