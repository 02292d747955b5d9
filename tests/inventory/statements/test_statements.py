"""Rate selection, the statement builder against the figures worked out by hand in ``tests/helpers/statements.py``,
the totals against the allocation figures (rollup and ``/api/inventory/allocations/``), frozen statements, versioned
rate cards, adjustments and idempotent issuing."""

from datetime import date
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db.models import ProtectedError

from inventory.goodput.queries import interruption_sums, interruptions
from inventory.statements import build, pricing
from inventory.statements.issuing import CannotIssue, adjust, issue_month
from inventory.statements.models import ClosedMonth, Rate, RateCard, Statement, StatementLine
from inventory.telemetry import allocation_rollup
from inventory.telemetry.queries import calendar_month
from portal.roles import MANAGER
from tests.helpers.accounts import make_user, token_client
from tests.helpers.statements import (
    EXPECTED,
    FLEET_OCTOBER,
    NOW,
    OCTOBER,
    SEPTEMBER,
    at,
    make_fleet,
    make_rate_card,
)

pytestmark = pytest.mark.django_db
FIGURES = ("gpu_hours", "charges", "credit_gpu_hours", "credit", "total")


@pytest.fixture
def fleet():
    return make_fleet()


def figures(statement):
    return {name: getattr(statement, name) for name in FIGURES}


def test_the_most_specific_rate_wins():
    model, other = object(), object()
    prices = pricing.Prices(None, {(1, "infer"): Decimal("4"), (1, ""): Decimal("3"), (None, "infer"): Decimal("2"),
                                   (None, ""): Decimal("1")})
    assert [prices.price(1, "infer"), prices.price(1, "train"), prices.price(2, "infer"), prices.price(2, "train"),
            prices.price(None, "infer"), prices.price(None, "")] == [4, 3, 2, 1, 2, 1]
    with pytest.raises(pricing.NoRate):
        pricing.Prices(None, {(1, ""): Decimal("3")}).price(2, "train")
    assert model is not other


def test_the_card_in_effect_on_the_first_day_prices_the_month():
    make_rate_card(date(2026, 1, 1))
    later = make_rate_card(date(2026, 10, 2))
    assert pricing.card_for(date(2026, 10, 1)).effective_from == date(2026, 1, 1)
    assert pricing.card_for(date(2026, 11, 1)) == later
    with pytest.raises(pricing.NoRate, match="No rate card"):
        pricing.card_for(date(2025, 12, 1))


def test_calendar_month_is_cut_at_local_midnight(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    start, end = calendar_month(date(2026, 10, 1))
    assert (start.isoformat(), end.isoformat()) == ("2026-10-01T00:00:00+02:00", "2026-11-01T00:00:00+01:00")


def test_statements_match_the_hand_computed_figures(fleet):
    closed, issued = issue_month(OCTOBER, now=NOW)
    assert issued and closed.rate_card == fleet["card"]
    found = {s.team.name if s.team else None: figures(s) for s in Statement.objects.filter(month=OCTOBER)}
    assert found == EXPECTED
    vision = Statement.objects.get(month=OCTOBER, team=fleet["vision"])
    lines = {(line.kind, line.user, line.partition, line.gpu_model_name): (line.gpu_hours, line.price_per_gpu_hour,
                                                                           line.amount) for line in vision.lines.all()}
    assert lines == {
        ("usage", "alice", "infer", "H100 SXM"): (Decimal("8"), Decimal("2.5"), Decimal("20.00")),
        ("usage", "alice", "train", "H100 SXM"): (Decimal("80"), Decimal("3"), Decimal("240.00")),
        ("usage", "bob", "infer", "A100 SXM"): (Decimal("16"), Decimal("1.5"), Decimal("24.00")),
        ("credit", "", "train", "H100 SXM"): (Decimal("6"), Decimal("3"), Decimal("-18.00")),
    }
    nobody = Statement.objects.get(month=OCTOBER, team=None)
    assert {(line.user, line.gpu_model_name) for line in nobody.lines.all()} == {("dave", ""), ("erin", "A100 SXM")}


def test_totals_equal_the_allocation_figures(fleet):
    """Each team's GPU-hours are the rollup's for its account; all statements, no team included, are the fleet's,
    as ``/api/inventory/allocations/?month=`` answers."""
    issue_month(OCTOBER, now=NOW)
    start, end = calendar_month(OCTOBER)
    for team in ("vision", "speech"):
        statement = Statement.objects.get(month=OCTOBER, team__name=team)
        allocated = allocation_rollup.allocated(start, end, NOW, None, account=team)[None]["gpu_hours"]
        assert float(statement.gpu_hours) == pytest.approx(allocated, abs=0.01)
    statements = sum(Statement.objects.filter(month=OCTOBER).values_list("gpu_hours", flat=True))
    answer = token_client(make_user("mona", MANAGER)).get("/api/inventory/allocations/", {"month": "2026-10"})
    assert answer.status_code == 200, answer.content
    fleet_hours = sum(group["gpu_hours"] for group in answer.json()["groups"])
    assert float(statements) == pytest.approx(fleet_hours, abs=0.01) == pytest.approx(FLEET_OCTOBER)
    assert ClosedMonth.objects.get(month=OCTOBER).fleet_gpu_hours == pytest.approx(FLEET_OCTOBER)
    assert answer.json()["start"].startswith("2026-10-01T00:00:00")
    assert answer.json()["end"].startswith("2026-11-01T00:00:00")


def test_the_credit_is_the_goodput_figure_for_the_month(fleet):
    issue_month(OCTOBER, now=NOW)
    start, end = calendar_month(OCTOBER)
    goodput = interruption_sums(interruptions({"team": "vision"}, start, end), "account", start)["vision"]
    statement = Statement.objects.get(month=OCTOBER, team=fleet["vision"])
    assert float(statement.credit_gpu_hours) == pytest.approx(goodput["lost_run"] + goodput["lost_wait"]) == 6.0


def test_issuing_is_idempotent_and_frozen(fleet):
    first, issued = issue_month(OCTOBER, now=NOW)
    lines = StatementLine.objects.count()
    again, issued_again = issue_month(date(2026, 10, 15), now=NOW)
    assert (issued, issued_again, again) == (True, False, first)
    assert (Statement.objects.count(), StatementLine.objects.count()) == (3, lines)
    # A later pull that changes October's jobs, or a new rate, leaves the issued statement as it was.
    job = fleet["jobs"]["2"]
    job.gpus = 1
    job.save()
    with pytest.raises(ValidationError, match="cannot change"):
        Rate.objects.filter(card=fleet["card"]).first().save()
    assert figures(Statement.objects.get(month=OCTOBER, team=fleet["vision"])) == EXPECTED["vision"]


def test_a_used_card_cannot_change_but_a_later_one_can(fleet):
    issue_month(OCTOBER, now=NOW)
    card = RateCard.objects.get(pk=fleet["card"].pk)
    card.note = "changed"
    with pytest.raises(ValidationError, match="add a card with a later date"):
        card.full_clean()
    with pytest.raises(ValidationError):
        card.save()
    with pytest.raises(ProtectedError):
        RateCard.objects.get(pk=card.pk).delete()
    with pytest.raises(ValidationError):
        Rate.objects.create(card=card, partition="new", price_per_gpu_hour=1)
    later = RateCard.objects.get(effective_from=date(2026, 11, 1))
    later.note = "still free"
    later.full_clean()
    later.save()


def test_a_month_is_issued_only_after_it_ended(fleet):
    with pytest.raises(CannotIssue, match="once it has ended"):
        issue_month(date(2026, 11, 1), now=NOW)
    with pytest.raises(CannotIssue, match="No rate card"):
        issue_month(date(2024, 1, 1), now=NOW)
    assert not ClosedMonth.objects.exists()


def test_an_adjustment_lands_on_the_next_statement(fleet):
    issue_month(SEPTEMBER, now=NOW)
    september = Statement.objects.get(month=SEPTEMBER, team=fleet["vision"])
    assert (september.gpu_hours, september.total) == (Decimal("4"), Decimal("10.00"))  # job 1: 4 h × 2.50
    with pytest.raises(ValidationError, match="closed"):
        adjust(fleet["speech"], OCTOBER, "-5", "not yet closed")
    row = adjust(fleet["speech"], SEPTEMBER, "-5.00", "job 4 double counted")
    issue_month(OCTOBER, now=NOW)
    speech = Statement.objects.get(month=OCTOBER, team=fleet["speech"])
    row.refresh_from_db()
    assert (row.statement, speech.adjustments, speech.total) == (speech, Decimal("-5.00"), Decimal("51.00"))
    september.refresh_from_db()
    assert september.total == Decimal("10.00")  # the closed month itself never changes


def test_build_reads_a_fixed_number_of_queries(fleet, django_assert_max_num_queries):
    with django_assert_max_num_queries(16):
        build.build(OCTOBER, NOW)
    assert at(1) < NOW
