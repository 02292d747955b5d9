"""Fault: PostgreSQL stops and starts again under a running portal.

A real portal process (gunicorn, the production server) runs against a PostgreSQL server of its own (the suite's
shared server is never stopped). PostgreSQL is stopped (``pg_ctl stop -m fast``, as a restart or failover does)
while the portal keeps running; every kind of request then fails quickly and cleanly with a 503 "try again"
(a page, or JSON for the API), never a traceback nor a hang; PostgreSQL is started again on the same port and
the very same portal process serves again. A CSV import cut by the stop halfway through leaves no row behind.

An outage is logged once, as a WARNING "database unreachable" (not an "Internal Server Error" traceback for every
503), and its end as an INFO "database reachable again" (issue 33).
"""

import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
import requests
from django.db import connection
from django.test import Client

from portal.models import APIToken
from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.paths import ROOT
from tests.helpers.pgserver import find_bindir, free_port, throwaway_postgres
from tests.helpers.readiness import wait_until, wait_until_answering

DATABASE = "portal_faults"
PASSWORD = "pw-faults-manager"
COLUMNS = "name,location,power_capacity_kw,cooling_capacity_kw"
FAIL_FAST_S = 8  # a request while the database is down answers within this (no hang)


class Postgres:
    """The throwaway server, with the stop and start a restart is made of."""

    def __init__(self, host, port, user):
        self.host, self.port, self.user = host, port, user
        with self.connect("postgres", autocommit=True) as conn:
            self.data = Path(conn.execute("SHOW data_directory").fetchone()[0])
            conn.execute(f"CREATE DATABASE {DATABASE}")
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def connect(self, dbname=DATABASE, **kwargs):
        return psycopg.connect(host=self.host, port=self.port, user=self.user, dbname=dbname, **kwargs)

    @property
    def url(self):
        return f"postgres://{self.user}@{self.host}:{self.port}/{DATABASE}"

    def pg_ctl(self, *args):
        command = [*self.as_postgres, str(find_bindir() / "pg_ctl"), "-D", str(self.data), *args]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)

    def stop(self):
        self.pg_ctl("-m", "fast", "-w", "stop")

    def start(self):
        folder = self.data.parent
        self.pg_ctl("-o", f"-p {self.port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off",
                    "-l", str(folder / "server.log"), "-w", "start")


def manage(env, *args):
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def worker_pids(master):
    """The pids of gunicorn's workers (children of the master process)."""
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            pids.add(int(stat.parent.name))
    return pids


class Portal:
    def __init__(self, base, process, token, log):
        self.base, self.process, self.token, self.log = base, process, token, log
        self.session = requests.Session()

    def url(self, path):
        return self.base + path

    def login(self):
        page = self.session.get(self.url("/accounts/login/"), timeout=30)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        done = self.session.post(self.url("/accounts/login/"), timeout=30, allow_redirects=False,
                                 data={"username": "faults", "password": PASSWORD, "csrfmiddlewaretoken": csrf})
        assert done.status_code == 302, done.text[:500]

    def page(self, path, **kwargs):
        return self.session.get(self.url(path), timeout=30, **kwargs)

    def api(self, method, path, **kwargs):
        return requests.request(method, self.url(path), headers={"Authorization": f"Token {self.token}"},
                                timeout=30, **kwargs)

    def csrf(self):
        return self.session.cookies["csrftoken"]

    def import_sites(self, text):
        return self.session.post(self.url("/inventory/sites/import/"), timeout=60, allow_redirects=False,
                                 data={"csv_text": text, "confirm": "1", "csrfmiddlewaretoken": self.csrf()},
                                 headers={"Referer": self.url("/inventory/sites/import/")})


@pytest.fixture(scope="module")
def postgres():
    with throwaway_postgres() as server:
        yield Postgres(*server)


@pytest.fixture(scope="module")
def portal(postgres, tmp_path_factory):
    var = tmp_path_factory.mktemp("portal-var")
    # DEBUG=1 on purpose: an unhandled database error would show Django's traceback page, the worst case.
    env = {**os.environ, "DATABASE_URL": postgres.url, "PORTAL_VAR_DIR": str(var), "DEBUG": "1",
           "CELERY_BROKER_URL": "filesystem://", "LOG_LEVEL": "WARNING", "DATABASE_CONNECT_TIMEOUT": "3"}
    manage(env, "migrate", "--noinput")
    token = manage(env, "shell", "-c", (
        "from django.contrib.auth.models import Group, User; from portal.models import APIToken; "
        f"u = User.objects.create_user('faults', password='{PASSWORD}'); "
        "u.groups.add(Group.objects.get(name='manager')); print(APIToken.issue(u, 'faults')[1])"
    )).strip().splitlines()[-1]
    with gunicorn(env, var) as (base, process):
        yield Portal(base, process, token, var / "gunicorn.log")


@contextmanager
def gunicorn(env, var):
    """The portal under gunicorn, as in production; yields its base URL and the master process."""
    port = free_port()
    log = open(var / "gunicorn.log", "w")  # noqa: SIM115 (closed below, after the process)
    # Several threads, each with its own persistent connection (CONN_MAX_AGE): every one must recover.
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "portal.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--threads", "4", "--timeout", "120"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(base + "/accounts/login/", process, log=(var / "gunicorn.log").read_text)
        yield base, process
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def site(name):
    return {"name": name, "location": "Zurich", "power_capacity_kw": 100, "cooling_capacity_kw": 100}


def timed(call):
    began = time.monotonic()
    response = call()
    return response, time.monotonic() - began


def assert_clean_503(response, seconds, json_body=False):
    assert response.status_code == 503, (response.status_code, response.text[:2000])
    assert seconds < FAIL_FAST_S
    assert response.headers["Retry-After"] == "30"
    assert "Traceback" not in response.text and "OperationalError" not in response.text
    if json_body:
        assert response.json() == {"detail": "The database is not reachable at the moment. Try again in a minute."}
    else:
        assert "Database unavailable" in response.text and "Try again in a minute" in response.text


def test_requests_fail_cleanly_while_postgres_is_down_and_the_same_process_recovers(postgres, portal):
    portal.login()
    assert portal.page("/inventory/sites/").status_code == 200
    assert portal.api("GET", "/api/inventory/sites/").status_code == 200
    workers = worker_pids(portal.process.pid)
    assert len(workers) == 1
    logged_before = len(portal.log.read_text())

    postgres.stop()
    try:
        # Pages (the session is read from the database in the login middleware: the first thing that fails).
        for path in ("/", "/inventory/sites/", "/inventory/nodes/"):
            assert_clean_503(*timed(lambda path=path: portal.page(path)))
        # The API, reads and writes, with a token.
        assert_clean_503(*timed(lambda: portal.api("GET", "/api/inventory/sites/")), json_body=True)
        created = timed(lambda: portal.api("POST", "/api/inventory/sites/", json=site("while-down")))
        assert_clean_503(*created, json_body=True)
        # A form post.
        assert_clean_503(*timed(lambda: portal.import_sites(f"{COLUMNS}\nwhile-down,Nowhere,100,100\n")))
        # The login page needs no database for a visitor without a session: the portal itself is up.
        assert requests.get(portal.url("/accounts/login/"), timeout=30).status_code == 200
    finally:
        postgres.start()

    # The very same process: no restart of gunicorn or its worker was needed.
    assert portal.process.poll() is None and worker_pids(portal.process.pid) == workers
    # More requests than threads, so every thread's (dead) persistent connection is replaced, none handed out.
    for _ in range(12):
        assert portal.page("/inventory/sites/").status_code == 200
        assert portal.api("GET", "/api/inventory/sites/").status_code == 200
    created = portal.api("POST", "/api/inventory/sites/", json=site("after-restart"))
    assert created.status_code == 201, created.text
    with postgres.connect() as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM inventory_site")}
    assert names == {"after-restart"}  # nothing from the requests that failed
    # Six 503s from one worker process: one warning, no error and no traceback (LOG_LEVEL=WARNING: no INFO).
    logged = portal.log.read_text()[logged_before:]
    assert logged.count("database unreachable") == 1, logged
    assert "Internal Server Error" not in logged and "Traceback" not in logged and "ERROR" not in logged, logged


@pytest.mark.django_db(transaction=True)
def test_an_outage_is_logged_once_as_a_warning_and_its_end_as_info(caplog):
    """In this process: the database's port is pointed at one where nothing listens (connection refused), then
    back. A page (the session read by the login check, outside any view) and an API call (token authentication,
    inside the view) during the outage: one WARNING, no ERROR; the first request after it: one INFO."""
    user = make_user("outage", MANAGER)
    _, token = APIToken.issue(user, "outage")
    browser, api = Client(raise_request_exception=False), Client(raise_request_exception=False)
    browser.force_login(user)
    assert browser.get("/inventory/sites/").status_code == 200
    caplog.set_level(logging.INFO)
    port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = free_port()
    try:
        answers = [browser.get("/inventory/sites/").status_code,
                   api.get("/api/inventory/sites/", HTTP_AUTHORIZATION=f"Token {token}").status_code,
                   browser.get("/").status_code]
    finally:
        connection.close()
        connection.settings_dict["PORT"] = port
    assert answers == [503, 503, 503]
    records = [(r.levelname, r.name, r.getMessage()) for r in caplog.records]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], records
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].getMessage().startswith("database unreachable"), records
    caplog.clear()
    assert api.get("/api/inventory/sites/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200
    assert browser.get("/inventory/sites/").status_code == 200
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "portal.middleware"]
    assert records == [("INFO", "database reachable again")]


def last_id(postgres):
    with postgres.connect() as conn:
        return conn.execute("SELECT last_value FROM inventory_site_id_seq").fetchone()[0]


def test_an_import_cut_by_the_stop_leaves_no_rows(postgres, portal):
    """Rows 1..200 are written, then row 201 (an update of an existing site) waits on a row lock this test
    holds; PostgreSQL stops while the import's transaction is open. After the restart none of the 200 rows
    exists; the same import sent again writes all of them."""
    portal.login()
    assert portal.import_sites(f"{COLUMNS}\nlast-row,Lyon,100,100\n").status_code == 302
    text = f"{COLUMNS}\n" + "".join(f"cut-{i:03},Zurich,100,100\n" for i in range(200)) + "last-row,Geneva,100,100\n"

    first_id = last_id(postgres)
    answers = []
    blocker = postgres.connect()  # its lock is held until PostgreSQL stops: the stop ends its session
    blocker.execute("SELECT 1 FROM inventory_site WHERE name = 'last-row' FOR UPDATE")
    importing = threading.Thread(target=lambda: answers.append((portal.import_sites(text), time.monotonic())))
    importing.start()

    def import_waits_on_the_lock():
        with postgres.connect(autocommit=True) as conn:
            return conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND state = 'active' "
                "AND query LIKE 'UPDATE \"inventory_site\"%'").fetchone()

    wait_until(import_waits_on_the_lock)
    # The 200 rows are in the open transaction: invisible to others, but ids (sequences are not
    # transactional) were drawn for every one of them.
    assert last_id(postgres) - first_id >= 200
    postgres.stop()
    stopped = time.monotonic()
    blocker.close()
    importing.join(timeout=FAIL_FAST_S + 30)
    postgres.start()

    (response, answered), = answers
    assert_clean_503(response, answered - stopped)
    with postgres.connect() as conn:
        assert conn.execute("SELECT count(*) FROM inventory_site WHERE name LIKE 'cut-%'").fetchone()[0] == 0
        assert conn.execute("SELECT location FROM inventory_site WHERE name = 'last-row'").fetchone()[0] == "Lyon"
        history = conn.execute("SELECT count(*) FROM inventory_historicalsite WHERE name LIKE 'cut-%'")
        assert history.fetchone()[0] == 0

    assert portal.import_sites(text).status_code == 302
    with postgres.connect() as conn:
        assert conn.execute("SELECT count(*) FROM inventory_site WHERE name LIKE 'cut-%'").fetchone()[0] == 200
        assert conn.execute("SELECT location FROM inventory_site WHERE name = 'last-row'").fetchone()[0] == "Geneva"


def test_a_database_host_that_does_not_answer_gives_a_503_within_the_connect_timeout(tmp_path):
    """A host that accepts the connection and never answers (hung, or a half-open failover): without a connect
    timeout each request would wait for the kernel's TCP timeout (minutes); with DATABASE_CONNECT_TIMEOUT=3 the
    request gets the 503 within seconds."""
    listener = socket.create_server(("127.0.0.1", 0))
    held = []
    threading.Thread(target=lambda: held.extend(listener.accept() for _ in range(100)), daemon=True).start()
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:{listener.getsockname()[1]}/portal",
           "PORTAL_VAR_DIR": str(tmp_path), "DEBUG": "1", "LOG_LEVEL": "WARNING", "DATABASE_CONNECT_TIMEOUT": "3"}
    try:
        with gunicorn(env, tmp_path) as (base, _):
            answer, seconds = timed(lambda: requests.get(base + "/api/inventory/sites/", timeout=60,
                                                         headers={"Authorization": "Token not-checked-yet"}))
            assert_clean_503(answer, seconds, json_body=True)
            assert seconds >= 2  # it did wait for the server, up to the connect timeout
    finally:
        listener.close()


def test_the_celery_worker_recovers_without_a_restart_too(postgres, portal, tmp_path):
    """A Celery worker (the other long-running process of the portal) runs a task while PostgreSQL is down (the
    task fails and is logged), then runs the next one once PostgreSQL is back, in the same process."""
    from portal.celery import app

    broker = tmp_path / "broker"
    for folder in ("queue", "control"):
        (broker / folder).mkdir(parents=True)
    options = {"data_folder_in": str(broker / "queue"), "data_folder_out": str(broker / "queue"),
               "control_folder": str(broker / "control"), "store_processed": False}
    env = {**os.environ, "DATABASE_URL": postgres.url, "PORTAL_VAR_DIR": str(tmp_path), "DEBUG": "1",
           "CELERY_BROKER_URL": "filesystem://", "DATABASE_CONNECT_TIMEOUT": "3"}

    def heartbeat():
        with app.connection_for_write("filesystem://", transport_options=options) as conn:
            app.send_task("portal.tasks.record_heartbeat", connection=conn)

    def last_seen():
        with postgres.connect() as conn:
            return conn.execute("SELECT max(last_seen) FROM portal_workerheartbeat").fetchone()[0]

    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--loglevel=WARNING",
             "--without-mingle", "--without-gossip", "--hostname=faults-worker@%h"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
        try:
            heartbeat()
            first = wait_until(last_seen, seconds=60)
            postgres.stop()
            try:
                heartbeat()
                wait_until(lambda: "OperationalError" in log.read_text(), seconds=60)  # ran, and failed
                assert worker.poll() is None
            finally:
                postgres.start()
            heartbeat()
            wait_until(lambda: last_seen() > first, seconds=60)
            assert worker.poll() is None  # the same worker process
        finally:
            worker.terminate()
            worker.wait(timeout=30)
