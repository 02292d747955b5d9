"""Logins against a real OpenLDAP (``slapd``, started here: ``tests/helpers/ldapserver.py``) through the login page,
with the directory's groups mapped to roles and teams (``portal.sso``): bind and search, one user in two groups, a
group removed in the directory taking the role away at the next login, a wrong password, a disabled account, a user
whose groups map to nothing, and a directory that is down (said on the page; a local admin still logs in)."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from inventory.models import Team, TeamMember
from portal.models import DirectoryGroupMapping, LoginGrantChange
from portal.roles import MANAGER, RESEARCHER
from portal.sso import ldap as sso_ldap
from tests.helpers import ldapserver
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.skipif(bool(ldapserver.missing()),
                                reason=f"LDAP tests need: {', '.join(ldapserver.missing())} (apt-get install -y "
                                       "slapd ldap-utils libldap2-dev libsasl2-dev; make install-test)")


@pytest.fixture(scope="module")
def directory():
    with ldapserver.throwaway_directory() as found:
        yield found


@pytest.fixture
def ldap_login(settings, directory, db):
    """The portal set up from the environment variables of docs/authentication.md for this directory."""
    settings.AUTHENTICATION_BACKENDS = [settings.AUTHENTICATION_BACKENDS[0], sso_ldap.BACKEND,
                                        *settings.AUTHENTICATION_BACKENDS[1:]]
    for name, value in sso_ldap.ldap_settings(directory.env()).items():
        setattr(settings, name, value)
    sso_ldap.connect()
    Team.objects.create(name="vision")
    DirectoryGroupMapping.objects.create(group="gpu-admins", role=MANAGER)
    DirectoryGroupMapping.objects.create(group="vision-team", role=RESEARCHER, team="vision")
    DirectoryGroupMapping.objects.create(group="GPU-Admins", source="ldap", team="vision", team_role="manager")
    return directory


def log_in(username, password):
    client = Client()
    page = client.post("/accounts/login/", {"username": username, "password": password})
    return client, page


def roles(user):
    return set(user.groups.values_list("name", flat=True))


def test_a_directory_login_gets_the_roles_and_teams_its_groups_map_to(ldap_login):
    client, page = log_in("ada", "ada-pw")
    assert page.status_code == 302, page.content.decode()[-800:]
    ada = User.objects.get(username="ada")
    assert (ada.email, ada.first_name, ada.last_name) == ("ada@lab.example", "Ada", "Lovelace")
    assert roles(ada) == {MANAGER, RESEARCHER}  # one user in two groups
    # Two rows name the team: the manager's role wins (the LDAP-only row, matched without regard to case).
    assert TeamMember.objects.get(user=ada, team__name="vision").role == "manager"
    assert client.get("/").status_code == 200
    logged = {(c.action, c.role or c.team) for c in LoginGrantChange.objects.filter(user=ada)}
    assert logged == {("added", MANAGER), ("added", RESEARCHER), ("added", "vision")}
    assert LoginGrantChange.objects.filter(user=ada).first().groups == ["gpu-admins", "vision-team"]
    membership = TeamMember.objects.get(user=ada)
    assert membership.history.first().history_change_reason == "LDAP login"

    log_in("ada", "ada-pw")  # the same groups: nothing changes, nothing logged
    assert LoginGrantChange.objects.filter(user=ada).count() == 3

    ldap_login.remove_member("gpu-admins", "ada")
    try:
        log_in("ada", "ada-pw")
    finally:
        ldap_login.add_member("gpu-admins", "ada")
    assert roles(ada) == {RESEARCHER}
    assert TeamMember.objects.get(user=ada, team__name="vision").role == "member"
    assert {(c.action, c.role or c.team) for c in LoginGrantChange.objects.filter(user=ada)[:2]} == {
        ("removed", MANAGER), ("changed", "vision")}


def test_refused_logins_say_why_and_create_no_user(ldap_login):
    _, wrong = log_in("bob", "not-his")
    assert wrong.status_code == 200 and b"Please enter a correct username and password" in wrong.content
    _, disabled = log_in("cyd", "cyd-pw")  # in the deny group
    assert disabled.status_code == 200 and b"Please enter a correct username and password" in disabled.content
    _, stranger = log_in("eve", "eve-pw")
    assert stranger.status_code == 200
    assert not User.objects.filter(username__in=["bob", "cyd", "eve"]).exists()


def test_groups_that_map_to_nothing_give_the_no_role_page(ldap_login):
    client, page = log_in("dan", "dan-pw")
    assert page.status_code == 302
    home = client.get("/")
    assert home.status_code == 200 and b"Your account has no role yet" in home.content


def test_a_role_given_by_hand_that_no_row_names_is_left_alone(ldap_login):
    bob = User.objects.create(username="bob")
    bob.groups.add(*__import__("django.contrib.auth.models", fromlist=["Group"]).Group.objects.filter(name="support"))
    log_in("bob", "bob-pw")
    assert roles(bob) == {"support", RESEARCHER}


def test_a_directory_that_is_down_is_said_and_local_accounts_still_log_in(ldap_login, settings):
    settings.AUTH_LDAP_SERVER_URI = f"ldap://127.0.0.1:{ldapserver.free_port()}/"  # nothing listens there
    _, page = log_in("ada", "ada-pw")
    assert page.status_code == 200 and b"The directory (LDAP) could not be reached" in page.content
    make_user("root", "admin")
    client, local = log_in("root", "pw-root")
    assert local.status_code == 302 and client.get("/").status_code == 200


def test_local_passwords_off_leaves_directory_logins_roles_and_tokens(ldap_login, settings):
    from portal.models import APIToken

    settings.AUTHENTICATION_BACKENDS = [b.replace("django.contrib.auth.backends.ModelBackend",
                                                  "portal.sso.backends.PermissionsOnlyBackend")
                                        for b in settings.AUTHENTICATION_BACKENDS]
    root = make_user("root", MANAGER)
    _, local = log_in("root", "pw-root")
    assert local.status_code == 200 and b"Please enter a correct username and password" in local.content
    client, page = log_in("ada", "ada-pw")
    assert page.status_code == 302 and client.get("/inventory/nodes/").status_code == 200  # the manager's role
    _, key = APIToken.issue(root, "integration")
    assert Client().get("/api/inventory/nodes/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
