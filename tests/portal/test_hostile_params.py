"""Hostile parameters never make a server error (issue 33): every route of the project (pages and API, from the URL
resolver) gets GET requests with hostile values (``tests.helpers.hostile.HOSTILE``) in each query parameter its view
reads, and in its path, as a logged-in admin; the import pages get hostile confirmations and files with a NUL byte.

A page answers a bad value with its page and a message, or a 400 page; the API with a JSON 400 that names the
field. ``tests/portal/test_api_fuzz.py`` fuzzes the API's documented operations from its schema; this sweep reaches
the pages too, and the parameters a schema does not describe."""

import time
from datetime import UTC

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import resolve, reverse

from inventory.goodput.models import Interruption
from inventory.models import Site
from portal.imports import NUL_MESSAGE
from portal.models import ImportJob
from portal.roles import ADMIN
from portal.tasks import run_import_job
from tests.factories import make_gpu, make_node
from tests.helpers import hostile
from tests.helpers.accounts import make_user

TEAM = "vision"
MAX_PARAMS = 12  # parameters swept per route, the well-known ones first
DOCUMENTS = {"api-schema", "api-docs", "api-redoc"}  # the API's own documents: YAML and HTML by design, and slow
BOUND = {"_sweep": "1"}  # a query string that is not empty: filter sets read an empty one as no data at all


@pytest.fixture
def sweeper(db, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.MIDDLEWARE = ["tests.helpers.hostile.record_reads", *settings.MIDDLEWARE]
    user = make_user("sweeper", ADMIN)
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    hostile.seed_every_model(user, TEAM)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def get(client, url, params=None):
    """One request in a savepoint rolled back after it: what it wrote, or a database error it met, stays out of the
    next request (which meets the same objects)."""
    with transaction.atomic():
        response = client.get(url, params)
        transaction.set_rollback(True)
    return response


def problem(route, response):
    """What is wrong with an answer, or None: a server error, or an API answer that is not JSON."""
    if response.status_code >= 500:
        return f"{response.status_code}"
    api = route.is_api and route.name.split(":")[-1] not in DOCUMENTS
    if api and not response.get("Content-Type", "").startswith("application/json"):
        return f"{response.status_code} {response.get('Content-Type')}"
    return None


def shared_reads(reads):
    """{family: parameters every route of it reads}: what its generic view reads (a list page's ``page``, ``sort``,
    ``_export``; a viewset's ``ordering``, ``cursor``), swept on its first route only."""
    by_family = {}
    for route, read in reads.items():
        by_family.setdefault(route.family, []).append(read)
    return {family: set.intersection(*found) for family, found in by_family.items() if len(found) > 1}


def queries(read, skipped):
    """The query strings to send for the parameters a view read, less ``skipped``: each parameter alone with each
    value (the well-known ones first, at most ``MAX_PARAMS``), and ``PAIRS`` together."""
    known = [name for name in hostile.WELL_KNOWN if name in read]
    names = [name for name in [*known, *sorted(read - set(known))] if name not in skipped][:MAX_PARAMS]
    for value in hostile.HOSTILE.values():
        yield from ({name: value} for name in names)
        yield from ({first: value, second: value} for first, second in hostile.PAIRS if {first, second} <= read)


def test_every_route_survives_hostile_parameters(sweeper):
    started, sent, parameters, failures, reads, routes = time.monotonic(), 0, 0, [], {}, hostile.routes()

    def check(route, url, params=None):
        nonlocal sent
        sent += 1
        response = get(sweeper, url, params)
        if found := problem(route, response):
            failures.append(f"GET {url} {params or ''}: {found}"[:300])
        return response

    paths = set()  # (family, argument) swept: a generic view or viewset finds its object one way (its get_object)
    for route in routes:
        real = hostile.real_arguments(route, TEAM)
        route.base = hostile.url(route, real)
        if not route.takes_get:  # a 405 (JSON on the API), nothing read
            check(route, route.base)
            continue
        for name in route.arguments:  # the path: each argument in turn, each value its pattern accepts
            if not route.own_lookup and (route.family, name) in paths:
                continue
            paths.add((route.family, name))
            for value in hostile.HOSTILE.values():
                if (target := hostile.url(route, {**real, name: value})) is not None:
                    check(route, target)
        # What the view reads from the query, on its page and on a page's CSV.
        reads[route] = set()
        for context in (BOUND,) if route.is_api else (BOUND, {"format": "csv"}):
            reads[route] |= check(route, route.base, context).wsgi_request.GET.read - context.keys()
    # Then each parameter read, hostile; less what another route's same code read already: the parameters of its
    # family's generic view, and those of a filter set a page and the API share (``portal.filters``).
    shared, swept, filtered = shared_reads(reads), set(), {}
    for route, read in reads.items():
        if route.name.split(":")[-1] in DOCUMENTS:
            continue
        skipped = shared.get(route.family, set()) if route.family in swept else set()
        swept.add(route.family)
        filterset = getattr(route.view_class, "filterset_class", None)
        if filterset is not None:
            done = filtered.setdefault(filterset, set())
            skipped = skipped | done
            done.update(read & set(filterset.base_filters))
        sending = list(queries(read, skipped))
        parameters += len({name for params in sending for name in params})
        for params in sending:
            check(route, route.base, params)
    print(f"\nhostile sweep: {len(routes)} routes, {parameters} parameters of {len(hostile.HOSTILE)} values, "
          f"{sent} requests, {time.monotonic() - started:.0f} s")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures)


# --- What the sweep found, pinned down (each was a 500) -------------------------------------------------------


@pytest.fixture
def admin_client(client, db):
    client.raise_request_exception = False
    client.force_login(make_user("root", ADMIN))
    return client


@pytest.mark.parametrize("month", ["9999-12", "0000-01", "1899-12", "3000-01"])
def test_a_month_out_of_the_calendar_is_refused_with_a_message(admin_client, month):
    api = admin_client.get("/api/inventory/interruptions/", {"month": month})
    assert api.status_code == 400 and api.json() == {"month": ["Enter a year from 1900 to 2999."]}
    page = admin_client.get("/inventory/interruptions/", {"month": month})
    assert page.status_code == 200 and "Enter a year from 1900 to 2999." in page.content.decode()


def test_a_month_in_the_calendar_still_filters(admin_client):
    from tests.factories import InterruptionFactory

    InterruptionFactory()
    month = Interruption.objects.get().ended_at.astimezone(UTC).strftime("%Y-%m")
    assert admin_client.get("/api/inventory/interruptions/", {"month": month}).json()["count"] == 1
    assert admin_client.get("/api/inventory/interruptions/", {"month": "2001-01"}).json()["count"] == 0
    wrong = admin_client.get("/api/inventory/interruptions/", {"month": "2026-13"})
    assert wrong.json() == {"month": ["Enter a month as YYYY-MM, e.g. 2026-11."]}


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01"])
def test_health_dates_out_of_the_calendar_show_the_default_range_and_why(admin_client, day):
    gpu = make_gpu(node=make_node())
    for page in (gpu.node.get_absolute_url(), gpu.get_absolute_url()):
        response = admin_client.get(page, {"start": day, "end": day})
        assert response.status_code == 200, page
        assert "Enter a year from 1900 to 2999." in response.content.decode()
        assert response.context["health"]["span"].key == "7d"


def test_a_nul_character_is_a_400_that_says_so(admin_client):
    make_node(owner_team="vision")
    page = admin_client.get("/inventory/teams/x%00y/")
    assert page.status_code == 400 and "contains a NUL character" in page.content.decode()
    assert admin_client.get("/inventory/teams/vision/").status_code == 200
    assert admin_client.get("/inventory/nodes/", {"hostname": "a\x00b"}).status_code == 400
    form = admin_client.post("/tables/columns/", {"table": "nodes", "next": "/\x00"})
    assert form.status_code == 400 and "contains a NUL character" in form.content.decode()
    api = admin_client.get("/api/changes/", {"user": "a\x00b"})
    assert api.status_code == 400 and api["Content-Type"] == "application/json"
    assert "contains a NUL character" in api.json()["detail"]


def test_the_search_still_drops_a_nul_rather_than_refusing_it(admin_client):
    assert admin_client.get("/search/", {"q": "gpu\x00"}).status_code == 200  # accepts_nul: the view drops it


def test_api_errors_django_answers_are_json(admin_client, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("portal.api.history.changelog.recent_changes", broken)
    failed = admin_client.get("/api/changes/")
    assert failed.status_code == 500 and failed["Content-Type"] == "application/json"
    assert failed.json()["detail"].startswith("Server error") and failed["X-Request-ID"] in failed.json()["detail"]
    missing = admin_client.get("/api/no-such-thing/")
    assert missing.status_code == 404 and "detail" in missing.json()
    page = admin_client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("url, params", [
    ("/inventory/nodes/", {"per_page": "-1"}),
    ("/inventory/nodes/", {"per_page": "99999999999999999999"}),
    ("/inventory/utilization/", {"site": "99999999999999999999"}),
    ("/inventory/goodput/", {"site": "\u00b2"}),
    ("/api/changes/", {"limit": "\u00b2"}),
    ("/support/metrics/", {"days": "\u00b2"}),
    ("/api/support/metrics/", {"days": "\u00b2"}),
    ("/support/tickets/add/", {"node": "\u00b2"}),
])
def test_numbers_out_of_range_or_not_ascii(admin_client, url, params):
    make_node()
    assert admin_client.get(url, params).status_code in (200, 400)


def test_a_huge_per_page_is_bounded(admin_client):
    response = admin_client.get("/inventory/nodes/", {"per_page": "99999999999999999999"})
    assert response.context["table"].paginator.per_page == 500


# --- POST: the import pages and the bulk lifecycle change -------------------------------------------------------

SITES = "name,location,power_capacity_kw,cooling_capacity_kw\n"
IMPORTS = ["inventory:site_import", "inventory:rack_import", "inventory:node_import", "inventory:gpu_import"]


@pytest.mark.parametrize("job", ["abc", "-1", "0", "99999999999999999999", "1.5", "\u00b2", "x" * 10_240])
def test_a_confirmation_naming_no_import_is_a_400(admin_client, job):
    for name in IMPORTS:
        response = admin_client.post(reverse(name), {"job": job, "confirm": "1"})
        assert response.status_code == 400, name
        assert "“job” must be the id of an object" in response.content.decode()
    assert not ImportJob.objects.exists() and not Site.objects.exists()


def test_a_confirmation_naming_an_import_that_is_not_there_is_a_404(admin_client):
    assert admin_client.post(reverse("inventory:site_import"), {"job": "12345", "confirm": "1"}).status_code == 404


def upload(client, name, text):
    upload = SimpleUploadedFile("import.csv", text.encode(), content_type="text/csv")
    return client.post(reverse(name), {"confirm": "1", "csv_file": upload})


def test_a_small_file_with_a_nul_byte_reports_the_row_on_every_import_page(admin_client):
    for name in IMPORTS:
        columns = [c for c, f in resolve(reverse(name)).func.view_class.form_class.base_fields.items() if f.required]
        response = upload(admin_client, name, ",".join(columns) + "\n" + ",".join(["x\x00"] * len(columns)) + "\n")
        assert response.status_code == 400, name
        assert response.context["result"].errors == [f"row 2: {NUL_MESSAGE}"], name
    assert not Site.objects.exists() and not ImportJob.objects.exists()


def test_a_large_file_with_a_nul_byte_reports_the_row_from_its_background_run(admin_client, monkeypatch, settings):
    queued = []
    monkeypatch.setattr("portal.generic.enqueue", lambda task, *args: queued.append(args[0]) or True)
    rows = [f"big-{i:05},Hall {i},100,100\n" for i in range(settings.IMPORT_BACKGROUND_ROWS + 200)]
    rows[700] = "big-bad,Hall\x00 700,100,100\n"
    response = upload(admin_client, "inventory:site_import", SITES + "".join(rows))
    assert response.status_code == 302 and response["Location"] == reverse("import_job", args=queued)
    run_import_job(queued[0])
    job = ImportJob.objects.get()
    assert job.errors == [f"row 702: {NUL_MESSAGE}"]
    assert "row 702: the line contains a NUL character" in admin_client.get(response["Location"]).content.decode()
    assert not Site.objects.exists()


def test_a_bulk_lifecycle_change_ignores_ids_no_row_can_have(admin_client):
    node = make_node()
    for select in ("\u00b2", "-1", "99999999999999999999", "abc"):
        response = admin_client.post(reverse("inventory:node_bulk_transition"), {"select": [select], "to": "retired"})
        assert response.status_code == 302, select
    response = admin_client.post(reverse("inventory:node_bulk_transition"), {"select": [str(node.pk), "\u00b2"],
                                                                            "to": node.state})
    assert response.status_code == 302
