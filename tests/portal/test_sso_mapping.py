"""The mapping from directory groups to roles and teams (``portal.sso.mapping``), for any mapping, any user and any
groups at login (hypothesis): the user ends with exactly the roles and teams their groups map to among those the
mapping names, keeps what it does not name, a second login with the same groups changes nothing, and the dry run
says what the login gives. Plus the mapping's own checks."""

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inventory.models import Team, TeamMember
from portal.models import DirectoryGroupMapping, LoginGrantChange
from portal.roles import MANAGER, RESEARCHER, SUPPORT, VIEWER
from portal.sso import mapping
from tests.helpers.accounts import make_user

GROUPS, ROLES, TEAMS = ["ops", "vision", "speech", "Admins"], [VIEWER, RESEARCHER, SUPPORT, MANAGER], ["t0", "t1"]

rows = st.lists(st.fixed_dictionaries({
    "group": st.sampled_from(GROUPS), "source": st.sampled_from(["any", "ldap", "oidc"]),
    "role": st.sampled_from(["", *ROLES]), "team": st.sampled_from(["", *TEAMS]),
    "team_role": st.sampled_from(["member", "manager"]),
}).filter(lambda row: row["role"] or row["team"]), max_size=6)
held = st.fixed_dictionaries({"roles": st.sets(st.sampled_from(ROLES)),
                              "teams": st.dictionaries(st.sampled_from(TEAMS), st.sampled_from(["member", "manager"]))})
logins = st.sets(st.sampled_from([*GROUPS, "admins", "unknown"]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mapped=rows, before=held, groups=logins)
def test_a_login_gives_exactly_what_its_groups_map_to(db, mapped, before, groups):
    with transaction.atomic():
        teams = {name: Team.objects.create(name=name) for name in TEAMS}
        for row in mapped:  # one row per (source, group, role, team): the first team role drawn
            DirectoryGroupMapping.objects.get_or_create(**{k: v for k, v in row.items() if k != "team_role"},
                                                        defaults={"team_role": row["team_role"]})
        mapped = list(DirectoryGroupMapping.objects.values("group", "source", "role", "team", "team_role"))
        user = make_user("u", None)
        user.groups.add(*Group.objects.filter(name__in=before["roles"]))
        for name, role in before["teams"].items():
            TeamMember.objects.create(team=teams[name], user=user, role=role)

        seen = {g.casefold() for g in groups}
        matched = [r for r in mapped if r["source"] in ("any", "ldap") and r["group"].casefold() in seen]
        managed_roles = {r["role"] for r in mapped if r["source"] in ("any", "ldap") and r["role"]}
        managed_teams = {r["team"] for r in mapped if r["source"] in ("any", "ldap") and r["team"]}
        want_teams = {}
        for r in matched:
            if r["team"]:
                want_teams[r["team"]] = max(want_teams.get(r["team"], "member"), r["team_role"],
                                            key=["member", "manager"].index)
        expected_roles = {r["role"] for r in matched if r["role"]} | (before["roles"] - managed_roles)
        expected_teams = want_teams | {t: role for t, role in before["teams"].items() if t not in managed_teams}

        assert mapping.dry_run(groups, "ldap").roles == {r["role"] for r in matched if r["role"]}
        mapping.apply(user, groups, "ldap")
        assert set(user.groups.values_list("name", flat=True)) == expected_roles
        assert dict(user.team_memberships.values_list("team__name", "role")) == expected_teams
        logged = LoginGrantChange.objects.filter(user=user).count()
        assert mapping.apply(user, groups, "ldap") == [] and LoginGrantChange.objects.count() == logged
        transaction.set_rollback(True)


def test_a_row_maps_to_something_that_exists(db):
    with pytest.raises(ValidationError, match="role, a team or both"):
        DirectoryGroupMapping(group="ops").full_clean()
    with pytest.raises(ValidationError, match="No team is named 'nope'"):
        DirectoryGroupMapping(group="ops", team="nope").full_clean()
    Team.objects.create(name="vision")
    DirectoryGroupMapping(group="ops", team="vision", role=VIEWER).full_clean()
    grants = mapping.dry_run(["OPS"])
    assert grants.says() == "roles: no role; teams: no team"  # nothing saved yet
    DirectoryGroupMapping.objects.create(group="ops", team="vision", role=VIEWER)
    assert mapping.dry_run(["OPS"]).says() == "roles: viewer; teams: vision (member)"


def test_only_admins_may_change_who_gets_which_role(db):
    # A manager holds every other permission of the apps; a mapping row "my group -> admin" would make them one.
    manager, viewer, admin = make_user("m", MANAGER), make_user("v", VIEWER), make_user("a", "admin")
    for codename in ("add_directorygroupmapping", "change_directorygroupmapping", "view_logingrantchange"):
        assert not manager.has_perm(f"portal.{codename}") and not viewer.has_perm(f"portal.{codename}")
        assert admin.has_perm(f"portal.{codename}")
    assert manager.has_perm("portal.view_importjob")  # the managers' other portal permissions stay


def test_the_mapping_pages_and_the_dry_run(db, client):
    Team.objects.create(name="vision")
    admin, manager = make_user("root", "admin"), make_user("m", MANAGER)
    client.force_login(manager)
    assert client.get("/sso/directory-group-mappings/").status_code == 403
    assert client.get("/sso/directory-group-mappings/dry-run/?groups=ops").status_code == 403
    client.force_login(admin)
    bad = client.post("/sso/directory-group-mappings/add/", {"group": "ops", "source": "any", "team": "nope",
                                                             "team_role": "member"})
    assert bad.status_code == 200 and b"No team is named" in bad.content
    assert not DirectoryGroupMapping.objects.exists()
    saved = client.post("/sso/directory-group-mappings/add/", {"group": "ops", "source": "ldap", "role": MANAGER,
                                                               "team": "vision", "team_role": "manager"})
    assert saved.status_code == 302 and DirectoryGroupMapping.objects.get().role == MANAGER
    listing = client.get("/sso/directory-group-mappings/")
    assert listing.status_code == 200 and b"ops" in listing.content and b"Try a login on paper" in listing.content
    answer = client.get("/sso/directory-group-mappings/dry-run/", {"groups": "OPS\nstaff", "source": "ldap"})
    assert b"roles: manager; teams: vision (manager)" in answer.content
    other_way = client.get("/sso/directory-group-mappings/dry-run/", {"groups": "ops", "source": "oidc"})
    assert b"roles: no role; teams: no team" in other_way.content
    assert client.get("/sso/directory-group-mappings/dry-run/", {"groups": "x", "source": "bogus"}).status_code == 200
    assert not Group.objects.get(name=MANAGER).user_set.filter(username="root").exists()  # nothing written
