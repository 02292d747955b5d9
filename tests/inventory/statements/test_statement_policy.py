"""Who reads which statement and who issues (``inventory/statements/policy.py``): the rules per role, then
``Statement.objects.visible_to`` and the pages and API for a researcher of one team, of another and of none."""

import pytest

from inventory.models import TeamMember
from inventory.statements.issuing import issue_month
from inventory.statements.models import Statement
from portal.roles import ADMIN, MANAGER, PROCUREMENT, RESEARCHER, SUPPORT, VIEWER
from tests.helpers.accounts import make_user, token_client
from tests.helpers.statements import NOW, OCTOBER, make_fleet

pytestmark = pytest.mark.django_db

ROLES = {"viewer": VIEWER, "manager": MANAGER, "admin": ADMIN, "procurement": PROCUREMENT, "support": SUPPORT,
         "rita": RESEARCHER, "other": RESEARCHER, "loner": RESEARCHER, "none": None}
# rita is a member of vision, other a manager of speech, loner of no team. Y yes, - no; the statement rules are
# asked of vision's statement, the "no team" one and without one (any researcher: the menu asks it without a query;
# the list then shows a researcher without a team none).
TABLE = """
rule                                    viewer manager admin procurement support rita other loner none
inventory.read_every_statement            Y      Y      Y       Y         Y      -    -     -     -
inventory.read_statement                  Y      Y      Y       Y         Y      Y    Y     Y     -
inventory.read_statement:vision           Y      Y      Y       Y         Y      Y    -     -     -
inventory.read_statement:no-team          Y      Y      Y       Y         Y      -    -     -     -
inventory.issue_statements                -      Y      Y       -         -      -    -     -     -
inventory.edit_ratecard                   -      Y      Y       -         -      -    -     -     -
inventory.edit_ratecard:used              -      -      -       -         -      -    -     -     -
"""
# Statements each one sees in the list (of vision, speech, no team).
SEES = {"viewer": 3, "manager": 3, "rita": 1, "other": 1, "loner": 0}


def rows():
    """``(rule, {column: answer})`` for each row of the table."""
    header, *lines = [line.split() for line in TABLE.strip().splitlines()]
    return [(rule, {column: answer == "Y" for column, answer in zip(header[1:], answers, strict=True)})
            for rule, *answers in lines]


@pytest.fixture
def world():
    users = {name: make_user(name, role) for name, role in ROLES.items()}
    fleet = make_fleet(members=[users["rita"]])
    TeamMember.objects.create(team=fleet["speech"], user=users["other"], role="manager")
    issue_month(OCTOBER, now=NOW)
    objects = {"vision": Statement.objects.get(team=fleet["vision"]), "no-team": Statement.objects.get(team=None),
               "used": fleet["card"]}
    return users, objects


@pytest.mark.parametrize("rule, expected", rows())
def test_policy_table(world, rule, expected):
    users, objects = world
    name, _, on = rule.partition(":")
    assert {column: users[column].has_perm(name, objects.get(on)) for column in expected} == expected


@pytest.mark.parametrize("name, count", SEES.items())
def test_lists_pages_and_api_show_only_what_the_rule_allows(world, client, name, count):
    users, objects = world
    assert Statement.objects.visible_to(users[name]).count() == count
    client.force_login(users[name])
    page = client.get("/inventory/statements/")
    api = token_client(users[name]).get("/api/inventory/statements/")
    if count == 0:  # a researcher of no team: the list answers, empty
        assert (page.status_code, api.status_code) == (200, 200)
        assert page.context["table"].paginator.count == api.json()["count"] == 0
        return
    assert page.context["table"].paginator.count == api.json()["count"] == count
    vision = objects["vision"]
    expected = 200 if users[name].has_perm("inventory.read_statement", vision) else 404
    for url in (f"/inventory/statements/{vision.pk}/", f"/inventory/statements/{vision.pk}/csv/",
                f"/inventory/statements/{vision.pk}/pdf/"):
        assert client.get(url).status_code == expected, url
    assert token_client(users[name], "again").get(f"/api/inventory/statements/{vision.pk}/").status_code == expected


def test_anonymous_is_refused(world, client):
    _, objects = world
    assert client.get(f"/inventory/statements/{objects['vision'].pk}/pdf/").status_code == 302
    assert client.get("/api/inventory/statements/").status_code == 401
