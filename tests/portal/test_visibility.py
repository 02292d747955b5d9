"""What each role may read (issue 15): the browsable API's filter forms name only the tickets, users and teams a
researcher may see; an account without a role sees no fleet data on the dashboard, in search or on the sizing page;
the uncovered-assets page is for readers of contracts."""

import pytest
from django.test import Client
from django.urls import reverse

from portal.roles import RESEARCHER, SUPPORT, VIEWER
from support import workflow
from tests.factories import make_node, make_team, make_ticket
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db

SECRETS = ("Quarterly merger model", "team-confidential", "bob-other", "olga-other-support")


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def tickets():
    """Rita's team has one ticket; another team's ticket carries a private title, its team, its requester's and its
    assignee's names, and a comment by its requester."""
    rita, bob = make_user("rita", RESEARCHER), make_user("bob-other", RESEARCHER)
    olga = make_user("olga-other-support", SUPPORT)
    mine = make_team("team-rita", members=[rita])
    other = make_team("team-confidential", members=[bob])
    own = make_ticket(requester=rita, team=mine, title="GPU 3 is slow")
    hidden = make_ticket(requester=bob, team=other, title="Quarterly merger model", assignee=olga)
    workflow.add_comment(hidden, bob, "Our numbers.")
    workflow.add_comment(own, rita, "Logs attached.")
    return rita, own


@pytest.mark.parametrize("path", ["/api/support/comments/?format=api", "/api/support/tickets/?format=api",
                                  "/support/tickets/"])
def test_a_researchers_filter_forms_name_only_what_they_may_see(tickets, path):
    rita, own = tickets
    page = logged_in(rita).get(path)
    assert page.status_code == 200
    body = page.content.decode()
    assert "team-rita" in body or "rita" in body  # the form is there, with what is theirs
    for secret in SECRETS:
        assert secret not in body, (path, secret)


def test_support_staff_still_filter_on_every_ticket_team_and_user(tickets):
    staff = logged_in(make_user("sam", SUPPORT))
    body = staff.get("/api/support/tickets/?format=api").content.decode()
    assert "team-confidential" in body and "olga-other-support" in body
    body = staff.get("/api/support/comments/?format=api").content.decode()
    assert "Quarterly merger model" in body and "bob-other" in body


def test_an_account_without_a_role_sees_no_fleet_data(db):
    make_node(hostname="gpu-secret-001")
    nobody = logged_in(make_user("newcomer", None))
    home = nobody.get(reverse("home"))
    assert home.status_code == 200
    assert "no role yet" in home.content.decode() and "nodes out of warranty" not in home.content.decode()
    found = nobody.get(reverse("search"), {"q": "gpu-secret"})
    assert found.status_code == 200 and "gpu-secret-001" not in found.content.decode()
    assert "no role yet" in found.content.decode()
    sizing = nobody.get(reverse("planning:sizing"), {"params_billion": 7, "tokens_billion": 100})
    assert sizing.status_code == 403 and "no role yet" in sizing.content.decode()  # the fleet's rates, its teams
    assert nobody.post("/api/planning/sizing/", {"params_billion": 7}).status_code == 403
    viewer = logged_in(make_user("vera", VIEWER))
    assert "gpu-secret-001" in viewer.get(reverse("search"), {"q": "gpu-secret"}).content.decode()
    assert viewer.get(reverse("search"), {"q": "gpu-secret-001"}).status_code == 302  # an exact match opens it
    assert "nodes out of warranty" in viewer.get(reverse("home")).content.decode()


def test_the_uncovered_assets_page_is_for_readers_of_contracts(tickets):
    rita, _ = tickets
    researcher = logged_in(rita)
    assert researcher.get(reverse("planning:uncovered")).status_code == 403
    assert "Uncovered assets" not in researcher.get(reverse("home")).content.decode()
    assert logged_in(make_user("vera", VIEWER)).get(reverse("planning:uncovered")).status_code == 200
