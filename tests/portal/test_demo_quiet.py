"""``make demo`` for real, as a person runs it (issue 37): a fresh database in a throwaway ``VAR_DIR``, free ports,
the seed, then the simulator, the Celery worker with beat and the web server; then Ctrl-C, which a terminal sends as
SIGINT to make's whole process group. The seed prints no raw e-mail: mail goes to files under ``VAR_DIR/mail/``, said
once, and links in it point at the port the demo serves on; every process is gone within 5 s of Ctrl-C, without
"Segmentation fault" (the former recipe's ``trap 'kill 0'`` re-entered itself until the shell crashed)."""

import email
import os
import re
import signal
import subprocess
import time
import urllib.request
from email import policy

import psutil
import pytest

from tests.helpers.paths import ROOT
from tests.helpers.pgserver import free_port

pytestmark = pytest.mark.slow  # a minute or more: migrating an empty database and seeding the demo

START_SECONDS = 420  # migrate, seed and start on a loaded 2-core machine
STOP_SECONDS = 5
SEPARATOR = "-" * 79  # Django's file-based backend writes it after each message
# What the test run sets for itself and a demo must not inherit (its database is the demo's SQLite file), nor the
# flags of a make that runs the tests (make test).
NOT_INHERITED = {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "CELERY_BROKER_URL", "EMAIL_BACKEND", "EMAIL_FILE_PATH",
                 "PORTAL_URL", "PORTAL_VAR_DIR", "LOG_LEVEL", "MEDIA_ROOT", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"}


def answers(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def alive(processes):
    """The command lines of those still running (a zombie has exited: only its parent's wait is missing)."""
    running = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                running.append(" ".join(process.cmdline()))
        except psutil.NoSuchProcess:
            pass
    return running


def mails(folder):
    """Every message the file-based backend wrote (a file per connection, each message followed by SEPARATOR)."""
    found = []
    for path in sorted(folder.iterdir()):
        for chunk in path.read_text().split(f"\n{SEPARATOR}\n"):
            if chunk.strip():
                found.append(email.message_from_string(chunk.lstrip("\n"), policy=policy.default))
    return found


@pytest.fixture
def demo(tmp_path):
    """``make demo`` in a session of its own (the terminal's foreground process group), its output in a file."""
    port, sim_port = free_port(), free_port()
    var = tmp_path / "var"
    log = tmp_path / "make.log"
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    # -o: the virtualenv counts as installed (the test run's own), so nothing is installed while the test runs.
    make = subprocess.Popen(
        ["make", "--no-print-directory", "-o", ".venv/.installed", "demo", f"PORT={port}", f"SIM_PORT={sim_port}",
         f"VAR_DIR={var}"], cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        yield make, port, var, log
    finally:
        if make.poll() is None:
            processes = [psutil.Process(make.pid), *psutil.Process(make.pid).children(recursive=True)]
            os.killpg(make.pid, signal.SIGKILL)
            for process in processes:  # those in groups of their own too
                try:
                    process.kill()
                except psutil.NoSuchProcess:
                    pass
            make.wait()


def test_demo_is_quiet_links_its_port_and_stops_at_ctrl_c(demo):
    make, port, var, log = demo
    portal = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_SECONDS
    while not answers(f"{portal}/accounts/login/"):
        assert make.poll() is None, f"make demo exited with {make.returncode}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"the portal did not answer within {START_SECONDS} s:\n{log.read_text()}"
        time.sleep(1)

    output = log.read_text()
    seed = output[:output.index("Open the portal at")]
    assert "Demo logins" in seed
    assert not re.search(r"^(MIME-Version|Content-Type):", output, re.MULTILINE), seed  # no raw e-mail
    assert output.count("mail is written to") == 1 and f"mail is written to {var}/mail/" in output
    assert f"Open the portal at {portal}/ and" in output

    # The seed's renewal notice (a rental's notice deadline) is a file, its links on the demo's port, and they open.
    messages = mails(var / "mail")
    assert any(message["Subject"].startswith("Contract renewals") for message in messages)
    links = [link for message in messages
             for link in re.findall(r"https?://[^\s<>\"')]+", message.get_body(("plain",)).get_content())]
    assert links and all(link.startswith(f"{portal}/") for link in links), links
    # The page (or the login page it leads to) on the demo's own web server; a few tries: the development server
    # restarts when a source file changes.
    assert any(answers(links[0]) or time.sleep(2) for _ in range(10)), links[0]

    processes = [psutil.Process(make.pid), *psutil.Process(make.pid).children(recursive=True)]
    names = " ".join(alive(processes))
    assert all(part in names for part in ("simulate_telemetry", "celery", "runserver")), names
    time.sleep(5)  # beat's first tasks under way, as when a person looks around before stopping it

    os.killpg(make.pid, signal.SIGINT)  # Ctrl-C
    stopped = time.monotonic()
    while alive(processes) and time.monotonic() - stopped < STOP_SECONDS:
        time.sleep(0.1)
    left = alive(processes)
    assert not left, f"still running {STOP_SECONDS} s after Ctrl-C: {left}"
    assert make.wait(timeout=1) in (0, 130, -signal.SIGINT)
    output = log.read_text()
    assert "Segmentation fault" not in output, output[-3000:]
    assert "Traceback" not in output[output.index("Ctrl-C stops everything"):], output[-3000:]
