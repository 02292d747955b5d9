"""Allocations and requests over REST: a team manager asks with a token, a manager approves, the allocation answers
with its use; refusals are 400 with field errors or 403, never 500; researchers read their own teams' only."""

from datetime import date

import pytest

from inventory.models import AllocationRequest, Team, TeamAllocation, TeamMember
from portal.roles import MANAGER, RESEARCHER
from tests.helpers.accounts import make_user, token_client


@pytest.fixture
def people(db):
    vision = Team.objects.create(name="vision")
    Team.objects.create(name="speech")
    lead = make_user("lead", RESEARCHER)
    TeamMember.objects.create(team=vision, user=lead, role="manager")
    return {"lead": token_client(lead), "ann": token_client(make_user("ann", MANAGER)),
            "bob": token_client(make_user("bob", MANAGER)), "stranger": token_client(make_user("x", RESEARCHER))}


BODY = {"team": "vision", "start": "2027-01-01", "end": "2027-03-31", "gpu_hours": 20000, "max_gpus": 32,
        "reason": "pretraining"}


def test_ask_approve_and_read_the_use(people):
    asked = people["lead"].post("/api/inventory/allocation-requests/", BODY, format="json")
    assert asked.status_code == 201, asked.json()
    pk = asked.json()["id"]
    assert asked.json()["status"] == "pending" and asked.json()["approvals_needed"] == 1
    assert people["lead"].post(f"/api/inventory/allocation-requests/{pk}/approve/", {}).status_code == 403
    approved = people["ann"].post(f"/api/inventory/allocation-requests/{pk}/approve/", {"comment": "ok"})
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    allocation = approved.json()["allocation"]
    read = people["lead"].get(f"/api/inventory/team-allocations/{allocation}/").json()
    assert (read["team"], read["gpu_hours"], read["use"]["used"], read["use"]["state"]) == (
        "vision", 20000, 0.0, "upcoming")
    listed = people["ann"].get("/api/inventory/team-allocations/").json()
    assert [row["use"]["left"] for row in listed["results"]] == [20000]
    drawn = people["lead"].get(f"/api/inventory/team-allocations/{allocation}/burn-down/").json()
    assert len(drawn["days"]) == 90 and drawn["budget"] == 20000
    again = people["bob"].post(f"/api/inventory/allocation-requests/{pk}/approve/", {})
    assert again.status_code == 400 and "approved" in str(again.json())


@pytest.mark.parametrize("body, field", [
    ({**BODY, "end": "2026-01-01"}, "end"),
    ({**BODY, "gpu_hours": None, "max_gpus": None}, "gpu_hours"),
    ({**BODY, "gpu_hours": -5}, "gpu_hours"),
    ({**BODY, "team": "nobody"}, "team"),
    ({**BODY, "start": "not a date"}, "start"),
    ({**BODY, "gpu_hours": "1e400"}, "gpu_hours"),
    ({**{k: v for k, v in BODY.items() if k != "team"}}, "team"),
])
def test_bad_requests_are_field_errors(people, body, field):
    answer = people["ann"].post("/api/inventory/allocation-requests/", body, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.json()
    assert not AllocationRequest.objects.exists()


def test_who_may_ask_decide_and_read(people):
    assert people["stranger"].post("/api/inventory/allocation-requests/", BODY, format="json").status_code == 403
    pk = people["ann"].post("/api/inventory/allocation-requests/", BODY, format="json").json()["id"]
    assert people["ann"].post(f"/api/inventory/allocation-requests/{pk}/approve/", {}).status_code == 403  # 4 eyes
    refused = people["bob"].post(f"/api/inventory/allocation-requests/{pk}/reject/", {"comment": ""})
    assert refused.status_code == 400 and "comment" in refused.json()
    assert people["stranger"].get(f"/api/inventory/allocation-requests/{pk}/").status_code == 404
    assert people["stranger"].get("/api/inventory/allocation-requests/").json()["count"] == 0
    assert people["lead"].get("/api/inventory/allocation-requests/").json()["count"] == 1
    TeamAllocation.objects.create(team=Team.objects.get(name="speech"), start=date(2027, 1, 1),
                                  end=date(2027, 1, 31), gpu_hours=5)
    assert people["lead"].get("/api/inventory/team-allocations/").json()["count"] == 0
    assert people["ann"].get("/api/inventory/team-allocations/").json()["count"] == 1
