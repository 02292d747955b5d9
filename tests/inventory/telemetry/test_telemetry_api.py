"""Telemetry through the API: sources (CRUD, write-only token, read-only status, pull action), unknown series,
and ``/api/inventory/utilization/`` (hand-computed figures, filters, 400s, permissions, constant queries)."""

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from inventory.models import TelemetrySource, UnknownSeries
from inventory.telemetry import tasks
from tests.helpers.accounts import token_client
from tests.helpers.telemetry import add_fleet, freeze_now, make_fleet

SOURCES = "/api/inventory/telemetry-sources/"
UTILIZATION = "/api/inventory/utilization/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


@pytest.fixture
def fleet(now):
    return make_fleet(now)


# --- Sources --------------------------------------------------------------------------------------


def test_manager_creates_a_source_the_token_is_write_only_and_the_status_read_only(manager_api):
    response = manager_api.post(SOURCES, {
        "name": "dcgm", "kind": "prometheus", "url": "http://prom.example.org:9090", "auth_token": "s3cret",
        "stale_since": "2026-01-01T00:00:00Z", "consecutive_failures": 7,
    })
    assert response.status_code == 201, response.json()
    body = response.json()
    assert "auth_token" not in body and "s3cret" not in response.content.decode()
    assert body["has_auth_token"] is True and body["unknown_count"] == 0
    assert (body["stale_since"], body["consecutive_failures"]) == (None, 0)  # written by the pulls only
    source = TelemetrySource.objects.get(name="dcgm")
    assert source.auth_token == "s3cret"
    url = f"{SOURCES}{source.pk}/"
    detail = manager_api.patch(url, {"interval_seconds": 60, "user_name": "slurm"})
    assert detail.status_code == 200 and "s3cret" not in detail.content.decode()
    assert detail.json()["user_name"] == "slurm"  # not a secret: shown
    source.refresh_from_db()
    assert (source.auth_token, source.interval_seconds, source.user_name) == ("s3cret", 60, "slurm")  # kept
    manager_api.patch(url, {"auth_token": ""})
    source.refresh_from_db()
    assert source.auth_token == ""
    assert manager_api.delete(url).status_code == 204


def test_viewer_reads_sources_but_cannot_write_or_pull(viewer_api, monkeypatch):
    queued = []
    monkeypatch.setattr(tasks.pull_telemetry_source, "delay", queued.append)
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090", auth_token="t0k")
    response = viewer_api.get(SOURCES)
    assert response.status_code == 200
    assert response.json()["results"][0]["name"] == "prom" and "t0k" not in response.content.decode()
    assert viewer_api.post(SOURCES, {"name": "x", "kind": "slurm", "url": "http://s/jobs"}).status_code == 403
    assert viewer_api.patch(f"{SOURCES}{source.pk}/", {"enabled": False}).status_code == 403
    assert viewer_api.post(f"{SOURCES}{source.pk}/pull/").status_code == 403
    assert queued == []


def test_pull_action_queues_a_pull(manager_api, monkeypatch, django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(tasks.pull_telemetry_source, "delay", queued.append)
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090")
    with django_capture_on_commit_callbacks(execute=True):
        response = manager_api.post(f"{SOURCES}{source.pk}/pull/")
    assert response.status_code == 202 and queued == [source.pk]
    TelemetrySource.objects.filter(pk=source.pk).update(enabled=False)
    assert manager_api.post(f"{SOURCES}{source.pk}/pull/").status_code == 409


def test_unknown_series_are_listed_read_only(viewer_api, manager_api):
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090")
    UnknownSeries.objects.create(source=source, key="ghost-01/gpu3", hostname="ghost-01", gpu_index="3")
    response = viewer_api.get("/api/inventory/unknown-series/", {"source": source.pk})
    assert response.status_code == 200
    (row,) = response.json()["results"]
    assert (row["key"], row["source_name"], row["hostname"]) == ("ghost-01/gpu3", "prom", "ghost-01")
    assert manager_api.post("/api/inventory/unknown-series/", {"source": source.pk, "key": "x"}).status_code == 405


# --- Utilization ----------------------------------------------------------------------------------


@override_settings(IDLE_GPU_HOUR_COST=2.0, COST_CURRENCY="EUR")
def test_utilization_by_site_equals_the_hand_computed_figures(viewer_api, fleet):
    response = viewer_api.get(UTILIZATION, {"group_by": "site", "range": "7d"})
    assert response.status_code == 200
    body = response.json()
    assert (body["group_by"], body["range"], body["rollup"], body["currency"], body["idle_gpu_hour_cost"]) == (
        "site", "7d", "hourly", "EUR", 2.0)
    assert body["groups"] == [
        {"id": fleet["alpha"].pk, "name": "alpha", "gpus": 2, "gpu_hours": 3.0, "util_mean": 46.67,
         "idle_gpu_hours": 1.6, "idle_cost": 3.2, "idle_gpu_hours_at_default_cost": 1.6},
        {"id": fleet["beta"].pk, "name": "beta", "gpus": 1, "gpu_hours": 1.0, "util_mean": 50.0,
         "idle_gpu_hours": 0.5, "idle_cost": 1.0, "idle_gpu_hours_at_default_cost": 0.5},
    ]
    assert body["stale_sources"] == []
    assert body["idle_cost_basis"] == "at 2 EUR per GPU-hour (no node in these figures has a cost from its contracts)"


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_utilization_groups_ranges_and_filters(viewer_api, fleet, now):
    def names(**params):
        response = viewer_api.get(UTILIZATION, params)
        assert response.status_code == 200, response.json()
        return {g["name"]: (g["id"], g["util_mean"]) for g in response.json()["groups"]}

    assert names(group_by="partition", range="24h") == {"train": (None, 46.67), "infer": (None, 50.0)}
    assert names(group_by="team") == {"vision": (None, 46.67), "speech": (None, 50.0)}
    assert names(group_by="gpu_model", site=fleet["beta"].pk) == {"M2": (fleet["m2"].pk, 50.0)}
    assert names(group_by="node", gpu_model=fleet["m1"].pk) == {"a1": (fleet["a1"].pk, 46.67)}
    assert names(group_by="site", partition="infer", team="speech") == {"beta": (fleet["beta"].pk, 50.0)}
    daily = viewer_api.get(UTILIZATION, {"range": "30d"}).json()
    assert daily["rollup"] == "daily" and daily["groups"][0]["gpu_hours"] == 30.0
    assert viewer_api.get(UTILIZATION, {"range": "1y"}).json()["groups"][0]["util_mean"] == 50.0


def test_utilization_lists_stale_sources(viewer_api, fleet, now):
    TelemetrySource.objects.filter(pk=fleet["source"].pk).update(stale_since=now, last_error="timeout")
    (stale,) = viewer_api.get(UTILIZATION).json()["stale_sources"]
    assert (stale["name"], stale["last_error"]) == ("prom", None)  # errors are for managers (test_outbound)


@pytest.mark.parametrize("params, field, message", [
    ({"group_by": "rack"}, "group_by", "Unknown group_by 'rack'; use one of site, partition, gpu_model, team, node."),
    ({"range": "2w"}, "range", "Unknown range '2w'; use one of 24h, 7d, 30d, 90d, 1y, last_month, a month (YYYY-MM) "
                               "or dates (YYYY-MM-DD..YYYY-MM-DD, at most 366 days)."),
    ({"site": "zurich"}, "site", "A valid integer is required."),
])
def test_bad_parameters_are_400_with_a_clear_error(viewer_api, params, field, message):
    response = viewer_api.get(UTILIZATION, params)
    assert response.status_code == 400
    assert response.json() == {field: [message]}


def test_utilization_needs_a_login_and_a_role(django_user_model):
    assert APIClient().get(UTILIZATION).status_code == 401
    nobody = django_user_model.objects.create_user("nobody", password="pw")
    assert token_client(nobody).get(UTILIZATION).status_code == 403


@pytest.mark.parametrize("group_by", ["site", "node"])
def test_utilization_query_count_is_constant(viewer_api, django_assert_max_num_queries, now, group_by):
    add_fleet(2, now, "small")
    viewer_api.get(UTILIZATION)  # warm-up: the token's "last used" stamp
    with CaptureQueriesContext(connection) as few:
        assert viewer_api.get(UTILIZATION, {"group_by": group_by}).status_code == 200
    add_fleet(25, now, "large")
    with django_assert_max_num_queries(len(few)):
        response = viewer_api.get(UTILIZATION, {"group_by": group_by})
    assert len(response.json()["groups"]) == 27


def test_schema_documents_the_utilization_endpoint(viewer_api):
    schema = viewer_api.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"][UTILIZATION]["get"]
    parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert parameters["group_by"]["enum"] == ["site", "partition", "gpu_model", "team", "node"]
    # A rolling range, last_month, a month or dates: a string whose description names them.
    assert parameters["range"]["type"] == "string" and parameters["range"]["default"] == "7d"
    described = next(p["description"] for p in operation["parameters"] if p["name"] == "range")
    assert "last_month" in described and "2026-10-01..2026-10-15" in described
    assert {"site", "partition", "gpu_model", "team", "month", "start", "end"} <= set(parameters)
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Utilization")
    source = schema["components"]["schemas"]["TelemetrySource"]["properties"]
    assert "auth_token" not in source and source["stale_since"]["readOnly"] is True
    assert "auth_token" in schema["components"]["schemas"]["TelemetrySourceRequest"]["properties"]
