"""Locust users for the loopback load test (``bench/loadtest.py`` starts everything and runs this file).

Three kinds of users browse the portal as people and integrations do; every answer that is not 2xx or 3xx,
and every page that lands on the login form after logging in, counts as a failure:

- ``Viewer`` (most of the traffic): logs in with the session form and reads dashboards, lists with filters
  and sorting, node pages, contracts, plans and the support queue;
- ``Manager``: the same pages, plus the detail pages a manager opens while planning and working tickets;
- ``ApiClient``: a script with an API token reading the API's lists and details (inventory, telemetry,
  planning, support).

What to request comes from a JSON file named by ``LOADTEST_DATA`` (object ids, filter values, API token
keys), which ``loadtest.py`` writes after seeding the demo fleet. The portal runs with production settings
behind no proxy: each request carries ``X-Forwarded-Proto: https`` as the TLS-terminating proxy would
(the portal trusts it with ``SECURE_PROXY_SSL_HEADER=1``), so the portal's secure cookies, HSTS and HTTPS
redirect stay on, exactly as in production.
"""

import json
import os
import random
import re
import time
from urllib.parse import urlsplit

import gevent
from locust import HttpUser, between, events, task

DATA_FILE = os.environ.get("LOADTEST_DATA", "")
if not DATA_FILE:
    raise RuntimeError("Set LOADTEST_DATA to the JSON file written by bench/loadtest.py (ids, tokens, filters).")
with open(DATA_FILE) as handle:
    DATA = json.load(handle)

# The warm-up, not counted: until every user has logged in (PBKDF2 costs about a CPU-second per log-in, which
# a real user pays once a day, not every minute) and gunicorn's workers have loaded their templates and URLs,
# at most LOADTEST_WARMUP seconds. Then LOADTEST_DURATION seconds are measured and the run stops. What
# happened in the warm-up goes to LOADTEST_WARMUP_REPORT (JSON), so its failures are not lost.
WARMUP = float(os.environ.get("LOADTEST_WARMUP", "0"))
DURATION = float(os.environ.get("LOADTEST_DURATION", "0"))
WARMUP_REPORT = os.environ.get("LOADTEST_WARMUP_REPORT", "")
SETTLE_SECONDS = 3  # after the last log-in: let the queue it left behind drain
started_users = 0  # users whose on_start has finished (logged in, or failed to)


@events.test_start.add_listener
def warm_up_then_measure(environment, **kwargs):
    if WARMUP > 0:
        gevent.spawn(watch_warmup, environment)


def watch_warmup(environment):
    runner = environment.runner
    deadline = time.monotonic() + WARMUP
    while time.monotonic() < deadline and started_users < max(runner.target_user_count or 0, 1):
        gevent.sleep(0.2)
    gevent.sleep(min(SETTLE_SECONDS, max(0, deadline - time.monotonic())))
    end_warmup(environment.stats, time.monotonic() - (deadline - WARMUP))
    if DURATION > 0:
        gevent.spawn_later(DURATION, runner.quit)


def end_warmup(stats, seconds):
    if WARMUP_REPORT:
        login = stats.get("login", "POST")
        summary = {
            "seconds": seconds, "users_started": started_users,
            "requests": stats.total.num_requests, "failures": stats.total.num_failures,
            "errors": [{"method": e.method, "name": e.name, "error": str(e.error), "occurrences": e.occurrences}
                       for e in stats.errors.values()],
            "logins": login.num_requests, "login_p50": login.get_response_time_percentile(0.5),
        }
        with open(WARMUP_REPORT, "w") as handle:
            json.dump(summary, handle)
    stats.reset_all()


CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
LOGIN_PATH = "/accounts/login/"
RANGES = ["24h", "7d", "30d", "1y"]
NODE_SORTS = ["hostname", "-hostname", "state", "site", "-warranty_end", "gpu_count", "partition"]
GPU_SORTS = ["gpu", "-gpu", "state", "serial", "gpu_model"]
TICKET_QUEUES = ["", "?queue=unassigned", "?queue=breaching", "?open=true", "?priority=P1&priority=P2"]


def pick(key):
    return random.choice(DATA[key])


def needs(key):
    """Drops the task (put above its ``@task``) where the fleet has none of ``key``: the bench fleet of
    ``loadtest.py --fleet bench`` has no contracts, plans or tickets. Dropped, not skipped: the other tasks keep
    their shares."""
    return (lambda function: function) if DATA.get(key) else (lambda function: None)


class PortalUser(HttpUser):
    """Shared by all users: the proxy's header, and a request helper that checks what came back."""

    abstract = True
    wait_time = between(1, 4)  # a person reads a page for a few seconds before the next click

    def on_start(self):
        # As the TLS proxy would: the portal then treats the request as HTTPS (no redirect, secure cookies).
        self.client.headers["X-Forwarded-Proto"] = "https"

    def on_ready(self):
        global started_users
        started_users += 1

    def keep_cookies(self):
        """The portal's cookies are Secure (production settings); the client talks plain HTTP to the loopback,
        standing in for the browser's HTTPS connection to the proxy, so it has to send them back over http.
        (requests builds a jar with the default policy for every request, so a cookie policy would not do.)"""
        for cookie in self.client.cookies:
            cookie.secure = False

    def get(self, url, name=None, headers=None):
        """GET ``url``; a failure unless 2xx/3xx (redirects followed) and, when logged in, not the login page."""
        with self.client.get(url, name=name or url, headers=headers, catch_response=True) as response:
            if not 200 <= response.status_code < 400:
                response.failure(f"HTTP {response.status_code}")
            elif urlsplit(response.url).path == LOGIN_PATH and urlsplit(url).path != LOGIN_PATH:
                response.failure("sent to the login page (session lost)")
            else:
                response.success()
        self.keep_cookies()
        return response


class BrowserUser(PortalUser):
    """A person with a browser: logs in through the form (CSRF token, session cookie) and reads pages."""

    abstract = True
    username = password = ""

    def on_start(self):
        super().on_start()
        try:
            self.log_in()
        finally:
            self.on_ready()

    def log_in(self):
        page = self.get(LOGIN_PATH, name="login form")
        match = CSRF_INPUT.search(page.text or "")
        if match is None:
            raise RuntimeError(f"No CSRF token on the login page (HTTP {page.status_code}).")
        origin = f"https://{urlsplit(self.host).netloc}"  # what the browser sends through the proxy
        with self.client.post(
            LOGIN_PATH, name="login", allow_redirects=False,
            data={"username": self.username, "password": self.password, "csrfmiddlewaretoken": match.group(1)},
            headers={"Origin": origin, "Referer": origin + LOGIN_PATH}, catch_response=True,
        ) as response:
            # A good log-in redirects (to the dashboard); a refused one shows the form again (200, or 429 locked).
            location = response.headers.get("Location", "")
            if response.status_code != 302 or urlsplit(location).path == LOGIN_PATH:
                response.failure(f"log-in as {self.username} refused (HTTP {response.status_code})")
                return
        # Not followed by requests: the new session cookie must be made sendable over http first.
        self.keep_cookies()
        self.get(location, name="/ (dashboard)")

    def htmx(self, url, name):
        """The table fragment a list page fetches when a filter changes (htmx ``hx-get``)."""
        return self.get(url, name=name, headers={"HX-Request": "true"})

    @task(6)
    def home(self):
        self.get("/", name="/ (dashboard)")

    @task(4)
    def utilization(self):
        query = f"?range={random.choice(RANGES)}"
        if random.random() < 0.3:
            query += f"&site={pick('sites')}"
        elif random.random() < 0.2:
            query += f"&team={pick('teams')}&heatmap=gpu"
        self.get(f"/inventory/utilization/{query}", name="/inventory/utilization/?range=[r]")

    @task(5)
    def node_list(self):
        choice = random.random()
        if choice < 0.3:
            self.get("/inventory/nodes/", name="/inventory/nodes/")
        elif choice < 0.6:
            self.get(f"/inventory/nodes/?sort={random.choice(NODE_SORTS)}", name="/inventory/nodes/?sort=[col]")
        else:
            query = random.choice([f"site={pick('sites')}", "state=in_service", "state=degraded&state=in_repair",
                                   f"partition={pick('partitions')}", f"q={pick('hostname_prefixes')}"])
            self.htmx(f"/inventory/nodes/?{query}&sort={random.choice(NODE_SORTS)}",
                      name="/inventory/nodes/?[filter] (htmx)")

    @task(3)
    def gpu_list(self):
        if random.random() < 0.5:
            self.get(f"/inventory/gpus/?sort={random.choice(GPU_SORTS)}", name="/inventory/gpus/?sort=[col]")
        else:
            query = random.choice([f"site={pick('sites')}", f"gpu_model={pick('gpu_models')}", "state=in_service",
                                   f"page={random.randint(1, DATA['gpu_pages'])}"])
            self.htmx(f"/inventory/gpus/?{query}", name="/inventory/gpus/?[filter] (htmx)")

    @task(4)
    def node_page(self):
        self.get(f"/inventory/nodes/{pick('nodes')}/", name="/inventory/nodes/[id]/")

    @task(1)
    def gpu_page(self):
        self.get(f"/inventory/gpus/{pick('gpus')}/", name="/inventory/gpus/[id]/")

    @task(1)
    def search(self):
        self.get(f"/search/?q={pick('hostname_prefixes')}", name="/search/?q=[term]")

    @task(1)
    def contracts(self):
        self.get("/planning/contracts/", name="/planning/contracts/")

    @task(1)
    def plans(self):
        self.get("/planning/capacity-plans/", name="/planning/capacity-plans/")

    @task(2)
    def support_queue(self):
        self.get(f"/support/tickets/{random.choice(TICKET_QUEUES)}", name="/support/tickets/?[queue]")


class Viewer(BrowserUser):
    weight = 5
    username, password = "viewer", "demo-viewer"


class Manager(BrowserUser):
    weight = 3
    username, password = "manager", "demo-manager"

    @needs("contracts")
    @task(2)
    def contract_page(self):
        self.get(f"/planning/contracts/{pick('contracts')}/", name="/planning/contracts/[id]/")

    @needs("plans")
    @task(1)
    def plan_page(self):
        self.get(f"/planning/capacity-plans/{pick('plans')}/", name="/planning/capacity-plans/[id]/")

    @needs("tickets")
    @task(2)
    def ticket_page(self):
        self.get(f"/support/tickets/{pick('tickets')}/", name="/support/tickets/[id]/")

    @task(1)
    def uncovered(self):
        self.get("/planning/uncovered/", name="/planning/uncovered/")


class ApiClient(PortalUser):
    """An integration (inventory sync, a reporting script) with an API token: no session, no CSRF."""

    weight = 2
    wait_time = between(0.5, 2)  # scripts click faster than people

    def on_start(self):
        super().on_start()
        self.client.headers["Authorization"] = f"Token {pick('tokens')}"
        self.client.headers["Accept"] = "application/json"
        self.on_ready()

    @task(4)
    def nodes(self):
        query = random.choice(["", "?state=in_service", f"?site={pick('sites')}", "?ordering=-hostname",
                               f"?partition={pick('partitions')}&page_size=100"])
        self.get(f"/api/inventory/nodes/{query}", name="/api/inventory/nodes/?[filter]")

    @task(3)
    def node(self):
        self.get(f"/api/inventory/nodes/{pick('nodes')}/", name="/api/inventory/nodes/[id]/")

    @task(3)
    def gpus(self):
        query = random.choice(["", f"?gpu_model={pick('gpu_models')}", "?state=in_service&page_size=200",
                               f"?node={pick('nodes')}"])
        self.get(f"/api/inventory/gpus/{query}", name="/api/inventory/gpus/?[filter]")

    @task(2)
    def gpu(self):
        self.get(f"/api/inventory/gpus/{pick('gpus')}/", name="/api/inventory/gpus/[id]/")

    @task(3)
    def utilization(self):
        group_by = random.choice(["site", "partition", "gpu_model", "team", "node"])
        self.get(f"/api/inventory/utilization/?group_by={group_by}&range={random.choice(RANGES)}",
                 name="/api/inventory/utilization/?group_by=[g]&range=[r]")

    @task(1)
    def allocations(self):
        self.get(f"/api/inventory/allocations/?group_by={random.choice(['partition', 'account'])}&range=30d",
                 name="/api/inventory/allocations/?group_by=[g]")

    @task(1)
    def slurm_jobs(self):
        self.get("/api/inventory/slurm-jobs/?ordering=-submit_time", name="/api/inventory/slurm-jobs/")

    @task(1)
    def telemetry_sources(self):
        self.get("/api/inventory/telemetry-sources/", name="/api/inventory/telemetry-sources/")

    @task(1)
    def contracts(self):
        self.get("/api/planning/contracts/", name="/api/planning/contracts/")

    @needs("contracts")
    @task(1)
    def contract(self):
        self.get(f"/api/planning/contracts/{pick('contracts')}/", name="/api/planning/contracts/[id]/")

    @task(1)
    def plans(self):
        self.get("/api/planning/plans/", name="/api/planning/plans/")

    @needs("plans")
    @task(1)
    def plan(self):
        self.get(f"/api/planning/plans/{pick('plans')}/", name="/api/planning/plans/[id]/")

    @task(2)
    def tickets(self):
        query = random.choice(["", "?open=true", "?priority=P1", "?ordering=-created"])
        self.get(f"/api/support/tickets/{query}", name="/api/support/tickets/?[filter]")

    @needs("tickets")
    @task(1)
    def ticket(self):
        self.get(f"/api/support/tickets/{pick('tickets')}/", name="/api/support/tickets/[id]/")
