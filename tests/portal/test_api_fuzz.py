"""Schemathesis fuzzing of the REST API: every operation of ``/api/schema/``, as a manager and as a viewer.

For each operation and role, Hypothesis draws requests from the schema (valid ones and deliberately invalid
ones), sends them through the portal's WSGI application in-process (real middleware, real PostgreSQL) and checks
each response: no server error (5xx), a documented status code, a documented content type and headers, and a
body that matches the documented schema. Path ids are drawn both from the seeded fleet (so detail, update,
delete and action routes reach real objects) and at random (so missing objects are exercised too).

Bounded for the suite: ``FUZZ_EXAMPLES`` examples per operation and role (default 4), derandomized (the same
requests on every run, so CI is reproducible) and without Hypothesis' example database. The full run is the same
test with more examples, e.g. ``FUZZ_EXAMPLES=100``; ``FUZZ_OPERATIONS="PATCH /api/support/"`` limits it to the
operations whose "METHOD /path" contains the text (see docs/api-fuzzing.md).
"""

import os
import time
from datetime import date, timedelta

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from django.test import Client
from django.urls import resolve
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from inventory.goodput.models import Interruption
from inventory.telemetry.models import GPUHourly, NodeHourly, SlurmJob, TelemetrySource, UnknownSeries
from planning.models import (
    CapacityPlan,
    Contract,
    Delivery,
    OrderLine,
    PurchaseOrder,
    Recommendation,
    SLATerm,
    Webhook,
    WebhookDelivery,
)
from portal.models import APIToken
from portal.roles import MANAGER, VIEWER
from support.models import TicketComment
from tests.factories import (
    make_attachment,
    make_gpu,
    make_gpu_model,
    make_node,
    make_node_model,
    make_rack,
    make_site,
    make_storage,
    make_switch,
    make_team,
    make_ticket,
)
from tests.helpers.accounts import make_user
from tests.helpers.allocations import make_allocation_requests, make_allocations, make_slurm_syncs
from tests.helpers.eventrules import make_rules
from tests.helpers.partitionmoves import make_partition_moves
from tests.helpers.statements import make_rate_cards, make_statements

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))
SCHEMA_PATH = "/api/schema/?format=json"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def app():
    return get_wsgi_application()


@pytest.fixture(scope="module")
def api_schema(app, django_db_setup, django_db_blocker):
    """The schema as served at ``/api/schema/`` (it needs a login: a throwaway user, rolled back)."""
    with django_db_blocker.unblock(), _in_process_requests(), transaction.atomic():
        _, key = APIToken.issue(make_user("schema-reader", VIEWER), "fuzz")
        schema = schemathesis.openapi.from_wsgi(SCHEMA_PATH, app, headers={"Authorization": f"Token {key}"})
        transaction.set_rollback(True)
    return schema


class _in_process_requests:
    """Let requests sent straight to the WSGI handler run inside the test's transaction: Django closes the
    connection at the start and end of each request (``close_old_connections``), which would end the
    transaction that holds the seeded fleet. Django's own test client unhooks it the same way."""

    def __enter__(self):
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)

    def __exit__(self, *exc):
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def seed_fleet():
    """A small fleet with one or more objects behind every detail route of the API."""
    site, node_model, gpu_model = make_site(), make_node_model(gpu_slots=4), make_gpu_model()
    rack = make_rack(site)
    nodes = [make_node(site=site, node_model=node_model, rack=rack) for _ in range(2)]
    for node in nodes:
        make_gpu(node=node, gpu_model=gpu_model)
    gpu = make_gpu(gpu_model=gpu_model)  # a spare
    switch = make_switch(site=site)
    make_attachment(node=nodes[0], fabric=switch.fabric, switch=switch)
    storage = make_storage(site=site)
    source = TelemetrySource.objects.create(name="prom", kind=TelemetrySource.Kind.PROMETHEUS,
                                            url="http://127.0.0.1:9/", site=site)
    UnknownSeries.objects.create(source=source, key="GPU-unknown", uuid="GPU-unknown")
    now = timezone.now()
    hour = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    GPUHourly.objects.create(gpu=nodes[0].gpus.first(), hour=hour, util_mean=42.0, samples=60)
    NodeHourly.objects.create(node=nodes[0], hour=hour, util_mean=42.0, samples=60, gpus_reporting=1)
    job = SlurmJob.objects.create(source=source, job_id="42", partition="train", submit_time=now - timedelta(hours=3),
                                  start_time=now - timedelta(hours=2), end_time=now, nodes=nodes[0].hostname,
                                  node_count=1, gpus=1, state="NODE_FAIL")
    Interruption.objects.create(job=job, state="NODE_FAIL", started_at=job.start_time, ended_at=now, gpus=1,
                                partition="train", cause="infrastructure", reason="node_fail", node=nodes[0],
                                lost_run_gpu_hours=1.0, lost_gpu_hours=1.0)
    purchase = Contract.objects.create(kind=Contract.Kind.PURCHASE, vendor="Supermicro", reference="C-1",
                                       start=date(2025, 1, 1))
    support = Contract.objects.create(kind=Contract.Kind.SUPPORT, vendor="NVIDIA", reference="S-1",
                                      start=date(2025, 1, 1), end=date(2030, 1, 1))
    SLATerm.objects.create(contract=support, priority="P2", response_hours=4, resolution_hours=48)
    support.sites.set([site])
    order = PurchaseOrder.objects.create(contract=purchase, vendor="Supermicro", reference="PO-1", site=site)
    OrderLine.objects.create(order=order, node_model=node_model, quantity=2, unit_price="250000.00")
    Delivery.objects.create(order=order)
    for name, status in (("draft plan", CapacityPlan.Status.DRAFT), ("submitted plan", CapacityPlan.Status.SUBMITTED)):
        CapacityPlan.objects.create(name=name, status=status, site=site, node_model=node_model)
    Recommendation.objects.create(key="capacity_bound:partition=train", kind="capacity_bound", title="Queue waits",
                                  summary="Jobs wait.", action="Add nodes.", partition="train", site=site,
                                  node_model=node_model, node_count=2)
    hook = Webhook.objects.create(name="erp", url="https://erp.example.org/hook", secret="s3cret",
                                  events=["delivery.received"])
    WebhookDelivery.objects.create(webhook=hook, event="delivery.received", payload={"id": 1})
    ticket = make_ticket(title="GPU falls off the bus", node=nodes[0], gpu=nodes[0].gpus.first(), priority="P2",
                         team=make_team())
    make_ticket(title="Storage slow", storage_system=storage)
    make_ticket(title="Spare GPU", gpu=gpu)
    TicketComment.objects.create(ticket=ticket, body="Looking into it.")
    make_rate_cards(1), make_statements(1)
    make_allocations(1), make_allocation_requests(1), make_slurm_syncs(1)
    make_partition_moves(1)
    make_rules(1)


def ids_for(path):
    """The ids of the objects behind a detail route (``/api/.../{id}/...``), via the route's viewset."""
    view = resolve(path.replace("{id}", "1")).func
    queryset = getattr(view.cls, "queryset", None)
    assert queryset is not None, f"{path}: no queryset on {view.cls.__name__} to draw ids from"
    ids = sorted(queryset.model._default_manager.values_list("pk", flat=True))
    assert ids, f"{path}: seed_fleet() makes no {queryset.model.__name__}; add one so the route meets a real object"
    return ids


def operations(schema):
    """Every operation of the schema as (label, operation), filtered by ``FUZZ_OPERATIONS`` (a substring of
    "METHOD /path", for a quick look at one route)."""
    wanted = os.environ.get("FUZZ_OPERATIONS", "")
    found = []
    for result in schema.get_all_operations():
        operation = result.ok()  # a schema that cannot be read is an error, not a skip
        label = f"{operation.method.upper()} {operation.path}"
        if wanted in label:
            found.append((label, operation))
    return sorted(found, key=lambda item: item[0])


def fuzz_operation(operation, auth):
    """Run ``EXAMPLES`` generated requests against one operation; returns how many were sent. A failing
    check raises (Hypothesis reports the failing request as a curl command)."""
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    strategies = [operation.as_strategy(mode) for mode in modes]
    if "{id}" in operation.path:
        # Mostly real objects: a random id is almost always a 404, which tells little.
        strategies += [operation.as_strategy(mode, path_parameters={"id": pk}) for pk in ids_for(operation.path)
                       for mode in modes] * 2
    sent = 0

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=st.one_of(strategies))
    def fuzz(case):
        nonlocal sent
        sent += 1
        # Every request meets the same fleet: what one request deleted or changed is back for the next.
        with _in_process_requests(), transaction.atomic():
            try:
                case.call_and_validate(headers=auth, checks=CHECKS)
            finally:
                transaction.set_rollback(True)

    fuzz()
    return sent


@pytest.mark.django_db
@pytest.mark.parametrize("role", [MANAGER, VIEWER])
def test_fuzz_every_operation(api_schema, role):
    """Each operation is fuzzed in turn; the failures of all of them are reported together (the server's
    traceback of a 500 is in the captured log)."""
    seed_fleet()
    _, key = APIToken.issue(make_user(f"fuzz-{role}", role), "fuzz")
    auth = {"Authorization": f"Token {key}"}
    started, sent, failures = time.monotonic(), 0, []
    found = operations(api_schema)
    assert found, "no operation to fuzz"
    for label, operation in found:
        try:
            sent += fuzz_operation(operation, auth)
        except (Exception, BaseExceptionGroup) as failure:  # Schemathesis raises a group of failed checks
            failures.append(f"{label} as {role}:\n{failure}")
    print(f"\nfuzz as {role}: {len(found)} operations, {sent} requests, {len(failures)} failing operations, "
          f"{time.monotonic() - started:.0f} s")
    assert not failures, f"{len(failures)} of {len(found)} operations fail:\n\n" + "\n\n".join(failures)


@pytest.mark.django_db
@pytest.mark.parametrize("role", [MANAGER, VIEWER])
def test_options_on_every_route(api_schema, role):
    """OPTIONS is not in the schema (so the fuzz never sends it), but DRF answers it on every route with
    what the route accepts; clients and browsers send it. It must never be a server error."""
    seed_fleet()
    _, key = APIToken.issue(make_user(f"fuzz-{role}", role), "fuzz")
    client = Client(HTTP_AUTHORIZATION=f"Token {key}", raise_request_exception=False)
    failures = []
    for path in sorted({operation.path for _, operation in operations(api_schema)}):
        url = path.replace("{id}", str(min(ids_for(path)))) if "{id}" in path else path
        response = client.options(url)
        if response.status_code >= 500 or response["Content-Type"] != "application/json":
            failures.append(f"OPTIONS {url}: {response.status_code} {response['Content-Type']}")
    assert not failures, "\n".join(failures)


# --- What the fuzz found, pinned down (each was a 500) --------------------------------------------------


@pytest.mark.django_db
def test_hourly_rows_since_with_an_offset_postgresql_refuses(manager_api):
    # ISO 8601 allows offsets up to ±23:59, PostgreSQL only ±15:59: the filter compares in UTC.
    assert manager_api.get("/api/inventory/gpu-hourly/", {"since": "0342-09-05T18:49:34.2+23:58"}).status_code == 200
    response = manager_api.get("/api/inventory/gpu-hourly/", {"until": "0001-01-01T00:00:00+01:00"})
    assert response.status_code == 400 and "until" in response.json()


@pytest.mark.django_db
def test_contracts_expiring_within_is_bounded(manager_api):
    assert manager_api.get("/api/planning/contracts/", {"expiring_within": 60}).status_code == 200
    response = manager_api.get("/api/planning/contracts/", {"expiring_within": 1000000000})
    assert response.status_code == 400 and "expiring_within" in response.json()


@pytest.mark.django_db
def test_ticket_names_with_a_nul_character_are_refused(manager_api):
    for field in ("team", "assignee", "requester"):
        response = manager_api.post("/api/support/tickets/", {"title": "Fan noise", field: "a\x00b"}, format="json")
        assert response.status_code == 400 and field in response.json(), field


@pytest.mark.django_db
def test_an_order_external_id_with_a_nul_character_is_refused(manager_api):
    # The retry lookup by external id ran before validation, and PostgreSQL cannot search for a NUL.
    plan = CapacityPlan.objects.create(name="approved", status=CapacityPlan.Status.APPROVED)
    response = manager_api.post("/api/planning/purchase-orders/", {
        "plan": plan.pk, "vendor": "Acme", "reference": "PO-1", "external_id": "erp\x001",
        "lines": [{"description": "cables", "quantity": 1, "unit_price": "10.00"}]}, format="json")
    assert response.status_code == 400 and "external_id" in response.json()


@pytest.mark.django_db
def test_plan_line_totals_beyond_sixteen_digits_are_shown(manager_api):
    plan = CapacityPlan.objects.create(name="big plan")
    item = {"description": "racks", "quantity": 3125207, "unit_cost": "111449044.00", "currency": "USD"}
    response = manager_api.patch(f"/api/planning/plans/{plan.pk}/", {"items": [item]}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["items"][0]["total"] == "348301332452108.00"
    CapacityPlan.objects.filter(pk=plan.pk).update(status=CapacityPlan.Status.APPROVED)  # only approved: a BOM
    bom = manager_api.get(f"/api/planning/plans/{plan.pk}/bom/").json()
    assert bom["lines"][0]["total"] == "348301332452108.00" and bom["totals"] == {"USD": "348301332452108.00"}
