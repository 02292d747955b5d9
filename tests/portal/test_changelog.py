"""The change log (/changes/ and /api/changes/) as the demo's admin, a superuser, sees it."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from planning.models import Contract
from tests.factories import make_node
from tests.helpers.accounts import token_client


@pytest.fixture
def superuser(db):
    return User.objects.create_superuser("root", "root@example.org", "pw-root")


def _contract_covering_a_node():
    node = make_node()
    contract = Contract.objects.create(kind="support", vendor="Acme", reference="S-19", start="2026-01-01",
                                       end="2027-01-01")
    contract.nodes.set([node])
    contract.save()
    return contract


def test_superuser_change_log_lists_contract_changes(client, superuser):
    """A superuser may view every model, so the log once asked the contract's many-to-many through tables
    (``Contract_gpus``) for a history they do not have: 500."""
    _contract_covering_a_node()
    client.force_login(superuser)
    page = client.get(reverse("changelog"))
    assert page.status_code == 200
    assert "S-19" in page.content.decode()
    labels = [label for label, _ in page.context["model_choices"]]
    assert "planning.contract" in labels and not any("_" in label.split(".")[1] for label in labels)


def test_superuser_api_changes_lists_contract_changes(superuser):
    _contract_covering_a_node()
    answer = token_client(superuser).get("/api/changes/")
    assert answer.status_code == 200
    assert any(change["model"] == "planning.contract" for change in answer.json())
