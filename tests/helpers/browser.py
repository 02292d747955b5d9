"""A real browser for end-to-end tests: the system Chromium driven by Playwright against ``live_server``.

``browser_page`` yields a :class:`BrowserSession`: a Playwright page (1280x800, ``base_url`` set to the
live server) plus everything the page did that a test may want to refuse afterwards: console errors,
uncaught exceptions, failed requests, responses >= 400 and every URL requested (the portal runs
air-gapped, so a request to any other host is a bug: a CDN font, a tracker, an update check).

Never downloads a browser: it uses ``/usr/bin/chromium`` (or ``$PORTAL_CHROMIUM``) and fails loudly
when it is missing rather than skipping, so a machine without it cannot pass the suite by accident.
"""

import os
import shutil
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from tests.helpers.paths import ROOT

CHROMIUM = os.environ.get("PORTAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 800}
ARTIFACTS = ROOT / "test-artifacts"
# ``DOCS_SCREENSHOTS=1`` also writes the screenshots a journey marks with ``docs=True`` to the committed
# README tour: viewport only (not full page) so each PNG stays small and shows what a 1280x800 screen shows.
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
TIMEOUT_MS = 10_000


@dataclass
class BrowserSession:
    page: object
    base_url: str
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    failed_requests: list = field(default_factory=list)
    bad_responses: list = field(default_factory=list)
    requests: list = field(default_factory=list)

    def screenshot(self, name, docs=False):
        """Save a full-page PNG under test-artifacts/; with ``docs=True`` and ``DOCS_SCREENSHOTS=1`` in the
        environment, also a viewport-sized one as ``docs/screenshots/<name>.png`` for the README."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        if docs and os.environ.get("DOCS_SCREENSHOTS") == "1":
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(DOCS_SCREENSHOTS / f"{name}.png"), full_page=False)
        return path

    def foreign_requests(self):
        """Requested URLs that do not go to the live server (``data:``/``blob:``/``about:`` are local)."""
        server = urlsplit(self.base_url).netloc
        return [url for url in self.requests
                if urlsplit(url).scheme not in ("data", "blob", "about") and urlsplit(url).netloc != server]

    def assert_clean(self):
        """No JS errors, no failed or erroring requests, nothing fetched from another host."""
        assert self.console_errors == [], f"console errors: {self.console_errors}"
        assert self.page_errors == [], f"uncaught exceptions: {self.page_errors}"
        assert self.failed_requests == [], f"failed requests: {self.failed_requests}"
        assert self.bad_responses == [], f"responses >= 400: {self.bad_responses}"
        assert self.foreign_requests() == [], f"requests to other hosts: {self.foreign_requests()}"


def _chromium_or_fail():
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError as error:  # the test extra installs it
        pytest.fail(f"Browser tests need Playwright (pip install -r requirements-test.lock): {error}", pytrace=False)
    executable = shutil.which(CHROMIUM)  # an absolute path or a name on $PATH
    if executable is None:
        pytest.fail(
            f"Browser tests need Chromium at {CHROMIUM} (Debian: apt-get install chromium; or set PORTAL_CHROMIUM). "
            "Do not run `playwright install`: the tests use the system browser and never download one.",
            pytrace=False,
        )
    return executable


def _record(page, session):
    def console(message):
        if message.type == "error":
            where = message.location
            session.console_errors.append(f"{message.text} ({where.get('url')}:{where.get('lineNumber')})")

    def response(response):
        if response.status >= 400:
            session.bad_responses.append(f"{response.status} {response.request.method} {response.url}")

    page.on("console", console)
    page.on("pageerror", lambda error: session.page_errors.append(str(error)))
    page.on("request", lambda request: session.requests.append(request.url))
    # A request the browser cancels itself (net::ERR_ABORTED: the page moved on before the favicon came) is no
    # failure of the portal; any other failure is.
    page.on("requestfailed", lambda request: None if "ERR_ABORTED" in (request.failure or "") else
            session.failed_requests.append(f"{request.method} {request.url}: {request.failure}"))
    page.on("response", response)


@pytest.fixture
def browser_page(live_server, monkeypatch):
    executable = _chromium_or_fail()
    from django.db import connections
    from playwright.sync_api import expect, sync_playwright

    # Playwright's sync API runs an asyncio loop in this thread, which makes Django refuse ORM calls
    # from the test ("SynchronousOnlyOperation"); the test's own ORM use is plain synchronous code.
    # Scoped to the test by monkeypatch: Django reads the variable at each call.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT, base_url=live_server.url)
            context.set_default_timeout(TIMEOUT_MS)
            expect.set_options(timeout=TIMEOUT_MS)
            page = context.new_page()
            session = BrowserSession(page=page, base_url=live_server.url)
            _record(page, session)
            yield session
        finally:
            browser.close()
            # Inside ``sync_playwright()`` Django's connection handler resolves to another context, so
            # the test's ORM calls used a second connection that nothing else would close (it would be
            # left open and block dropping the test database at the end of the run).
            connections.close_all()
