"""Single sign-on in a real browser (system Chromium via Playwright against ``live_server``): through a real OpenID
provider's login page (``tests/helpers/oidcprovider.py``) and through a real OpenLDAP (``tests/helpers/ldapserver.py``),
each login's directory groups becoming the role the user menu shows; a group removed at the provider takes the role
away at the next login; logging out of the portal ends the provider's session too (RP-initiated logout: the next
"Log in with …" asks for the password again)."""

import pytest
from playwright.sync_api import expect

from portal.models import DirectoryGroupMapping, LoginGrantChange
from portal.roles import MANAGER, RESEARCHER
from portal.sso import ldap as sso_ldap
from tests.helpers import ldapserver, oidcprovider
from tests.helpers.axe import axe_violations, blocking
from tests.helpers.oidcprovider import use_provider

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]  # the browser_page fixture


@pytest.fixture(scope="module")
def provider(live_server):
    if oidcprovider.missing():
        pytest.skip(f"OpenID Connect tests need: {', '.join(oidcprovider.missing())}")
    with oidcprovider.throwaway_provider(live_server.url) as found:
        yield found


def provider_page(session):
    """The test provider's development pages import a web font: refused here, as the air-gapped site would."""
    session.page.route("https://fonts.googleapis.com/**", lambda route: route.abort())
    return session.page


def sign_in_at_provider(page, user):
    page.get_by_role("link", name="Log in with Lab ID").click()
    page.locator("input[name=login]").fill(user)
    page.locator("input[name=password]").fill("any password: the test provider takes it")
    page.get_by_role("button", name="Sign-in").click()


def log_out(page):
    page.locator(".usermenu .menu-button").click()
    page.get_by_role("button", name="Log out").click()


def test_a_login_through_the_provider_maps_its_groups_and_logging_out_ends_its_session(browser_page, provider,
                                                                                        settings):
    use_provider(settings, provider)
    provider.write(clock_offset=0, tamper=False)
    provider.set_users(ada=["gpu-admins", "vision-team"])
    DirectoryGroupMapping.objects.create(group="gpu-admins", role=MANAGER)
    DirectoryGroupMapping.objects.create(group="vision-team", source="oidc", role=RESEARCHER)
    page = provider_page(browser_page)

    page.goto("/inventory/nodes/")
    expect(page).to_have_url(f"{browser_page.base_url}/accounts/login/?next=/inventory/nodes/")
    assert blocking(axe_violations(page)) == []  # the login page with its "Log in with …" button
    sign_in_at_provider(page, "ada")
    expect(page).to_have_url(f"{browser_page.base_url}/inventory/nodes/")  # where the user was going
    expect(page.locator(".usermenu .menu-button")).to_contain_text("ada")
    expect(page.locator(".usermenu .role")).to_have_text(MANAGER)
    browser_page.screenshot("sso-oidc-logged-in")

    provider.set_groups("ada", ["vision-team"])  # gpu-admins removed at the provider
    log_out(page)
    # The provider asks whether to end its session too, then sends the browser back to the portal's login page.
    expect(page.get_by_role("heading", name="Sign out of the test provider?")).to_be_visible()
    page.get_by_role("button", name="Yes, sign me out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    assert page.url.startswith(f"{browser_page.base_url}/accounts/login/")

    sign_in_at_provider(page, "ada")  # the provider's session is over: its login page again
    expect(page.locator(".usermenu .role")).to_have_text(RESEARCHER)
    changes = [(c.source, c.action, c.role) for c in LoginGrantChange.objects.filter(user__username="ada")]
    assert changes[0] == ("oidc", "removed", MANAGER) and len(changes) == 3


def test_a_refused_provider_answer_is_said_on_the_login_page(browser_page, provider, settings):
    use_provider(settings, provider)
    provider.set_users(ada=["gpu-admins"])
    provider.write(tamper=True)
    try:
        page = provider_page(browser_page)
        page.goto("/accounts/login/")
        sign_in_at_provider(page, "ada")
        expect(page.get_by_role("alert")).to_contain_text("The single sign-on login was refused")
        expect(page.locator(".usermenu")).to_have_count(0)
    finally:
        provider.write(tamper=False)


@pytest.fixture
def directory(settings):
    if ldapserver.missing():
        pytest.skip(f"LDAP tests need: {', '.join(ldapserver.missing())}")
    with ldapserver.throwaway_directory() as found:
        settings.AUTHENTICATION_BACKENDS = [settings.AUTHENTICATION_BACKENDS[0], sso_ldap.BACKEND,
                                            *settings.AUTHENTICATION_BACKENDS[1:]]
        for name, value in sso_ldap.ldap_settings(found.env()).items():
            setattr(settings, name, value)
        sso_ldap.connect()
        yield found


def test_a_login_through_ldap_maps_its_groups(browser_page, directory):
    DirectoryGroupMapping.objects.create(group="gpu-admins", source="ldap", role=MANAGER)
    page = browser_page.page
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("ada-pw")
    page.get_by_role("button", name="Log in", exact=True).click()
    expect(page.locator(".usermenu .role")).to_have_text(MANAGER)
    browser_page.assert_clean()

    log_out(page)  # no provider session to end: the portal's own logged-out page
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in", exact=True).click()
    expect(page.locator(".errors")).to_contain_text("Please enter a correct username and password")
