"""Issue 36: a team as a model: its name (a Slurm account, validated, never changed), its page for each role (who
it is, its members and their Slurm user names, its figures), the new-team and edit pages, and the node forms and
CSV import that name teams."""

import pytest
from django.core.exceptions import ValidationError

from inventory.models import Node, Team, TeamMember
from portal.roles import ADMIN, MANAGER, PROCUREMENT, RESEARCHER, SUPPORT, VIEWER
from tests.factories import SlurmJobFactory, make_node, make_team
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db

TEAMS = "/inventory/teams/"
VISION = "/inventory/teams/vision/"


@pytest.mark.parametrize("name", ["vision", "llm-pretrain", "a.b_c-1", "9lives", "x" * 64])
def test_a_slurm_account_name_is_a_team_name(name):
    Team(name=name).full_clean()


@pytest.mark.parametrize("name", ["Vision", "ml ops", "-x", "_x", ".x", "a/b", "é", "x" * 65, ""])
def test_a_name_slurm_would_refuse_is_refused(name):
    with pytest.raises(ValidationError) as refused:
        Team(name=name).full_clean()
    assert "name" in refused.value.message_dict


def test_a_team_name_never_changes():
    team = make_team("vision")
    team.name = "vision2"
    with pytest.raises(ValidationError, match="cannot change"):
        team.full_clean()
    team.description = "kept name"
    team.name = "vision"
    team.full_clean()


def test_a_membership_is_once_per_user_and_slurm_user_defaults_to_the_username():
    rita = make_user("rita", RESEARCHER)
    team = make_team("vision")
    membership = TeamMember.objects.create(team=team, user=rita)
    assert (membership.slurm_name, membership.role) == ("rita", "member")
    membership.slurm_user = "rsmith"
    assert membership.slurm_name == "rsmith"
    with pytest.raises(ValidationError):
        TeamMember(team=team, user=rita).full_clean()
    assert list(rita.teams.all()) == [team]


@pytest.fixture
def vision():
    pi = make_user("pia", MANAGER)
    team = Team.objects.create(name="vision", description="Image models.", email="vision@example.org", pi=pi)
    team.memberships.create(user=make_user("rita", RESEARCHER), slurm_user="rsmith")
    team.memberships.create(user=make_user("nina", RESEARCHER), role=TeamMember.Role.MANAGER)
    make_node(owner_team="vision")
    return team


@pytest.mark.parametrize("role", [VIEWER, MANAGER, ADMIN, PROCUREMENT, SUPPORT, RESEARCHER])
def test_every_role_reads_a_team_page_with_its_members(client, vision, role):
    client.force_login(make_user(f"u-{role}", role))
    page = client.get(VISION).content.decode()
    assert "Image models." in page and "vision@example.org" in page and "pia" in page
    assert "<td>rita</td><td>rsmith</td><td>Member</td>" in page
    assert "<td>nina</td><td>nina</td><td>Manager</td>" in page
    edit = f'href="{VISION}edit/"'
    assert (edit in page) is (role in (MANAGER, ADMIN))
    listed = client.get(TEAMS).content.decode()
    assert f'<a href="{VISION}">vision</a>' in listed
    assert ('href="/inventory/teams/+add/"' in listed) is (role in (MANAGER, ADMIN))
    assert client.get("/inventory/teams/+add/").status_code == (200 if role in (MANAGER, ADMIN) else 403)


def test_a_team_without_node_or_job_has_its_page(viewer_client):
    Team.objects.create(name="newcomers", description="Just made.")
    page = viewer_client.get("/inventory/teams/newcomers/")
    assert page.status_code == 200 and "Just made." in page.content.decode()
    assert ">newcomers</a>" in viewer_client.get(TEAMS).content.decode()


def test_an_account_without_a_team_shows_its_figures_and_offers_to_make_it_one(manager_client):
    SlurmJobFactory(account="ghost")  # the accounting brought it before anyone made its team
    page = manager_client.get("/inventory/teams/ghost/")
    assert page.status_code == 200
    assert 'id="no-team-record"' in page.content.decode()
    assert 'href="/inventory/teams/+add/?name=ghost"' in page.content.decode()
    assert manager_client.get("/inventory/teams/+add/?name=ghost").context["form"].initial["name"] == "ghost"
    assert manager_client.get("/inventory/teams/nobody/").status_code == 404


def test_a_manager_makes_a_team_then_edits_it_with_members_and_the_name_stays(manager_client, manager):
    rita = make_user("rita", RESEARCHER)
    made = manager_client.post("/inventory/teams/+add/", {"name": "bio", "description": "Proteins.", "email": ""})
    assert made.status_code == 302 and made.url == "/inventory/teams/bio/"
    refused = manager_client.post("/inventory/teams/+add/", {"name": "Bio Lab"})
    assert refused.status_code == 400 and "Slurm account" in refused.content.decode()

    form = manager_client.get("/inventory/teams/bio/edit/").context["form"]
    assert form.fields["name"].disabled
    data = {"name": "renamed", "description": "Proteins and RNA.", "email": "bio@example.org",
            "pi": manager.pk, "_version": form.initial["_version"], "change_reason": "new members",
            "members-TOTAL_FORMS": "1", "members-INITIAL_FORMS": "0", "members-MIN_NUM_FORMS": "0",
            "members-MAX_NUM_FORMS": "1000",
            "members-0-user": rita.pk, "members-0-slurm_user": "rsmith", "members-0-role": "manager"}
    saved = manager_client.post("/inventory/teams/bio/edit/", data)
    assert saved.status_code == 302
    bio = Team.objects.get()
    assert (bio.name, bio.description, bio.email, bio.pi) == ("bio", "Proteins and RNA.", "bio@example.org", manager)
    membership = bio.memberships.get()
    assert (membership.user, membership.slurm_user, membership.role) == (rita, "rsmith", "manager")
    assert membership.history.get().history_change_reason == "new members"
    page = manager_client.get("/inventory/teams/bio/").content.decode()
    assert 'id="history"' in page and "<b>Member rita</b>: — → added" in page


def as_rendered(context):
    """The POST body of the team form and its members' rows as the page renders them: posting it changes nothing."""
    data = {}
    members = context["members"]
    for form in (context["form"], members.management_form, *members):
        for field in form:
            value = field.field.prepare_value(field.value())
            if value not in (None, False):
                data[field.html_name] = "on" if value is True else value
    return data


def test_a_team_manager_edits_their_team_but_not_its_pi_nor_another_team(client, vision):
    nina = vision.memberships.get(role="manager").user
    other = make_team("speech")
    client.force_login(nina)
    assert f'href="{VISION}edit/"' in client.get(VISION).content.decode()
    context = client.get(f"{VISION}edit/").context
    assert context["form"].fields["pi"].disabled
    data = {**as_rendered(context), "description": "Image and video models.", "pi": nina.pk}
    rita = next(f.prefix for f in context["members"] if f.instance.pk and f.instance.user.username == "rita")
    data[f"{rita}-DELETE"] = "on"
    answer = client.post(f"{VISION}edit/", data)
    assert answer.status_code == 302
    vision.refresh_from_db()
    assert vision.description == "Image and video models." and vision.pi.username == "pia"  # the PI kept
    assert list(vision.members.values_list("username", flat=True)) == ["nina"]
    assert client.get(f"/inventory/teams/{other.name}/edit/").status_code == 403
    assert client.get("/inventory/teams/+add/").status_code == 403


def test_a_researcher_member_may_not_edit(client, vision):
    client.force_login(vision.memberships.get(role="member").user)
    assert client.get(f"{VISION}edit/").status_code == 403
    assert client.post(f"{VISION}edit/", {"name": "vision", "description": "mine"}).status_code == 403
    assert Team.objects.get(name="vision").description == "Image models."


def test_the_node_form_offers_the_teams_and_the_csv_import_names_them(manager_client):
    make_team("vision")
    node = make_node()
    options = manager_client.get(node.get_edit_url()).content.decode()
    assert '<option value="vision">vision</option>' in options
    site, model = node.site, node.node_model
    csv = ("hostname,site,node_model,owner_team,state\n"
           f"n-ok,{site.name},{model.name},vision,delivered\n"
           f"n-bad,{site.name},{model.name},nosuchteam,delivered\n")
    preview = manager_client.post("/inventory/nodes/import/", {"csv_text": csv}).content.decode()
    assert "No team named &#x27;nosuchteam&#x27;: add it on the teams page first." in preview
    assert not Node.objects.filter(hostname="n-ok").exists()
    exported = manager_client.get("/inventory/nodes/", {"_export": "csv", "owner_team": "VISION"})
    assert exported.status_code == 200
    make_node(hostname="n-vis", owner_team="vision")
    rows = manager_client.get("/inventory/nodes/", {"_export": "csv", "owner_team": "vision"}).content.decode()
    assert "n-vis" in rows and ",vision," in rows


def test_the_team_page_reads_as_many_queries_for_20_members_as_for_2(manager_client, django_assert_max_num_queries):
    team = make_team("vision")
    make_node(owner_team="vision")

    def join(first, last):
        for i in range(first, last):
            membership = team.memberships.create(user=make_user(f"m{i}", RESEARCHER))
            membership.role = TeamMember.Role.MANAGER
            membership.save()  # a change record more each

    join(0, 2)
    manager_client.get(VISION)  # warm-up: session, content types
    with django_assert_max_num_queries(60) as few:
        manager_client.get(VISION)
    join(2, 20)
    with django_assert_max_num_queries(len(few)):
        page = manager_client.get(VISION).content.decode()
    assert "<td>m19</td>" in page and "<b>Member m19: role</b>: member → manager" in page


def test_the_edit_page_reads_the_people_once_whatever_its_rows(manager_client, django_assert_max_num_queries):
    team = make_team("vision")
    edit = f"{VISION}edit/"
    team.memberships.create(user=make_user("m0", RESEARCHER))
    manager_client.get(edit)
    with django_assert_max_num_queries(40) as few:
        manager_client.get(edit)
    for i in range(1, 15):
        team.memberships.create(user=make_user(f"m{i}", RESEARCHER))
    with django_assert_max_num_queries(len(few)):
        page = manager_client.get(edit).content.decode()
    assert page.count('<option value="') >= 15 * 16  # every row offers every person
