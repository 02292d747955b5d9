"""A throwaway PostgreSQL server for the test run, from Debian's ``postgresql`` package.

``initdb`` and ``postgres`` refuse to run as root, so as root the server runs as the ``postgres``
user (``runuser``). Set ``TEST_DATABASE_URL`` to use a server you already have instead.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


def find_bindir():
    if os.environ.get("PG_BINDIR"):
        return Path(os.environ["PG_BINDIR"])
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    if candidates:
        return Path(candidates[-1])
    pg_config = shutil.which("pg_config")
    if pg_config:
        return Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
    raise RuntimeError(
        "PostgreSQL server binaries not found: install Debian's 'postgresql' package "
        "(apt-get install -y postgresql) or set PG_BINDIR or TEST_DATABASE_URL."
    )


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(server, port, seconds, log):
    """Wait until the daemon ``server`` (a Popen) accepts connections on ``port``; ``RuntimeError`` with its log (a
    function giving the text) if it exits or ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{server.args[0]} did not start: {log()}") from None
            time.sleep(0.05)


@contextmanager
def throwaway_postgres():
    """Start a server in a temporary folder; yields ``(host, port, user)``; removes it afterwards."""
    bindir = find_bindir()
    folder = Path(tempfile.mkdtemp(prefix="cluster-portal-pg-"))
    as_postgres = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()

    def run(*args):
        subprocess.run(as_postgres + [str(a) for a in args], check=True, capture_output=True, text=True)

    try:
        run(bindir / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        # Durability is pointless for a throwaway test server; these make it several times faster.
        options = (
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        run(bindir / "pg_ctl", "-D", data, "-o", options, "-l", folder / "server.log", "-w", "start")
        yield "127.0.0.1", port, "postgres"
    finally:
        subprocess.run(as_postgres + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
