"""The statements through a client generated from the OpenAPI schema (``openapi-python-client``, offline, as
``tests/helpers/api_client.py`` generates it) against a live server: a rate card written with its rates, the month
issued, the statements read back and added up against ``allocations/?month=``, and the 400s parsed into the generated
error models."""

from decimal import Decimal

import pytest

from portal.roles import MANAGER
from tests.helpers.accounts import make_user
from tests.helpers.api_client import call, client_of
from tests.helpers.statements import FLEET_OCTOBER, make_fleet


@pytest.fixture
def api(generated, live_server, transactional_db):
    return client_of(generated, live_server.url, make_user("max", MANAGER))


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
