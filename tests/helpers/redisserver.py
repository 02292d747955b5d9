"""A throwaway Redis server for tests that need a real broker, from Debian's ``redis-server`` package.

It listens on a free loopback port, keeps nothing on disk (no RDB snapshots, no append-only file) and is
stopped and its folder removed at the end. Tests skip when the binary is missing (``redis_server_binary``).
"""

import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import redis

from tests.helpers.pgserver import free_port


def redis_server_binary():
    """The path of ``redis-server``, or None when it is not installed (apt-get install -y redis-server)."""
    return shutil.which("redis-server")


@contextmanager
def throwaway_redis():
    """Start a server in a temporary folder; yields its URL (database 0); stops and removes it afterwards."""
    folder, port = Path(tempfile.mkdtemp(prefix="cluster-portal-redis-")), free_port()
    server = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
         "--save", "", "--appendonly", "no", "--logfile", str(folder / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client, deadline = redis.Redis.from_url(url), time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start: {(folder / 'redis.log').read_text()}") from None
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
