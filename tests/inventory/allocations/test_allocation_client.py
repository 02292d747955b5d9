"""Allocations through a client generated from the OpenAPI schema (``openapi-python-client``, offline, as
``tests/helpers/api_client.py`` generates it) against a live server: a team's manager asks for an allocation,
the four-eyes refusal and a field error parsed into the generated models, a manager approves, the allocation reads
back with its use and its burn-down."""

import pytest

from inventory.models import Team, TeamMember
from portal.roles import MANAGER, RESEARCHER
from tests.helpers.accounts import make_user
from tests.helpers.api_client import call, client_of


def test_an_allocation_through_the_generated_client(generated, live_server, transactional_db):
    models = generated("models")
    team = Team.objects.create(name="vision")
    lead = make_user("lead", RESEARCHER)
    TeamMember.objects.create(team=team, user=lead, role="manager")
    lead_api, manager_api = (client_of(generated, live_server.url, user) for user in (lead, make_user("max", MANAGER)))
    body = {"team": "vision", "start": "2027-01-01", "end": "2027-03-31", "gpu_hours": 20000, "max_gpus": 32,
            "reason": "pretraining"}
    bad = call(generated, "inventory_allocation_requests_create", client=lead_api,
               body=models.AllocationRequestRequest.from_dict({**body, "end": "2026-12-01"}))
    assert bad.status_code == 400 and isinstance(bad.parsed, models.FieldErrors) and "end" in bad.parsed
    asked = call(generated, "inventory_allocation_requests_create", client=lead_api,
                 body=models.AllocationRequestRequest.from_dict(body))
    assert asked.status_code == 201, asked.content
    pk = asked.parsed.id
    mine = call(generated, "inventory_allocation_requests_approve_create", client=lead_api, id=pk,
                body=models.DecisionRequest(comment=""))
    assert mine.status_code == 403
    approved = call(generated, "inventory_allocation_requests_approve_create", client=manager_api, id=pk,
                    body=models.DecisionRequest(comment="ok"))
    assert approved.status_code == 200 and approved.parsed.status == "approved"
    read = call(generated, "inventory_team_allocations_retrieve", client=lead_api, id=approved.parsed.allocation)
    assert (read.parsed.team, read.parsed.gpu_hours, read.parsed.use.used, read.parsed.use.state) == (
        "vision", 20000, 0.0, "upcoming")
    drawn = call(generated, "inventory_team_allocations_burn_down_retrieve", client=lead_api,
                 id=approved.parsed.allocation)
    assert drawn.status_code == 200


pytestmark = pytest.mark.django_db(transaction=True)
