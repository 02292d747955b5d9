"""A client package generated from the OpenAPI schema by ``openapi-python-client``, as an integration would make
one: the schema as ``manage.py spectacular`` writes it (what ``/api/schema/`` serves), the package generated offline
(the schema file is all it reads) into a temporary folder and imported from there. ``tests/conftest.py`` makes it the
module-scoped fixture ``generated``: ``generated()`` is the package, ``generated("models")`` a module of it."""

import contextlib
import importlib
import os
import subprocess
import sys
from pathlib import Path

from django.core.management import call_command

from portal.models import APIToken

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "portal_client"


def write_schema(path):
    call_command("spectacular", "--format", "openapi-json", "--file", str(path))
    return path


@contextlib.contextmanager
def generated_package(folder):
    """Generate the package into ``folder`` and yield the function that imports its modules; forget them after."""
    schema = write_schema(folder / "schema.json")
    config = folder / "config.yaml"
    config.write_text("post_hooks: []\n")  # no ruff run on the generated code: it is imported, not kept
    # A proxy that refuses every connection: generation reads the schema file only, never the network.
    offline = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    result = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(schema), "--output-path", str(folder / PACKAGE), "--meta", "none",
         "--config", str(config), "--fail-on-warning"],
        capture_output=True, text=True, timeout=300, env=offline,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(folder))
    try:
        yield lambda name="": importlib.import_module(f"{PACKAGE}.{name}" if name else PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def client_of(generated, base_url, user):
    """The generated client, authenticated as ``user`` with a new API token."""
    _, key = APIToken.issue(user, "integration")
    return generated().AuthenticatedClient(base_url=base_url, token=key, prefix="Token")


def call(generated, name, **kwargs):
    """``sync_detailed`` of the inventory API's operation ``name`` (``inventory_team_allocations_retrieve``)."""
    return generated(f"api.inventory.{name}").sync_detailed(**kwargs)
