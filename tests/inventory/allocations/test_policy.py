"""The allocations' policy table (``inventory.allocations.policy``), read as ``tests/inventory/test_policy.py`` reads
the inventory's: each rule for each role, on no object, on team nlp and its allocation, and on a pending request of
nlp asked by its manager "nina"; then ``visible``, the read rule as a query."""

from datetime import date

import pytest

from inventory.allocations.policy import visible
from inventory.models import AllocationRequest, TeamAllocation
from tests.factories import make_team
from tests.inventory.test_policy import Users, table

pytestmark = pytest.mark.django_db

ROLE_TABLE = """
rule                               viewer  manager  admin  procurement  support  researcher  none
inventory.read_allocation            Y       Y        Y        Y           Y         Y         -
inventory.request_allocation         -       Y        Y        -           -         -         -
inventory.apply_slurm_sync           -       Y        Y        -           -         -         -
"""

# Team nlp: "rita" is a member, "nina" one of its managers, "lead" a manager of team speech.
TEAM_TABLE = """
rule                               rita  nina  lead  viewer  manager  admin  procurement  support  none
inventory.request_allocation         -     Y     -      -       Y       Y        -           -       -
inventory.read_allocation            Y     Y     -      Y       Y       Y        Y           Y       -
"""

# A pending request of team nlp asked by nina.
REQUEST_TABLE = """
rule                                   rita  nina  lead  viewer  manager  admin  procurement  support  none
inventory.decide_allocation_request      -     -     -      -       Y       Y        -           -       -
inventory.withdraw_allocation_request    -     Y     -      -       Y       Y        -           -       -
inventory.read_allocation                Y     Y     -      Y       Y       Y        Y           Y       -
"""


@pytest.fixture
def users(db):
    return Users()


def allocation():
    return TeamAllocation.objects.create(team=make_team("nlp"), start=date(2027, 1, 1), end=date(2027, 1, 31),
                                         gpu_hours=10)


@pytest.mark.parametrize("rule, role, expected", table(ROLE_TABLE))
def test_role_table(users, rule, role, expected):
    assert users[role].has_perm(rule) is expected


@pytest.mark.parametrize("rule, who, expected", table(TEAM_TABLE))
def test_team_table(users, rule, who, expected):
    target = make_team("nlp") if rule == "inventory.request_allocation" else allocation()
    assert users[who].has_perm(rule, target) is expected
    if rule == "inventory.read_allocation":
        assert (target in visible(TeamAllocation.objects.all(), users[who])) is expected  # the rule as a query


@pytest.mark.parametrize("rule, who, expected", table(REQUEST_TABLE))
def test_request_table(users, rule, who, expected):
    pending = AllocationRequest.objects.create(team=make_team("nlp"), start=date(2027, 1, 1), end=date(2027, 1, 31),
                                               gpu_hours=10, reason="x", requested_by=users["nina"])
    assert users[who].has_perm(rule, pending) is expected
    pending.status = AllocationRequest.Status.APPROVED  # decided: nobody decides or withdraws it again
    if rule != "inventory.read_allocation":
        assert users[who].has_perm(rule, pending) is False
