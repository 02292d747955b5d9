"""One battery for every model with pages or an API viewset: list and detail pages, create, edit and delete
through the forms, who may do what (anonymous, viewer, manager), constant query counts at 5 and 500 rows, and
no secret in API answers.

The models are found in the URL conf (``<app>:<model>_list`` pages, ``<app>-api:<basename>-list`` routes), so
a new model is tested as soon as it has pages or a viewset: give it a maker in ``MAKERS``, or an entry with a
reason in one of the exception lists.
"""

import re

import pytest
from django import forms
from django.apps import apps
from django.forms.formsets import BaseFormSet
from django.test.utils import ContextList
from django.urls import NoReverseMatch, get_resolver, resolve, reverse

from inventory.goodput.models import Interruption
from inventory.models import AllocationRequest, PartitionMove, SlurmSync, Team, TeamAllocation
from inventory.statements.models import RateCard, Statement
from inventory.telemetry.models import GPUHourly, SlurmJob, TelemetrySource, UnknownSeries
from planning.models import CapacityPlan, Contract, Delivery, PurchaseOrder, Recommendation, Webhook, WebhookDelivery
from portal.generic import VERSION_FIELD
from support.models import NotificationRule, Ticket, TicketComment
from tests import factories as f
from tests.helpers.allocations import make_allocation_requests, make_allocations, make_slurm_syncs
from tests.helpers.eventrules import make_rules
from tests.helpers.partitionmoves import make_partition_moves
from tests.helpers.statements import make_rate_cards, make_statements

APPS = ("inventory", "planning", "support")
MAX_QUERIES = 30  # the ceiling of any list at 5 rows; at 500 rows a list may not take more than at 5


def _shared(factory, **parents):
    """``n`` objects of ``factory`` under one set of parents (made once per call): quicker than a parent each,
    and an N+1 on a relation shows all the same."""
    return lambda n: factory.create_batch(n, **{name: make() for name, make in parents.items()})


def _each(make_many, *children):
    """``make_many``, then ``child(obj)`` for every object: the rows a list shows counts or names of."""
    def make(n):
        objs = make_many(n)
        for obj in objs:
            for child in children:
                child(obj)
        return objs
    return make


def _covering(contract):
    contract.nodes.add(f.make_node())
    f.SLATermFactory(contract=contract)


def _delivered(delivery):
    """A node and one of its GPUs, delivered."""
    node = f.make_node()
    f.DeliveryItemFactory(delivery=delivery, node=node)
    f.DeliveryItemFactory(delivery=delivery, gpu=f.make_gpu(node=node))


# How to make ``n`` saved rows of each model (inventory: bulk inserts; the others: factory_boy), with what their
# lists show: an order's lines and deliveries, a delivery's items, a contract's coverage, a ticket's asset.
MAKERS = {
    **{apps.get_model("inventory", name): (lambda n, name=name: f.bulk_make(name, n)) for name in f.BULK},
    TelemetrySource: f.TelemetrySourceFactory.create_batch,
    UnknownSeries: _shared(f.UnknownSeriesFactory, source=f.TelemetrySourceFactory),
    SlurmJob: _shared(f.SlurmJobFactory, source=lambda: f.TelemetrySourceFactory(kind=TelemetrySource.Kind.SLURM)),
    GPUHourly: _shared(f.GPUHourlyFactory, gpu=f.make_gpu),
    Interruption: _shared(f.InterruptionFactory, node=f.make_node,
                          job__source=lambda: f.TelemetrySourceFactory(kind=TelemetrySource.Kind.SLURM)),
    Contract: _each(f.ContractFactory.create_batch, _covering),
    PurchaseOrder: _each(_shared(f.PurchaseOrderFactory, site=f.make_site, created_by=f.UserFactory),
                         lambda order: _delivered(f.DeliveryFactory(order=order))),
    Delivery: _each(_shared(f.DeliveryFactory, order=f.PurchaseOrderFactory), _delivered),
    Webhook: f.WebhookFactory.create_batch,
    WebhookDelivery: _each(_shared(f.WebhookDeliveryFactory, webhook=f.WebhookFactory),
                           lambda delivery: f.WebhookAttemptFactory(delivery=delivery)),
    CapacityPlan: _each(_shared(f.CapacityPlanFactory, owner=f.UserFactory),
                        lambda plan: f.PlanItemFactory(plan=plan), lambda plan: f.PlanWorkloadFactory(plan=plan)),
    Recommendation: _shared(f.RecommendationFactory, site=f.make_site),
    Ticket: _shared(f.TicketFactory, requester=lambda: f.UserFactory(username="rita"), team=f.TeamFactory,
                    node=f.make_node),
    TicketComment: _shared(f.TicketCommentFactory, ticket=f.TicketFactory),
    Team: _each(f.TeamFactory.create_batch, lambda team: team.memberships.create(user=f.UserFactory())),
    RateCard: make_rate_cards,
    Statement: make_statements,
    TeamAllocation: make_allocations,
    AllocationRequest: make_allocation_requests,
    SlurmSync: make_slurm_syncs,
    PartitionMove: make_partition_moves,
    NotificationRule: make_rules,
}

# Model fields that hold a secret: never in an API answer, and their value nowhere in its body.
SECRETS = {Webhook: "secret", TelemetrySource: "auth_token"}

# Model fields an API answer leaves out on purpose (besides secrets).
HIDDEN_FIELDS = {
    (Interruption, "xid_event"): "shown inside fault (code, meaning, time, GPU)",
    (Interruption, "transition"): "shown inside fault (the lifecycle change that was the fault)",
    (Interruption, "fault_ts"): "shown inside fault as its time",
    (SlurmJob, "running_until"): "bookkeeping of the pull; the answer gives gpu_hours and the end time",
    (WebhookDelivery, "sending_until"): "the sender's lease, internal to the retry loop",
    (Ticket, "fault_key"): "the de-duplication key of telemetry-fault tickets, internal",
    (TicketComment, "author_name"): "shown as author",
}

# Pages a model has that the battery leaves to the model's own tests.
PAGE_EXCEPTIONS = {
    (PurchaseOrder, "add"): "a redirect to the API's form: orders and deliveries are created through the API",
    (Delivery, "add"): "a redirect to the API's form: orders and deliveries are created through the API",
    (Interruption, "create"): "recorded from Slurm jobs and faults (inventory/goodput/recording.py), never by hand",
    (Ticket, "create"): "the add form differs from the edit form (requester, attachment): support/test_support_pages",
    (AllocationRequest, "add"): "asked through workflow.request, its form tested in tests/inventory/allocations",
}


# --- Discovery --------------------------------------------------------------------------------------


def _names(namespace):
    resolver = get_resolver().namespace_dict[namespace][1]
    return sorted(name for name in resolver.reverse_dict if isinstance(name, str))


def page_models():
    """Every model with a list page: ``<app>:<model_name>_list``."""
    return [apps.get_model(app, name.removesuffix("_list")) for app in APPS for name in _names(app)
            if name.endswith("_list")]


def api_routes():
    """``(model, list URL name)`` of every viewset (the model is its queryset's)."""
    routes = []
    for app in APPS:
        for name in _names(f"{app}-api"):
            if name.endswith("-list"):
                url_name = f"{app}-api:{name}"
                routes.append((resolve(reverse(url_name)).func.cls.queryset.model, url_name))
    return routes


PAGE_MODELS = page_models()
API_ROUTES = api_routes()


def page_url(model, action, *args):
    """The URL of a model's page, or None where it has no such page (or the battery leaves it out)."""
    if (model, action) in PAGE_EXCEPTIONS:
        return None
    try:
        return reverse(f"{model._meta.app_label}:{model._meta.model_name}_{action}", args=args)
    except NoReverseMatch:
        return None


def make(model, n=1):
    return MAKERS[model](n)


def test_every_model_with_pages_or_a_viewset_has_a_maker():
    found = set(PAGE_MODELS) | {model for model, _ in API_ROUTES}
    assert found - set(MAKERS) == set(), "add a factory for these models to MAKERS"
    assert len(PAGE_MODELS) >= 17 and len(API_ROUTES) >= 23  # discovery still finds the models


# --- Pages ------------------------------------------------------------------------------------------


def form_data(context, formsets=True):
    """The POST body of the form (and formsets) in ``context`` as rendered: submitting it changes nothing."""
    forms_shown = [context["form"]]
    if formsets:
        values = [value for layer in (context if isinstance(context, ContextList) else [context])
                  for value in layer.flatten().values()]
        for formset in {id(value): value for value in values if isinstance(value, BaseFormSet)}.values():
            forms_shown += [formset.management_form, *formset]
    data = {}
    for form in forms_shown:
        for field in form:
            value = field.field.prepare_value(field.value())
            if isinstance(field.field, forms.BooleanField):
                if value:
                    data[field.html_name] = "on"
            elif not isinstance(field.field, forms.FileField):
                data[field.html_name] = "" if value is None else value
    return data


@pytest.mark.django_db
@pytest.mark.parametrize("model", PAGE_MODELS)
def test_anonymous_is_sent_to_login(client, model):
    obj = make(model)[0]
    for url in (page_url(model, "list"), page_url(model, "detail", obj.pk), page_url(model, "add")):
        if url:
            response = client.get(url)
            assert response.status_code == 302 and response.url.startswith(reverse("login")), url


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_viewer_reads_the_list_and_the_detail(viewer_client, model):
    obj = make(model, 3)[0]
    response = viewer_client.get(page_url(model, "list"))
    assert response.status_code == 200
    assert response.context["table"].paginator.count == model.objects.count()
    detail = page_url(model, "detail", obj.pk)
    if detail:
        assert viewer_client.get(detail).status_code == 200


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_viewer_cannot_add_edit_or_delete(viewer_client, model):
    obj = make(model)[0]
    shown = viewer_client.get(page_url(model, "list")).content.decode()
    if detail := page_url(model, "detail", obj.pk):
        shown += viewer_client.get(detail).content.decode()
    for url in (page_url(model, "add"), page_url(model, "edit", obj.pk)):
        if url:
            assert viewer_client.get(url).status_code == 403, url
            assert f'href="{url}"' not in shown  # no button leads there
    if delete := page_url(model, "delete", obj.pk):
        assert viewer_client.post(delete).status_code == 403
        assert f'action="{delete}"' not in shown and f'href="{delete}"' not in shown
    assert model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_manager_edits_creates_and_deletes(manager_client, model):
    obj = make(model)[0]
    edit = page_url(model, "edit", obj.pk)
    if edit is None:
        pytest.skip("no edit page")
    if detail := page_url(model, "detail", obj.pk):
        assert f'href="{edit}"' in manager_client.get(detail).content.decode()  # the button is offered
    page = manager_client.get(edit)
    assert page.status_code == 200
    data = form_data(page.context)
    response = manager_client.post(edit, data)
    assert response.status_code == 302, response.context["form"].errors

    delete = page_url(model, "delete", obj.pk)
    assert manager_client.post(delete).status_code == 302
    assert not model.objects.filter(pk=obj.pk).exists()

    add = None if (model, "create") in PAGE_EXCEPTIONS else page_url(model, "add")
    if add:  # the edited values make the object again; the add form's own defaults fill the rest (state, formsets)
        edited = form_data(page.context, formsets=False)
        edited.pop(VERSION_FIELD, None)  # the edited object's, not the new one's
        data = {**form_data(manager_client.get(add).context), **edited}
        if model in SECRETS:  # write-only: the edit form leaves it empty
            data[SECRETS[model]] = "new-secret"
        count = model.objects.count()
        response = manager_client.post(add, data)
        assert response.status_code == 302, response.context["form"].errors
        assert model.objects.count() == count + 1


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_list_page_queries_do_not_grow_from_5_to_500_rows(manager_client, django_assert_max_num_queries, model):
    url = page_url(model, "list")
    make(model, 5)
    manager_client.get(url)  # warm-up: session, content types
    with django_assert_max_num_queries(MAX_QUERIES) as few:
        manager_client.get(url)
    bound = len(few)  # now: the connection's query log keeps the last 9000 only, and making rows fills it
    make(model, 495)
    with django_assert_max_num_queries(bound):
        response = manager_client.get(url)
    assert response.context["table"].paginator.count >= 500


def saved_again(obj, times):
    """``obj`` saved ``times`` more times: as many change records in its history (the page shows the latest)."""
    for _ in range(times):
        type(obj).objects.get(pk=obj.pk).save()
    return obj


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_detail_page_queries_do_not_grow_with_the_objects_history(manager_client, django_assert_max_num_queries,
                                                                   model):
    small, large = (saved_again(obj, times) for obj, times in zip(make(model, 2), (2, 12), strict=True))
    if not page_url(model, "detail", small.pk):
        pytest.skip("no detail page")
    manager_client.get(page_url(model, "detail", small.pk))  # warm-up: session, content types
    with django_assert_max_num_queries(MAX_QUERIES) as few:
        assert manager_client.get(page_url(model, "detail", small.pk)).status_code == 200
    with django_assert_max_num_queries(len(few)):
        assert manager_client.get(page_url(model, "detail", large.pk)).status_code == 200


# --- API ----------------------------------------------------------------------------------------------


def detail_url(list_name, obj):
    return reverse(list_name.removesuffix("-list") + "-detail", args=[obj.pk])


def allows(url, method):
    """Whether the route at ``url`` answers ``method`` (its viewset's action map and allowed methods)."""
    view = resolve(url).func
    return method in view.actions and method in view.cls.http_method_names


@pytest.mark.django_db
@pytest.mark.parametrize("model, list_name", API_ROUTES)
def test_api_refuses_anonymous(client, model, list_name):
    obj = make(model)[0]
    assert client.get(reverse(list_name)).status_code == 401
    assert client.get(detail_url(list_name, obj)).status_code == 401
    if allows(detail_url(list_name, obj), "delete"):
        assert client.delete(detail_url(list_name, obj)).status_code == 401
    assert model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize("model, list_name", API_ROUTES)
def test_api_viewer_reads_but_cannot_write(viewer_api, model, list_name):
    obj = make(model)[0]
    assert viewer_api.get(reverse(list_name)).status_code == 200
    assert viewer_api.get(detail_url(list_name, obj)).status_code == 200
    if allows(reverse(list_name), "post"):
        assert viewer_api.post(reverse(list_name), {}, format="json").status_code == 403
    if allows(detail_url(list_name, obj), "patch"):
        assert viewer_api.patch(detail_url(list_name, obj), {}, format="json").status_code == 403
    if allows(detail_url(list_name, obj), "delete"):
        assert viewer_api.delete(detail_url(list_name, obj)).status_code == 403
    assert model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize("model, list_name", API_ROUTES)
def test_api_manager_writes(manager_api, model, list_name):
    obj = make(model)[0]
    if allows(detail_url(list_name, obj), "patch"):
        assert manager_api.patch(detail_url(list_name, obj), {}, format="json").status_code == 200
    if allows(detail_url(list_name, obj), "delete"):
        assert manager_api.delete(detail_url(list_name, obj)).status_code == 204
        assert not model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize("model, list_name", API_ROUTES)
def test_api_list_queries_do_not_grow_from_5_to_500_rows(manager_api, django_assert_max_num_queries, model,
                                                         list_name):
    url, params = reverse(list_name), {"page_size": 1000}
    before = model.objects.count()  # the hardware catalog ships with some GPU and node models
    make(model, 5)
    manager_api.get(url)  # warm-up: the token's "last used" stamp, caches
    with django_assert_max_num_queries(MAX_QUERIES) as few:
        assert manager_api.get(url, params).json()["count"] == before + 5
    bound = len(few)  # now: the connection's query log keeps the last 9000 only, and making rows fills it
    make(model, 495)
    manager_api.get(url)  # making 495 rows can take longer than the token's "last used" stamp lasts
    with django_assert_max_num_queries(bound):
        response = manager_api.get(url, params)
    assert response.json()["count"] == len(response.json()["results"]) == before + 500


@pytest.mark.parametrize("model, list_name", API_ROUTES)
def test_api_serializer_exposes_every_model_field(model, list_name):
    viewset = resolve(reverse(list_name)).func.cls
    fields = viewset.serializer_class().fields
    hidden = {SECRETS.get(model)} | {name for hidden_model, name in HIDDEN_FIELDS if hidden_model is model}
    assert {field.name for field in model._meta.concrete_fields} - hidden <= set(fields)
    assert all(fields[name].write_only for name in hidden & set(fields))  # a secret may be set, never read


SECRET_NAME = re.compile(r"secret|token|password|private")


@pytest.mark.parametrize("model, list_name", API_ROUTES)
def test_api_answers_hold_no_secret(manager_api, model, list_name):
    names = {field.name for field in model._meta.concrete_fields if SECRET_NAME.search(field.name)}
    assert names <= {SECRETS.get(model)}, "a field that looks secret: add it to SECRETS (never shown)"
    obj = make(model)[0]
    if model in SECRETS:
        setattr(obj, SECRETS[model], "do-not-show-7f3a")
        obj.save()
    for response in (manager_api.get(reverse(list_name)), manager_api.get(detail_url(list_name, obj))):
        assert response.status_code == 200
        assert b"do-not-show-7f3a" not in response.content
        rows = response.json().get("results", [response.json()])
        assert all(SECRETS.get(model) not in row for row in rows)
