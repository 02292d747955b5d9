"""``/api/inventory/statements/`` (read, lines nested, ``issue/``) and ``/api/inventory/rate-cards/`` (managers write,
rates nested): the answers, and 400s with field errors for bad input, never a 500."""

from datetime import date
from decimal import Decimal

import pytest

from inventory.statements.issuing import issue_month
from inventory.statements.models import RateCard, Statement
from portal.roles import MANAGER, VIEWER
from tests.helpers.accounts import make_user, token_client
from tests.helpers.statements import NOW, OCTOBER, make_fleet

pytestmark = pytest.mark.django_db
STATEMENTS, CARDS = "/api/inventory/statements/", "/api/inventory/rate-cards/"


@pytest.fixture
def manager():
    return token_client(make_user("mona", MANAGER))


def test_statements_with_lines_and_filters(manager):
    fleet = make_fleet()
    issue_month(OCTOBER, now=NOW)
    answer = manager.get(STATEMENTS, {"month": "2026-10", "team": "vision"}).json()
    assert answer["count"] == 1
    (vision,) = answer["results"]
    assert (vision["team_name"], vision["total"], vision["credit"], vision["rate_card"]) == (
        "vision", "266.00", "18.00", fleet["card"].pk)
    assert sorted((line["kind"], line["user"], line["amount"]) for line in vision["lines"]) == [
        ("credit", "", "-18.00"), ("usage", "alice", "20.00"), ("usage", "alice", "240.00"), ("usage", "bob", "24.00")]
    assert vision["pdf"].endswith(f"/inventory/statements/{vision['id']}/pdf/")
    assert manager.get(STATEMENTS, {"month": "2026-13"}).status_code == 400
    assert manager.get(STATEMENTS, {"ordering": "-total"}).json()["results"][0]["team_name"] == "vision"


def test_issue_action(manager):
    make_fleet()
    first = manager.post(f"{STATEMENTS}issue/", {"month": "2026-10"}, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["issued"] and first.json()["fleet_gpu_hours"] == pytest.approx(139.0)
    again = manager.post(f"{STATEMENTS}issue/", {"month": "2026-10"}, format="json")
    assert (again.status_code, again.json()["issued"]) == (200, False)
    assert again.json()["statements"] == first.json()["statements"]
    for body, words in (({"month": "2099-01"}, "once it has ended"), ({"month": "1899-01"}, "1900 to 2999"),
                        ({"month": "soon"}, "YYYY-MM"), ({}, "required"), ({"month": "2020-01"}, "No rate card")):
        refused = manager.post(f"{STATEMENTS}issue/", body, format="json")
        assert refused.status_code == 400, (body, refused.content)
        assert words in str(refused.json()["month"]), (body, refused.json())
    viewer = token_client(make_user("vera", VIEWER))
    assert viewer.post(f"{STATEMENTS}issue/", {"month": "2026-09"}, format="json").status_code == 403
    assert Statement.objects.filter(month=date(2026, 9, 1)).count() == 0


def test_rate_cards_are_written_with_their_rates(manager):
    model = make_fleet()["h100"]
    made = manager.post(CARDS, {"effective_from": "2027-01-01", "currency": "eur", "note": "2027", "rates": [
        {"price_per_gpu_hour": "2.10"}, {"gpu_model": model.pk, "partition": "infer", "price_per_gpu_hour": "3"}]},
        format="json")
    assert made.status_code == 201, made.content
    card = RateCard.objects.get(pk=made.json()["id"])
    assert card.currency == "EUR" and sorted(card.rates.values_list("price_per_gpu_hour", flat=True)) == [
        Decimal("2.1"), Decimal("3")]
    changed = manager.patch(f"{CARDS}{card.pk}/", {"rates": [{"price_per_gpu_hour": "2.20"}]}, format="json")
    assert changed.status_code == 200 and [r["price_per_gpu_hour"] for r in changed.json()["rates"]] == ["2.2000"]


@pytest.mark.parametrize("body, field", [
    ({"effective_from": "2027-13-01"}, "effective_from"),
    ({"effective_from": "2026-01-01"}, "effective_from"),  # the fleet's 2026 card has that date
    ({"effective_from": "2027-01-01", "currency": "euro"}, "currency"),
    ({"effective_from": "2027-01-01", "rates": [{"price_per_gpu_hour": "-1"}]}, "rates"),
    ({"effective_from": "2027-01-01", "rates": [{"price_per_gpu_hour": "1"}, {"price_per_gpu_hour": "2"}]}, "rates"),
    ({"effective_from": "2027-01-01", "rates": [{"gpu_model": 999999, "price_per_gpu_hour": "1"}]}, "rates"),
    ({"effective_from": "2027-01-01", "rates": "cheap"}, "rates"),
])
def test_bad_rate_cards_are_400s(manager, body, field):
    make_fleet()
    count = RateCard.objects.count()
    refused = manager.post(CARDS, body, format="json")
    assert refused.status_code == 400, refused.content
    assert field in refused.json()
    assert RateCard.objects.count() == count


def test_a_used_card_is_a_400_and_a_409(manager):
    card = make_fleet()["card"]
    issue_month(OCTOBER, now=NOW)
    for body in ({"note": "changed"}, {"rates": [{"price_per_gpu_hour": "1"}]}):
        refused = manager.patch(f"{CARDS}{card.pk}/", body, format="json")
        assert refused.status_code == 400, refused.content
        assert "add a card with a later date" in str(refused.json())
    assert manager.delete(f"{CARDS}{card.pk}/").status_code == 409
    assert manager.get(f"{CARDS}{card.pk}/").json()["in_use"] is True
    card.refresh_from_db()
    assert card.note == "2026" and card.rates.count() == 4


def test_a_closed_month_is_corrected_through_the_api(manager):
    make_fleet()
    issue_month(date(2026, 9, 1), now=NOW)
    url = f"{STATEMENTS}adjust/"
    made = manager.post(url, {"team": "speech", "month": "2026-09", "amount": "-5.00", "gpu_hours": "2.5",
                              "reason": "job 4 double counted"}, format="json")
    assert made.status_code == 201, made.content
    assert (made.json()["amount"], made.json()["created_by"], made.json()["statement"]) == ("-5.00", "mona", None)
    for body, field in (({"month": "2026-10"}, "month"), ({"month": "Oct"}, "month"), ({"team": "nobody"}, "team"),
                        ({"amount": "lots"}, "amount"), ({"reason": ""}, "reason")):
        refused = manager.post(url, {"team": "speech", "month": "2026-09", "amount": "1", "reason": "x", **body},
                               format="json")
        assert refused.status_code == 400 and field in refused.json(), (body, refused.content)
    issue_month(OCTOBER, now=NOW)
    speech = manager.get(STATEMENTS, {"month": "2026-10", "team": "speech"}).json()["results"][0]
    assert (speech["adjustments"], speech["total"]) == ("-5.00", "51.00")
    assert [row["reason"] for row in speech["adjustment_rows"]] == ["job 4 double counted"]
    viewer = token_client(make_user("vera", VIEWER))
    assert viewer.post(url, {"team": "speech", "month": "2026-09", "amount": "1", "reason": "x"},
                       format="json").status_code == 403
