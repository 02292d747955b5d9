"""A real OpenID provider for the single sign-on tests: the OpenID-certified ``oidc-provider`` package (npm, version
9) on the machine's Node.js, from ``tests/oidc/`` (``make install-test`` runs ``npm ci`` there; nothing is
downloaded when the tests run).

It listens on a free loopback port with one client, ``portal``, registered for the portal's callback and logout
redirect at the given base URLs (the live server's, and ``http://testserver`` for Django's test client). Its users
and their groups are a JSON file the provider reads again whenever it changes (``Provider.set_users``); the same
file can set its clock off (``clock_offset``: its ID tokens arrive expired) or have its token endpoint's ID token
tampered with (``tamper``). Its login page takes any password. Stopped by its PID at the end. Tests skip when Node.js
or the installed package is missing (``missing``)."""

import json
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import ROOT
from tests.helpers.pgserver import free_port, wait_for_port

FOLDER = ROOT / "tests" / "oidc"
CLIENT_ID, CLIENT_SECRET = "portal", "portal-test-secret"


def missing():
    """What this needs that is not installed, in words; empty when all is."""
    if not shutil.which("node"):
        return ["Node.js 20 or later (apt-get install -y nodejs npm)"]
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if int(version.lstrip("v").split(".")[0] or 0) < 20:
        return [f"Node.js 20 or later (oidc-provider 9 and its jose 6; this machine has {version})"]
    if not (FOLDER / "node_modules" / "oidc-provider" / "package.json").exists():
        return ["the npm package oidc-provider in tests/oidc/node_modules (make install-test runs npm ci there)"]
    return []


@dataclass
class Provider:
    issuer: str
    state_path: Path
    state: dict

    def env(self, **extra):
        """The portal's environment variables for this provider (docs/authentication.md)."""
        return {"OIDC_ISSUER": self.issuer, "OIDC_CLIENT_ID": CLIENT_ID, "OIDC_CLIENT_SECRET": CLIENT_SECRET,
                "OIDC_PROVIDER_NAME": "Lab ID", "OIDC_SCOPES": "openid email profile groups", **extra}

    def write(self, **changes):
        self.state.update(changes)
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.state))
        os.replace(temporary, self.state_path)  # the provider never reads half a file
        time.sleep(0.02)  # a new modification time, whatever the filesystem's resolution
        os.utime(self.state_path)

    def set_users(self, **users):
        """``set_users(ada=["gpu-admins", "vision-team"], bob=[])``: who may log in, with which groups."""
        self.write(users={name: {"groups": groups, "name": name.title(), "email": f"{name}@lab.example"}
                          for name, groups in users.items()})

    def set_groups(self, user, groups):
        self.write(users={**self.state["users"], user: {**self.state["users"][user], "groups": groups}})


def use_provider(settings, provider, **extra):
    """The portal (pytest-django's ``settings``) set up from the environment variables of docs/authentication.md for
    this provider, as portal/settings.py would: the backend, the ``OIDC`` settings, the logout's form-action."""
    from portal.sso import oidc

    others = [backend for backend in settings.AUTHENTICATION_BACKENDS if backend != oidc.BACKEND]
    settings.AUTHENTICATION_BACKENDS = [others[0], oidc.BACKEND, *others[1:]]
    settings.OIDC = oidc.oidc_settings(provider.env(**extra))["OIDC"]
    directives = settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
        **directives, "form-action": [*directives["form-action"], oidc.origin(provider.issuer)]}}


@contextmanager
def throwaway_provider(*portal_urls):
    folder, port = Path(tempfile.mkdtemp(prefix="cluster-portal-oidc-")), free_port()
    bases = [url.rstrip("/") for url in (*portal_urls, "http://testserver")]
    state = {"clients": [{"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                          "redirect_uris": [f"{base}/sso/oidc/callback/" for base in bases],
                          "post_logout_redirect_uris": [f"{base}/accounts/login/" for base in bases]}],
             "users": {}, "clock_offset": 0, "tamper": False}
    provider = Provider(f"http://127.0.0.1:{port}", folder / "state.json", state)
    provider.write()
    log = folder / "provider.log"
    server = subprocess.Popen(["node", str(FOLDER / "provider.js"), str(provider.state_path), str(port)],
                              cwd=FOLDER, stdout=open(log, "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        wait_for_port(server, port, 30, log.read_text)
        yield provider
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
