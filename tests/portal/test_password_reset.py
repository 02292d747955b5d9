"""Password reset for local accounts in the portal's own pages (``portal.sso.password``): the whole way from the
login page's link to a new password, the same answer whether or not an address has an account, the limits per
client and per address, no link for a directory account, and no page at all with local passwords off."""

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.cache import cache
from django.test import Client

from portal.roles import VIEWER
from tests.helpers.accounts import make_user


@pytest.fixture(autouse=True)
def fresh_counts(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PORTAL_URL = "https://portal.lab.example"
    cache.clear()
    yield
    cache.clear()


def ask(address, client=None, ip="10.0.0.1"):
    return (client or Client()).post("/accounts/password_reset/", {"email": address}, REMOTE_ADDR=ip, follow=True)


def test_from_the_login_page_to_a_new_password(db):
    make_user("ann", VIEWER)
    login = Client().get("/accounts/login/")
    assert b'href="/accounts/password_reset/"' in login.content
    form = Client().get("/accounts/password_reset/")
    assert form.status_code == 200 and b"Reset your password" in form.content and b'class="card login"' in form.content
    done = ask("ANN@example.org")  # any case
    assert done.status_code == 200 and b"If an account has this address" in done.content
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ann@example.org"]
    link = re.search(r"https://portal\.lab\.example(/accounts/reset/\S+/)", mail.outbox[0].body).group(1)
    client = Client()
    page = client.get(link, follow=True)
    assert b"Choose a new password" in page.content
    saved = client.post(page.redirect_chain[-1][0], {"new_password1": "a-Long-new-passphrase-7",
                                                    "new_password2": "a-Long-new-passphrase-7"}, follow=True)
    assert b"Your new password is saved" in saved.content
    assert Client().login(username="ann", password="a-Long-new-passphrase-7")
    again = Client().get(link, follow=True)
    assert b"This link has been used already or has expired" in again.content


def test_an_unknown_address_reads_the_same_and_sends_nothing(db):
    make_user("ann", VIEWER)
    known, unknown = (re.search(rb'<main.*</main>', ask(address).content, re.S).group()
                      for address in ("ann@example.org", "nobody@example.org"))
    assert known == unknown and len(mail.outbox) == 1


def test_requests_and_mails_are_limited(db, settings):
    settings.PASSWORD_RESET_LIMIT = 3
    make_user("ann", VIEWER)
    for _ in range(3):
        assert ask("nobody@example.org", ip="10.0.0.9").status_code == 200
    refused = ask("ann@example.org", ip="10.0.0.9")
    assert refused.status_code == 429 and b"Too many password reset requests" in refused.content
    assert not mail.outbox
    for n in range(5):  # from five addresses: one mailbox gets three links, the page reads the same
        answer = ask("ann@example.org", ip=f"10.0.1.{n}")
        assert answer.status_code == 200 and b"If an account has this address" in answer.content
    assert len(mail.outbox) == 3


def test_a_directory_account_gets_no_link(db):
    user = User.objects.create(username="ada", email="ada@lab.example")
    user.set_unusable_password()
    user.save()
    assert ask("ada@lab.example").status_code == 200 and not mail.outbox


def test_no_reset_with_local_passwords_off(db, settings):
    settings.AUTHENTICATION_BACKENDS = [b.replace("django.contrib.auth.backends.ModelBackend",
                                                  "portal.sso.backends.PermissionsOnlyBackend")
                                        for b in settings.AUTHENTICATION_BACKENDS]
    assert b"Forgot your password" not in Client().get("/accounts/login/").content
    assert Client().get("/accounts/password_reset/").status_code == 404
