"""What the admins have for single sign-on besides the mapping's rows: the mapping's own change history (who changed
which row when, on the row's page and the Changes page), the user menu's entries for admins, and every user's API
tokens listed and revoked, on a page and over the API (each user still sees and revokes only their own)."""

from django.test import Client

from portal.models import APIToken, DirectoryGroupMapping
from portal.roles import ADMIN, MANAGER, VIEWER
from tests.helpers.accounts import make_user


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def test_the_mapping_keeps_who_changed_which_row_when(db):
    admin = make_user("root", ADMIN)
    client = logged_in(admin)
    assert client.post("/sso/directory-group-mappings/add/", {"group": "ops", "source": "ldap", "role": MANAGER,
                                                              "team_role": "member"}).status_code == 302
    row = DirectoryGroupMapping.objects.get()
    assert client.post(f"/sso/directory-group-mappings/{row.pk}/edit/", {
        "group": "ops", "source": "ldap", "role": VIEWER, "team_role": "member"}).status_code == 302
    history = list(row.history.order_by("history_id").values_list("history_type", "role", "history_user__username"))
    assert history == [("+", MANAGER, "root"), ("~", VIEWER, "root")]
    page = client.get(f"/sso/directory-group-mappings/{row.pk}/")
    assert page.status_code == 200 and b"root" in page.content and b"manager" in page.content
    changes = client.get("/changes/", {"model": "portal.directorygroupmapping"})
    assert changes.status_code == 200 and b"ops" in changes.content
    listing = client.get("/sso/directory-group-mappings/").content
    assert b'href="/changes/?model=portal.directorygroupmapping"' in listing
    manager = logged_in(make_user("boss", MANAGER))  # managers hold every other permission, not this history
    assert b"directory group mapping" not in manager.get("/changes/").content.lower()
    assert manager.get("/changes/", {"model": "portal.directorygroupmapping"}).status_code == 200
    assert b"ops" not in manager.get("/changes/", {"model": "portal.directorygroupmapping"}).content


def test_the_user_menu_leads_admins_to_the_mapping_and_everyones_tokens(db):
    """In the user menu beside Django's admin (the main menu's bar has no room left at 1280 px)."""
    admin_page = logged_in(make_user("root", ADMIN)).get("/inventory/nodes/").content.decode()
    for label, url in [("Directory group mappings", "/sso/directory-group-mappings/"),
                       ("API tokens of all users", "/tokens/all/")]:
        assert f'<a href="{url}">{label}</a>' in admin_page
    manager_page = logged_in(make_user("boss", MANAGER)).get("/inventory/nodes/").content.decode()
    assert "/sso/directory-group-mappings/" not in manager_page and "/tokens/all/" not in manager_page


def test_an_admin_lists_and_revokes_any_users_tokens_on_the_page(db):
    admin, ada, bob = make_user("root", ADMIN), make_user("ada", VIEWER), make_user("bob", VIEWER)
    _, ada_key = APIToken.issue(ada, "ada's notebook")
    bob_token, _ = APIToken.issue(bob, "bob's sync")
    client = logged_in(admin)
    everyone = client.get("/tokens/all/").content.decode()
    assert "ada&#x27;s notebook" in everyone and "bob&#x27;s sync" in everyone
    only_bob = client.get("/tokens/all/", {"user": "bob"}).content.decode()
    assert "bob&#x27;s sync" in only_bob and "ada&#x27;s notebook" not in only_bob
    ada_token = APIToken.objects.get(user=ada)
    assert Client().get("/api/", HTTP_AUTHORIZATION=f"Token {ada_key}").status_code == 200
    revoked = client.post(f"/tokens/{ada_token.pk}/revoke/", {"next": "/tokens/all/?user=ada"}, follow=True)
    assert revoked.redirect_chain[-1][0] == "/tokens/all/?user=ada"
    assert "Token &#x27;ada&#x27;s notebook&#x27; of ada revoked." in revoked.content.decode()
    assert "ada has no API token." in revoked.content.decode()
    assert Client().get("/api/", HTTP_AUTHORIZATION=f"Token {ada_key}").status_code == 401

    manager = logged_in(make_user("boss", MANAGER))
    assert manager.get("/tokens/all/").status_code == 403
    assert manager.post(f"/tokens/{bob_token.pk}/revoke/").status_code == 404  # another's: not theirs to see
    assert APIToken.objects.filter(pk=bob_token.pk).exists()
    cy = make_user("cy", VIEWER)
    own, _ = APIToken.issue(cy, "mine")
    assert logged_in(cy).post(f"/tokens/{own.pk}/revoke/").status_code == 302
    assert not APIToken.objects.filter(pk=own.pk).exists()


def test_the_tokens_api_lists_everyones_for_an_admin_and_ones_own_otherwise(db):
    admin, ada, bob = make_user("root", ADMIN), make_user("ada", VIEWER), make_user("bob", VIEWER)
    _, admin_key = APIToken.issue(admin, "admin script")
    _, ada_key = APIToken.issue(ada, "ada's notebook")
    bob_token, _ = APIToken.issue(bob, "bob's sync")

    def api(key, method="get", path="/api/tokens/", **params):
        return getattr(Client(), method)(path, params, HTTP_AUTHORIZATION=f"Token {key}")

    listed = api(admin_key).json()
    assert {(row["user"], row["name"]) for row in listed["results"]} == {
        ("root", "admin script"), ("ada", "ada's notebook"), ("bob", "bob's sync")}
    assert "key_hash" not in listed["results"][0] and len(listed["results"][0]["prefix"]) == 8
    assert [row["name"] for row in api(admin_key, user="bob").json()["results"]] == ["bob's sync"]
    assert [row["name"] for row in api(ada_key).json()["results"]] == ["ada's notebook"]
    assert api(ada_key, "delete", f"/api/tokens/{bob_token.pk}/").status_code == 404
    assert api(admin_key, "delete", f"/api/tokens/{bob_token.pk}/").status_code == 204
    assert not APIToken.objects.filter(pk=bob_token.pk).exists()
    assert "tokens" in api(admin_key, path="/api/").json()
