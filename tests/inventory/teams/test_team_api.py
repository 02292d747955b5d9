"""Issue 36: ``/api/inventory/teams/``: teams with their members, written by managers and admins (and a team's own
managers: theirs), the name never changed; every bad input a 400 with field errors."""

import pytest

from inventory.models import Team, TeamMember
from portal.roles import RESEARCHER
from tests.factories import make_node, make_team
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db

TEAMS = "/api/inventory/teams/"


def url(team):
    return f"{TEAMS}{team.pk}/"


@pytest.fixture
def rita(db):
    return make_user("rita", RESEARCHER)


def test_a_manager_creates_a_team_with_members_and_reads_it_back(manager_api, rita, manager):
    made = manager_api.post(TEAMS, {
        "name": "bio", "description": "Proteins.", "email": "bio@example.org", "pi": manager.username,
        "members": [{"user": "rita", "slurm_user": "rsmith", "role": "manager"}, {"user": manager.username}],
    }, format="json")
    assert made.status_code == 201, made.json()
    body = made.json()
    assert (body["name"], body["pi"], body["email"]) == ("bio", manager.username, "bio@example.org")
    assert body["members"] == [
        {"user": manager.username, "slurm_user": "", "slurm_name": manager.username, "role": "member"},
        {"user": "rita", "slurm_user": "rsmith", "slurm_name": "rsmith", "role": "manager"},
    ]
    team = Team.objects.get(name="bio")
    assert team.history.get().history_type == "+"
    assert TeamMember.history.filter(team_id=team.pk).count() == 2
    assert manager_api.get(url(team)).json()["members"] == body["members"]
    listed = manager_api.get(TEAMS, {"member": "rita"}).json()["results"]
    assert [t["name"] for t in listed] == ["bio"]


def test_members_given_replace_the_members_and_left_out_stay(manager_api, rita, manager):
    team = make_team("bio", members=[rita])
    kept = manager_api.patch(url(team), {"description": "Proteins."}, format="json")
    assert kept.status_code == 200 and [m["user"] for m in kept.json()["members"]] == ["rita"]
    changed = manager_api.patch(url(team), {"members": [{"user": manager.username, "role": "manager"}]},
                                format="json")
    assert changed.status_code == 200
    assert [(m["user"], m["role"]) for m in changed.json()["members"]] == [(manager.username, "manager")]
    assert list(team.members.all()) == [manager]
    assert TeamMember.history.filter(team_id=team.pk, user=rita, history_type="-").exists()


@pytest.mark.parametrize("body, field", [
    ({"name": "Bio Lab"}, "name"),
    ({"name": "x" * 65}, "name"),
    ({"name": "ok", "members": [{"user": "nobody"}]}, "members"),
    ({"name": "ok", "members": [{"user": "rita"}, {"user": "rita"}]}, "members"),
    ({"name": "ok", "members": [{"user": "rita", "role": "boss"}]}, "members"),
    ({"name": "ok", "pi": "nobody"}, "pi"),
    ({"name": "ok", "email": "not an address"}, "email"),
])
def test_bad_input_is_a_400_with_the_field_named(manager_api, rita, body, field):
    answer = manager_api.post(TEAMS, body, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.json()
    assert not Team.objects.exists()


def test_a_name_never_changes_nor_twice_the_same(manager_api):
    team = make_team("vision")
    make_node(owner_team="vision")
    renamed = manager_api.patch(url(team), {"name": "vision2"}, format="json")
    assert renamed.status_code == 400 and "cannot change" in renamed.json()["name"][0]
    assert manager_api.patch(url(team), {"name": "vision"}, format="json").status_code == 200
    assert manager_api.post(TEAMS, {"name": "vision"}, format="json").status_code == 400
    assert list(Team.objects.values_list("name", flat=True)) == ["vision"]


def test_a_researcher_reads_teams_but_writes_none(rita):
    team = make_team("vision", members=[rita])
    api = token_client(rita)
    assert api.get(TEAMS).status_code == 200 and api.get(url(team)).json()["name"] == "vision"
    assert api.post(TEAMS, {"name": "mine"}, format="json").status_code == 403
    assert api.patch(url(team), {"description": "mine"}, format="json").status_code == 403
    assert api.delete(url(team)).status_code == 403
    assert Team.objects.get().description == ""


def test_a_team_manager_edits_their_team_not_its_pi_nor_another(rita, manager):
    team = make_team("vision")
    team.memberships.create(user=rita, role=TeamMember.Role.MANAGER)
    other = make_team("speech")
    api = token_client(rita)
    edited = api.patch(url(team), {"description": "Images.", "members": [{"user": "rita", "role": "manager"},
                                                                          {"user": manager.username}]}, format="json")
    assert edited.status_code == 200 and len(edited.json()["members"]) == 2
    assert api.patch(url(team), {"pi": manager.username}, format="json").json() == {
        "pi": ["Managers and admins change a team's PI."]}
    assert api.patch(url(other), {"description": "theirs"}, format="json").status_code == 403
    assert api.post(TEAMS, {"name": "mine"}, format="json").status_code == 403
    assert api.delete(url(team)).status_code == 403


def test_a_team_that_owns_nodes_is_not_deleted(manager_api):
    team = make_team("vision")
    make_node(owner_team="vision")
    assert manager_api.delete(url(team)).status_code == 409
    assert manager_api.delete(url(make_team("empty"))).status_code == 204
