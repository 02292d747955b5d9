"""A real forwarding HTTP proxy for tests, Debian's ``tinyproxy``: it resolves the names it is asked for and
connects on its own, as a site's egress proxy does.

It runs in the foreground (``-d``) on a free loopback port, with a minimal configuration in a temporary folder
(only 127.0.0.1 may use it; its log goes to a file there, not to syslog), and is stopped and the folder removed
at the end. ``proxy.requests()`` are the request lines it received (``GET http://host:port/path HTTP/1.1``), read
from its log: what the portal sent through it. Tests skip where tinyproxy is not installed.
"""

import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.pgserver import free_port

READY = "Accepting connections"
REQUEST = re.compile(r"Request \(file descriptor \d+\): (.+)$")


def tinyproxy_binary():
    """The path of ``tinyproxy``, or None when it is not installed (apt-get install -y tinyproxy)."""
    return shutil.which("tinyproxy")


class Proxy:
    def __init__(self, folder, port):
        self.log = folder / "tinyproxy.log"
        self.url = f"http://127.0.0.1:{port}"

    def log_text(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def requests(self):
        """The request lines the proxy has received so far, oldest first."""
        return [match.group(1).strip() for line in self.log_text().splitlines() if (match := REQUEST.search(line))]


@contextmanager
def tinyproxy():
    """Start tinyproxy; yields a ``Proxy``; stops it and removes its folder afterwards."""
    if not tinyproxy_binary():
        pytest.skip("tinyproxy is not installed (apt-get install -y tinyproxy): the proxy tests need a real one")
    folder, port = Path(tempfile.mkdtemp(prefix="cluster-portal-proxy-")), free_port()
    proxy = Proxy(folder, port)
    (folder / "tinyproxy.conf").write_text(
        f"Port {port}\nListen 127.0.0.1\nAllow 127.0.0.1\nTimeout 15\nMaxClients 20\n"
        f'LogFile "{proxy.log}"\nLogLevel Info\nDisableViaHeader Yes\n'
    )
    server = subprocess.Popen([tinyproxy_binary(), "-d", "-c", str(folder / "tinyproxy.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while READY not in proxy.log_text():  # the log says so once it listens; no probe connection to count
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tinyproxy did not start: {proxy.log_text()}")
            time.sleep(0.05)
        yield proxy
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
