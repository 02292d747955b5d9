"""Logins by an authenticating proxy's header (``portal.sso.remote_user``): believed from ``TRUSTED_PROXIES`` only,
its groups header mapped through the one table (source remote-user header), a session from the header ended when the
header stops coming, a local account never taken over; off where ``REMOTE_USER_HEADER`` is not set."""

import pytest
import requests
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from portal.models import DirectoryGroupMapping, LoginGrantChange
from portal.roles import MANAGER, RESEARCHER
from portal.sso import remote_user
from tests.helpers.accounts import make_user

PROXY, ELSEWHERE = "10.0.0.5", "192.0.2.7"
ENV = {"REMOTE_USER_HEADER": "X-Remote-User", "TRUSTED_PROXIES": "10.0.0.0/29, 2001:db8::/64",
       "REMOTE_USER_GROUPS_HEADER": "X-Remote-Groups", "REMOTE_USER_EMAIL_HEADER": "X-Remote-Email"}


def use_header(settings, **env):
    settings.REMOTE_USER = remote_user.remote_user_settings({**ENV, **env})["REMOTE_USER"]
    others = [backend for backend in settings.AUTHENTICATION_BACKENDS if backend != remote_user.BACKEND]
    settings.AUTHENTICATION_BACKENDS = [others[0], remote_user.BACKEND, *others[1:]]


@pytest.fixture
def header_login(settings, db):
    use_header(settings)
    DirectoryGroupMapping.objects.create(group="gpu-admins", role=MANAGER)
    DirectoryGroupMapping.objects.create(group="vision-team", source="remote_user", role=RESEARCHER)


def through(address, user="ada", groups="gpu-admins,vision-team", client=None):
    client = client or Client(REMOTE_ADDR=address)
    headers = {"HTTP_X_REMOTE_USER": user, "HTTP_X_REMOTE_GROUPS": groups, "HTTP_X_REMOTE_EMAIL": f"{user}@lab.example"}
    return client, client.get("/", **(headers if user else {}))


def roles(user):
    return set(user.groups.values_list("name", flat=True))


def test_the_proxys_header_logs_in_with_the_groups_it_brings(header_login):
    client, home = through(PROXY)
    assert home.status_code == 200 and b"ada" in home.content
    ada = User.objects.get(username="ada")
    assert (ada.email, ada.has_usable_password(), roles(ada)) == ("ada@lab.example", False, {MANAGER, RESEARCHER})
    assert {(c.source, c.role) for c in LoginGrantChange.objects.filter(user=ada)} == {
        ("remote_user", MANAGER), ("remote_user", RESEARCHER)}

    _, later = through(PROXY, groups="vision-team", client=client)  # the same session: no new login
    assert later.status_code == 200 and roles(ada) == {MANAGER, RESEARCHER}
    _, again = through(PROXY, groups="vision-team")  # a new session: a login, gpu-admins gone
    assert again.status_code == 200 and roles(ada) == {RESEARCHER}


def test_the_header_from_any_other_address_is_ignored(header_login):
    client, page = through(ELSEWHERE)
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert not User.objects.filter(username="ada").exists()
    make_user("root", "admin")
    _, impostor = through(ELSEWHERE, user="root")
    assert impostor.status_code == 302


def test_a_session_from_the_header_ends_when_the_header_stops_coming(header_login):
    client, _ = through(PROXY)
    _, without = through(PROXY, user=None, client=client)
    assert without.status_code == 302
    local = Client(REMOTE_ADDR=PROXY)  # a local login from behind the proxy is no header session: it stays
    make_user("root", "admin")
    assert local.post("/accounts/login/", {"username": "root", "password": "pw-root"}).status_code == 302
    assert local.get("/").status_code == 200


def test_a_local_account_of_the_same_name_is_not_taken_over(header_login):
    make_user("root", "viewer")
    _, page = through(PROXY, user="root")
    assert page.status_code == 302 and roles(User.objects.get(username="root")) == {"viewer"}


def test_without_a_groups_header_the_roles_are_left_alone(settings, db):
    use_header(settings, REMOTE_USER_GROUPS_HEADER="")
    DirectoryGroupMapping.objects.create(group="gpu-admins", role=MANAGER)
    _, home = through(PROXY)
    assert home.status_code == 200 and roles(User.objects.get(username="ada")) == set()


def test_off_unless_set_up_and_never_without_trusted_proxies(db):
    _, page = through(PROXY)
    assert page.status_code == 302 and not User.objects.exists()
    assert remote_user.remote_user_settings({}) == {}
    with pytest.raises(ImproperlyConfigured, match="TRUSTED_PROXIES"):
        remote_user.remote_user_settings({"REMOTE_USER_HEADER": "X-Remote-User"})
    with pytest.raises(ImproperlyConfigured, match="TRUSTED_PROXIES"):
        remote_user.remote_user_settings({"REMOTE_USER_HEADER": "X-Remote-User", "TRUSTED_PROXIES": "proxy.lab"})


@pytest.mark.django_db(transaction=True)
def test_over_a_real_connection_the_address_is_the_peers(live_server, settings):
    """The address checked is the connection's, not anything the client says (X-Forwarded-For)."""
    use_header(settings, TRUSTED_PROXIES="10.0.0.0/8")
    forged = {"X-Remote-User": "ada", "X-Forwarded-For": PROXY}
    answer = requests.get(f"{live_server.url}/", headers=forged, allow_redirects=False, timeout=10)
    assert answer.status_code == 302 and not User.objects.filter(username="ada").exists()
    use_header(settings, TRUSTED_PROXIES="127.0.0.1/32,::1/128")
    answer = requests.get(f"{live_server.url}/", headers=forged, allow_redirects=False, timeout=10)
    assert answer.status_code == 200 and User.objects.filter(username="ada").exists()
