"""Steps the browser tests share (with ``tests.helpers.browser``'s ``browser_page``): logging in, checking that a
page at 1280 px does not scroll sideways. A module apart: the fixture module is a pytest plugin, which a test
module's import would load before pytest can rewrite its asserts."""

import re


def log_in(page, user, password, next_url):
    """Log ``user`` in through the login form and wait for the redirect to ``next_url``."""
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", user.username)
    page.fill("#id_password", password)
    with page.expect_navigation(url=re.compile(re.escape(next_url) + "$")):
        page.get_by_role("button", name="Log in").click()


# The page is no wider than the window, and no table inside it scrolls sideways (the ids of those that do).
OVERFLOW_JS = """() => ({
    page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    tables: [...document.querySelectorAll(".table-wrap")].filter(w => w.scrollWidth > w.clientWidth)
        .map(w => (w.closest("section") || w).id || w.className)})"""


def assert_no_horizontal_overflow(page):
    assert page.evaluate(OVERFLOW_JS) == {"page": 0, "tables": []}
