"""The demo (``manage.py seed_demo``) issues the last closed month: its statements add up, team by team and in all, to
``/api/inventory/allocations/?month=``; a second seeding issues nothing again."""

from io import StringIO

import pytest
from django.core.management import call_command

from inventory.statements.models import ClosedMonth, Statement
from inventory.telemetry.queries import last_closed_month
from portal.roles import VIEWER
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_the_demo_statements_add_up_to_the_allocation_figures():
    out = StringIO()
    call_command("seed_demo", stdout=out)
    month = last_closed_month()
    closed = ClosedMonth.objects.get(month=month)
    statements = {s.team_name: float(s.gpu_hours) for s in Statement.objects.filter(month=month).select_related("team")}
    assert len(statements) >= 3 and f"{month:%Y-%m}: {len(statements)} statements" in out.getvalue()
    answer = token_client(make_user("vera", VIEWER)).get("/api/inventory/allocations/", {"month": f"{month:%Y-%m}"})
    teams = {group["name"]: group["gpu_hours"] for group in answer.json()["groups"]}
    for team, gpu_hours in statements.items():  # "no team": the accounts that are no team's
        expected = sum(v for name, v in teams.items() if name not in statements) if team == "no team" else teams[team]
        assert gpu_hours == pytest.approx(expected, abs=0.05), team
    assert sum(statements.values()) == pytest.approx(sum(teams.values()), abs=0.05)
    assert sum(statements.values()) == pytest.approx(closed.fleet_gpu_hours, abs=0.01)
    count = Statement.objects.count()
    call_command("seed_demo", stdout=StringIO())
    assert Statement.objects.count() == count and ClosedMonth.objects.count() == 1
