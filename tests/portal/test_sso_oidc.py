"""Logins through a real OpenID provider (``oidc-provider`` on Node.js, started here: ``tests/helpers/oidcprovider.py``)
with Django's test client on the portal's side and ``requests`` on the provider's login page: the groups claim mapped
to roles and teams (source OpenID Connect), a group removed at the provider taken away at the next login, the
session ending when the ID token does, and the ID tokens the portal must refuse: one tampered with on its way, one
expired (the provider's clock off), one with another nonce than the portal sent. The browser walk is
``test_sso_browser.py``."""

import re
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import pytest
import requests
from django.contrib.auth.models import User
from django.test import Client

from inventory.models import Team, TeamMember
from portal.models import DirectoryGroupMapping, LoginGrantChange
from portal.roles import MANAGER, RESEARCHER
from tests.helpers import oidcprovider
from tests.helpers.accounts import make_user
from tests.helpers.oidcprovider import use_provider

pytestmark = pytest.mark.skipif(bool(oidcprovider.missing()),
                                reason=f"OpenID Connect tests need: {', '.join(oidcprovider.missing())}")


@pytest.fixture(scope="module")
def provider():
    with oidcprovider.throwaway_provider() as found:
        yield found


@pytest.fixture
def oidc_login(settings, provider, db):
    use_provider(settings, provider)
    provider.write(clock_offset=0, tamper=False)
    provider.set_users(ada=["gpu-admins", "vision-team"], bob=["vision-team"], dan=["students"])
    Team.objects.create(name="vision")
    DirectoryGroupMapping.objects.create(group="gpu-admins", role=MANAGER)
    DirectoryGroupMapping.objects.create(group="vision-team", source="oidc", role=RESEARCHER, team="vision")
    DirectoryGroupMapping.objects.create(group="vision-team", source="ldap", team="vision", team_role="manager")
    return provider


def at_provider(url, user, change_authorization=None):
    """The provider's side of a login, as a browser would walk it: its login page filled in for ``user``, back to
    the portal's callback; returns the callback's path and query. ``change_authorization`` may change the
    authorization request's parameters first (what an attacker in the middle would)."""
    if change_authorization:
        parts = urlsplit(url)
        url = urlunsplit(parts._replace(query=urlencode(change_authorization(dict(parse_qsl(parts.query))))))
    browser = requests.Session()
    answer = browser.get(url, allow_redirects=True, timeout=10)
    assert answer.status_code == 200 and 'name="login"' in answer.text, answer.text[:500]
    action = urljoin(answer.url, re.search(r'action="([^"]+)"', answer.text)[1])
    answer = browser.post(action, data={"prompt": "login", "login": user, "password": "any"}, allow_redirects=False,
                          timeout=10)
    while answer.is_redirect and not answer.headers["Location"].startswith("http://testserver"):
        answer = browser.get(urljoin(answer.url, answer.headers["Location"]), allow_redirects=False, timeout=10)
    assert answer.is_redirect, answer.text[:500]
    back = urlsplit(answer.headers["Location"])
    return f"{back.path}?{back.query}"


def log_in(user, client=None, change_authorization=None):
    client = client or Client()
    start = client.get("/sso/oidc/login/?next=/inventory/")
    assert start.status_code == 302, start.content.decode()[-800:]
    return client, client.get(at_provider(start["Location"], user, change_authorization))


def roles(user):
    return set(user.groups.values_list("name", flat=True))


def test_the_login_page_offers_the_provider_only_where_it_is_set_up(settings, db, provider):
    assert b"Log in with" not in Client().get("/accounts/login/").content
    assert Client().get("/sso/oidc/login/").status_code == 404
    use_provider(settings, provider)
    page = Client().get("/accounts/login/?next=/support/")
    assert b"Log in with Lab ID" in page.content and b"/sso/oidc/login/?next=/support/" in page.content
    assert b'name="password"' in page.content  # local accounts still log in beside it
    settings.AUTHENTICATION_BACKENDS = [backend.replace("django.contrib.auth.backends.ModelBackend",
                                                        "portal.sso.backends.PermissionsOnlyBackend")
                                        for backend in settings.AUTHENTICATION_BACKENDS]
    only_sso = Client().get("/accounts/login/")  # LOCAL_LOGINS=0 and no LDAP: no password to type anywhere
    assert b"Log in with Lab ID" in only_sso.content and b'name="password"' not in only_sso.content


def test_a_provider_login_gets_the_roles_and_teams_its_groups_claim_maps_to(oidc_login):
    client, page = log_in("ada")
    assert page.status_code == 302 and page["Location"] == "/inventory/", page.content.decode()[-800:]
    ada = User.objects.get(username="ada")
    assert (ada.email, ada.first_name, ada.has_usable_password()) == ("ada@lab.example", "Ada", False)
    assert roles(ada) == {MANAGER, RESEARCHER}
    assert TeamMember.objects.get(user=ada, team__name="vision").role == "member"  # the LDAP row does not count
    assert client.get("/inventory/nodes/").status_code == 200
    logged = {(c.source, c.action, c.role or c.team) for c in LoginGrantChange.objects.filter(user=ada)}
    assert logged == {("oidc", "added", MANAGER), ("oidc", "added", RESEARCHER), ("oidc", "added", "vision")}
    assert TeamMember.objects.get(user=ada).history.first().history_change_reason == "OpenID Connect login"
    # The portal's session ends when the provider's ID token does (the test provider's live 10 minutes).
    assert 0 < client.session.get_expiry_age() <= 600

    oidc_login.set_groups("ada", ["vision-team"])
    log_in("ada")
    assert roles(ada) == {RESEARCHER}
    assert {(c.action, c.role) for c in LoginGrantChange.objects.filter(user=ada)[:1]} == {("removed", MANAGER)}


def test_groups_that_map_to_nothing_give_the_no_role_page(oidc_login):
    client, page = log_in("dan")
    assert page.status_code == 302
    home = client.get("/")
    assert home.status_code == 200 and b"Your account has no role yet" in home.content


def test_a_local_account_of_the_same_name_is_not_taken_over(oidc_login):
    make_user("bob", MANAGER)
    client, page = log_in("bob")
    assert page.status_code == 403 and b"has a password of the portal" in page.content
    assert client.get("/").status_code == 302  # not logged in
    assert roles(User.objects.get(username="bob")) == {MANAGER}


def refused(client, page):
    assert page.status_code == 403, page.content.decode()[-800:]
    assert b"The single sign-on login was refused" in page.content
    assert client.get("/").status_code == 302 and not User.objects.filter(username="ada").exists()


def test_an_id_token_tampered_with_on_its_way_is_refused(oidc_login):
    oidc_login.write(tamper=True)
    refused(*log_in("ada"))


def test_an_expired_id_token_is_refused(oidc_login):
    oidc_login.write(clock_offset=-900)  # issued "15 minutes ago", for 10 minutes: expired beyond the clock skew
    refused(*log_in("ada"))


def test_an_id_token_for_another_nonce_is_refused(oidc_login):
    refused(*log_in("ada", change_authorization=lambda params: {**params, "nonce": "not-the-portals"}))


def test_a_callback_without_the_portals_state_is_refused(oidc_login):
    start = Client().get("/sso/oidc/login/")
    callback = at_provider(start["Location"], "ada")
    refused(Client(), Client().get(callback))  # another browser: no state of this login in its session


def test_a_provider_that_is_down_is_said_and_local_accounts_still_log_in(settings, db):
    from tests.helpers.pgserver import free_port

    use_provider(settings, oidcprovider.Provider(f"http://127.0.0.1:{free_port()}", None, {}))
    page = Client().get("/sso/oidc/login/")
    assert page.status_code == 503 and b"could not be reached" in page.content
    make_user("root", "admin")
    client = Client()
    assert client.post("/accounts/login/", {"username": "root", "password": "pw-root"}).status_code == 302


def test_logging_out_ends_the_provider_session_too(oidc_login):
    client, _ = log_in("ada")
    id_token = client.session["oidc_id_token"]
    out = client.post("/accounts/logout/")
    assert out.status_code == 302
    end = urlsplit(out["Location"])
    assert f"{end.scheme}://{end.netloc}{end.path}" == f"{oidc_login.issuer}/session/end"
    params = dict(parse_qsl(end.query))
    assert params["id_token_hint"] == id_token
    assert params["post_logout_redirect_uri"] == "http://testserver/accounts/login/"
    assert client.get("/").status_code == 302  # the portal's session is gone already
    assert requests.get(out["Location"], timeout=10).status_code == 200  # the hint is valid (the browser test
    # walks the provider's sign-out page with its session)
