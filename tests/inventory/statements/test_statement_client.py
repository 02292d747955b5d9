"""The statements through a client generated from the OpenAPI schema (``openapi-python-client``, offline, as
``tests/portal/test_api_client.py`` generates it) against a live server: a rate card written with its rates, the month
issued, the statements read back and added up against ``allocations/?month=``, and the 400s parsed into the generated
error models."""

import importlib
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from portal.models import APIToken
from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.statements import FLEET_OCTOBER, make_fleet

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "portal_client"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("generated")
    schema = folder / "schema.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(schema))
    (folder / "config.yaml").write_text("post_hooks: []\n")
    offline = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    result = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(schema), "--output-path", str(folder / PACKAGE), "--meta", "none",
         "--config", str(folder / "config.yaml"), "--fail-on-warning"],
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


@pytest.fixture
def api(generated, live_server, transactional_db):
    _, key = APIToken.issue(make_user("max", MANAGER), "integration")
    return generated().AuthenticatedClient(base_url=live_server.url, token=key, prefix="Token")


def call(generated, name, **kwargs):
    return generated(f"api.inventory.{name}").sync_detailed(**kwargs)


def test_statements_through_the_generated_client(generated, api):
    models = generated("models")
    fleet = make_fleet()
    card = call(generated, "inventory_rate_cards_create", client=api, body=models.RateCardRequest.from_dict({
        "effective_from": "2027-01-01", "note": "next year",
        "rates": [{"price_per_gpu_hour": "2.75"}, {"gpu_model": fleet["h100"].pk, "price_per_gpu_hour": "3.50"}]}))
    assert card.status_code == 201, card.content
    assert sorted(rate.price_per_gpu_hour for rate in card.parsed.rates) == ["2.7500", "3.5000"]

    issued = call(generated, "inventory_statements_issue_create", client=api,
                  body=models.IssueRequest(month="2026-10"))
    assert issued.status_code == 201, issued.content
    assert isinstance(issued.parsed, models.Issued) and issued.parsed.issued
    listed = call(generated, "inventory_statements_list", client=api, month="2026-10")
    statements = listed.parsed.results
    assert {s.team_name: s.total for s in statements} == {"vision": "266.00", "speech": "56.00", "no team": "24.00"}
    allocations = call(generated, "inventory_allocations_retrieve", client=api, month="2026-10")
    fleet_hours = sum(group.gpu_hours for group in allocations.parsed.groups)
    assert float(sum(Decimal(s.gpu_hours) for s in statements)) == pytest.approx(fleet_hours) == FLEET_OCTOBER

    refused = call(generated, "inventory_statements_issue_create", client=api,
                   body=models.IssueRequest(month="2099-01"))
    assert refused.status_code == 400 and isinstance(refused.parsed, models.FieldErrors)
    assert "once it has ended" in refused.parsed["month"][0]
    frozen = call(generated, "inventory_rate_cards_partial_update", client=api, id=fleet["card"].pk,
                  body=models.PatchedRateCardRequest(note="cheaper"))
    assert frozen.status_code == 400 and isinstance(frozen.parsed, models.FieldErrors)
    assert "add a card with a later date" in str(frozen.parsed.to_dict())
