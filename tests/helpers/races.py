"""Races against a live server: a manager logged in once (page sessions and an API token), and calls released
at the same moment from threads, as two people (or a double click, or a retrying client) send them."""

import re
import threading

import requests
from django.db import connection

from portal.models import APIToken
from portal.roles import MANAGER
from tests.helpers.accounts import make_user

TIMEOUT = 30


class Portal:
    """A user (a manager unless told) logged in once through the login form (with its CSRF token); each thread
    gets its own ``requests`` session carrying that log-in, and the API is called with the user's token."""

    def __init__(self, base, username="racer", role=MANAGER):
        self.base = base
        self.user = make_user(username, role)
        _, self.token = APIToken.issue(self.user, "races")
        login = requests.Session()
        page = login.get(f"{base}/accounts/login/", timeout=TIMEOUT)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        done = login.post(f"{base}/accounts/login/", timeout=TIMEOUT, allow_redirects=False,
                          data={"username": username, "password": f"pw-{username}", "csrfmiddlewaretoken": csrf})
        assert done.status_code == 302, done.text[:500]
        self.cookies = login.cookies

    def session(self):
        session = requests.Session()
        session.cookies.update(self.cookies)
        return session

    def post_page(self, session, path, data, **headers):
        """A form post as the browser sends it; follows the redirect to the page that shows the message."""
        data = {**data, "csrfmiddlewaretoken": session.cookies["csrftoken"]}
        return session.post(self.base + path, data=data, timeout=TIMEOUT, headers=headers)

    def api(self, method, path, body=None, **headers):
        return requests.request(method, self.base + path, json=body, timeout=TIMEOUT,
                                headers={"Authorization": f"Token {self.token}", **headers})


def race(*calls):
    """Run the calls at the same moment (one thread each, released together); their results in order."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(i, call):
        barrier.wait()
        try:
            results[i] = call()
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            results[i] = error

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    return results


def in_process(call):
    """``call`` for a thread of this process (a Celery task's code), on its own database connection."""
    def run():
        try:
            return call()
        finally:
            connection.close()
    return run


def waits_at_most(seconds, call):
    """Run ``call`` in a transaction on another connection (a thread), giving up on any lock after ``seconds``:
    its ``OperationalError`` (a lock timeout: it waited for a lock someone holds) or None."""
    from django.db import OperationalError, transaction

    outcome = []

    def run():
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL lock_timeout = '{seconds}s'")
                call()
            outcome.append(None)
        except OperationalError as error:
            outcome.append(error)

    thread = threading.Thread(target=in_process(run))
    thread.start()
    thread.join(60)
    return outcome[0]
