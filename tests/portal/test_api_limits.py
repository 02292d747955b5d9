"""Bad or excessive API input (issue 15): request bodies nested 100,000 levels deep are a 400 with a JSON body for
every caller, with or without a role; each user (or each of their API tokens) gets ``API_RATE_LIMIT`` requests,
then 429 with ``Retry-After``."""

import json

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from portal.api.parsers import json_depth
from portal.roles import MANAGER, VIEWER
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
ENDPOINTS = ["/api/inventory/sites/", "/api/support/tickets/", "/api/planning/purchase-orders/",
             "/api/inventory/nodes/"]


def logged_in(user):
    client = APIClient()
    client.force_login(user)
    return client


@pytest.mark.parametrize("role", [MANAGER, VIEWER, None])
@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_body_nested_100000_deep_is_a_400_for_everyone(role, path):
    for client in (logged_in(make_user(f"user-{role}", role)), APIClient()):
        answer = client.post(path, DEEP, content_type="application/json")
        assert answer.status_code in (400, 401, 403), answer.status_code
        assert answer["Content-Type"].startswith("application/json")
        if answer.status_code == 400:
            assert "nested deeper than 64 levels" in answer.json()["detail"]


def test_an_ordinary_body_still_parses_and_strings_with_brackets_do_not_count(db):
    manager = token_client(make_user("max", MANAGER))
    created = manager.post("/api/inventory/sites/", {"name": "[[[{{{ site", "location": "Zurich ]]]}}",
                                                   "power_capacity_kw": 100, "cooling_capacity_kw": 100},
                           format="json")
    assert created.status_code == 201, created.content
    assert json_depth(json.dumps({"a": [{"b": ["[[[", "\\\"[["]}]})) == 4  # object, list, object, list


@pytest.fixture
def limited(settings):
    settings.API_RATE_LIMIT = "5/minute"
    cache.clear()
    yield
    cache.clear()


def test_over_the_rate_limit_the_api_answers_429_with_retry_after(limited):
    user = make_user("max", MANAGER)
    integration, second_token = token_client(user, "erp"), token_client(user, "mes")
    answers = [integration.get("/api/inventory/sites/").status_code for _ in range(6)]
    assert answers == [200] * 5 + [429]
    refused = integration.get("/api/inventory/sites/")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Request was throttled" in refused.json()["detail"]
    # Counted per token: the user's other token, and the user in the browser, have their own budget.
    assert second_token.get("/api/inventory/sites/").status_code == 200
    assert logged_in(user).get("/api/inventory/sites/").status_code == 200
    # And per user: someone else is not slowed down.
    assert token_client(make_user("vera", VIEWER)).get("/api/inventory/sites/").status_code == 200


def test_without_a_rate_limit_nothing_is_throttled(settings):
    settings.API_RATE_LIMIT = ""
    client = token_client(make_user("max", MANAGER))
    assert {client.get("/api/inventory/sites/").status_code for _ in range(30)} == {200}


@pytest.fixture
def clock(limited, monkeypatch):
    """The throttle's clock, set by the test: ``clock.now`` seconds."""
    from portal.api.throttling import PortalRateThrottle

    class Clock:
        now = 1_800_000_000.0  # the start of a minute

    monkeypatch.setattr(PortalRateThrottle, "timer", staticmethod(lambda: Clock.now))
    return Clock


def test_the_window_slides_no_burst_at_a_window_boundary_and_retry_after_says_when(clock):
    client = token_client(make_user("max", MANAGER))
    sites = "/api/inventory/sites/"
    clock.now += 30
    assert [client.get(sites).status_code for _ in range(6)] == [200] * 5 + [429]
    # Five in this minute: the next one is allowed once the weighted count of this minute is at most four,
    # 12 s into the next minute (5 x 48/60): 30 s to the boundary plus 12.
    assert client.get(sites)["Retry-After"] == "42"
    clock.now += 30 + 11
    assert client.get(sites).status_code == 429
    clock.now += 1
    assert client.get(sites).status_code == 200
    assert client.get(sites).status_code == 429
    # Five requests just before a boundary are not followed by five more just after it (a fixed window's burst).
    clock.now += 60 * 5 + 59 - 12
    assert [client.get(sites).status_code for _ in range(6)] == [200] * 5 + [429]
    clock.now += 2
    assert client.get(sites).status_code == 429
