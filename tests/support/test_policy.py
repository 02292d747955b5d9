"""The policy table (``support.policy``, ``inventory.policy``): for each role and each rule, the answer, read
from one table per kind of rule; then the rules that depend on the ticket or asset they are asked about.
Page and API tests check that views ask these rules; this file checks the rules themselves."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.urls import reverse

from inventory.models import GPU, Node
from planning.models import Contract, SLATerm
from portal.roles import ADMIN, MANAGER, PROCUREMENT, RESEARCHER, SUPPORT, VIEWER
from tests.factories import make_gpu, make_node, make_team, make_ticket
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db
ROLES = (VIEWER, MANAGER, ADMIN, PROCUREMENT, SUPPORT, RESEARCHER)

# Without an object: may the role do this at all (on some ticket, on nodes and GPUs)? Y yes, - no.
ROLE_TABLE = """
rule                          viewer  manager  admin  procurement  support  researcher
support.read_ticket             Y       Y        Y        Y           Y         Y
support.read_every_ticket       Y       Y        Y        Y           Y         -
support.open_ticket             -       Y        Y        -           Y         Y
support.work_tickets            -       Y        Y        -           Y         -
support.internal_comments       -       Y        Y        -           Y         -
support.edit_ticket             -       Y        Y        -           Y         -
support.change_status           -       Y        Y        -           Y         Y
support.post_comment            -       Y        Y        -           Y         Y
support.rma_swap                -       Y        Y        -           Y         -
inventory.read_telemetry        Y       Y        Y        Y           Y         Y
"""


def table(text):
    """``(row, column, answer)`` for each cell of a table written as above."""
    header, *rows = [line.split() for line in text.strip().splitlines()]
    return [(row, column, answer == "Y")
            for row, *answers in rows for column, answer in zip(header[1:], answers, strict=True)]


@pytest.fixture
def users():
    return {role: make_user(f"user-{role}", role) for role in ROLES}


@pytest.mark.parametrize("rule, role, expected", table(ROLE_TABLE))
def test_role_table(users, rule, role, expected):
    assert users[role].has_perm(rule) is expected


# A node or a GPU: who may change its lifecycle state, and return it to service from a resolved ticket.
ASSET_TABLE = """
rule                          viewer  manager  admin  procurement  support  researcher
inventory.change_state          -       Y        Y        -           Y         -
support.return_to_service       -       Y        Y        -           Y         -
"""


@pytest.mark.parametrize("model", [Node, GPU])
@pytest.mark.parametrize("rule, role, expected", table(ASSET_TABLE))
def test_asset_table(users, rule, role, expected, model):
    asset = make_node() if model is Node else make_gpu()
    assert users[role].has_perm(rule, asset) is expected
    if rule == "inventory.change_state":
        assert users[role].has_perm(rule, model) is expected  # the model itself: the list's bulk change


# A ticket: rita (researcher, team nlp) on her own ticket, her teammate's and another team's; the other roles
# on another team's ticket.
TICKET_TABLE = """
rule                        rita:own  rita:team  rita:other  viewer  procurement  support  manager
support.read_ticket            Y         Y          -          Y         Y           Y        Y
support.post_comment           Y         Y          -          -         -           Y        Y
support.change_status          Y         -          -          -         -           Y        Y
support.internal_comments      -         -          -          -         -           Y        Y
support.edit_ticket            -         -          -          -         -           Y        Y
"""


@pytest.fixture
def tickets(users):
    rita, tom, olga = users[RESEARCHER], make_user("tom", RESEARCHER), make_user("olga", RESEARCHER)
    nlp, vision = make_team("nlp", [rita, tom]), make_team("vision", [olga])
    return {"own": make_ticket(requester=rita, team=nlp), "team": make_ticket(requester=tom, team=nlp),
            "other": make_ticket(requester=olga, team=vision)}


@pytest.mark.parametrize("rule, who, expected", table(TICKET_TABLE))
def test_ticket_table(users, tickets, rule, who, expected):
    role, _, which = who.partition(":")
    user = users[RESEARCHER] if role == "rita" else users[role]
    assert user.has_perm(rule, tickets[which or "other"]) is expected


# The RMA swap: on the ticket's node or one of its GPUs, whatever their state (the swap itself refuses a part
# that is retired or not in a node: support.rma); a ticket naming no node has nothing to swap.
SWAP_TABLE = """
node           viewer  manager  admin  procurement  support  researcher
in_service       -       Y        Y        -           Y         -
degraded         -       Y        Y        -           Y         -
in_repair        -       Y        Y        -           Y         -
retired          -       Y        Y        -           Y         -
none             -       -        -        -           -         -
"""


@pytest.mark.parametrize("state, role, expected", table(SWAP_TABLE))
def test_rma_swap_table(users, state, role, expected):
    node = make_node(state=state) if state != "none" else None
    assert users[role].has_perm("support.rma_swap", make_ticket(node=node)) is expected


# --- One edit for page and API: a new asset brings its SLA ---------------------------------------------------


def test_page_and_api_edits_of_the_asset_give_the_same_sla(client, users):
    engineer, opened = users[SUPPORT], datetime(2026, 6, 1, 8, tzinfo=UTC)
    before, covered = make_node(), make_node()
    contract = Contract.objects.create(kind=Contract.Kind.SUPPORT, vendor="NVIDIA", reference="NVES-1",
                                       start=date(2026, 1, 1), end=date(2027, 12, 31))
    SLATerm.objects.create(contract=contract, priority="P2", response_hours=4, resolution_hours=24)
    contract.nodes.set([covered])
    by_page, by_api = (make_ticket(node=before, priority="P2", opened=opened) for _ in range(2))
    assert by_page.sla_contract is None

    client.force_login(engineer)
    response = client.post(reverse("support:ticket_edit", args=[by_page.pk]), {
        "title": by_page.title, "category": by_page.category, "priority": "P2", "description": "d",
        "node": covered.pk})
    assert response.status_code == 302
    response = token_client(engineer).patch(f"/api/support/tickets/{by_api.pk}/", {"node": covered.pk})
    assert response.status_code == 200, response.json()

    for ticket in (by_page, by_api):
        ticket.refresh_from_db()
        assert ticket.sla_contract == contract
        assert (ticket.response_due, ticket.resolution_due) == (opened + timedelta(hours=4),
                                                                 opened + timedelta(hours=24))
