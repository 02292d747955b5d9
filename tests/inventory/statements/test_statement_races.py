"""Issuing a month from many places at once (issue 36), on PostgreSQL: API calls from threads against a live server
and the monthly task in this process, released together. Exactly one issues the month; the others answer the same
statements; no statement or line is stored twice; each team's statement is e-mailed once."""

from datetime import date

import pytest
from django.core import mail

from inventory.statements import tasks
from inventory.statements.issuing import issue_month
from inventory.statements.models import ClosedMonth, Statement, StatementLine
from tests.helpers.races import Portal, in_process, race
from tests.helpers.statements import NOW, OCTOBER, make_fleet

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 8


def test_issuing_a_month_at_once_issues_it_once(live_server, settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    make_fleet()
    portal = Portal(live_server.url)
    monkeypatch.setattr(tasks, "last_closed_month", lambda: OCTOBER)
    calls = [lambda: portal.api("POST", "/api/inventory/statements/issue/", {"month": "2026-10"})
             for _ in range(THREADS)]
    calls += [in_process(lambda: issue_month(date(2026, 10, 20), now=NOW)),
              in_process(tasks.issue_monthly_statements), in_process(tasks.issue_monthly_statements)]
    results = race(*calls)
    answers = results[:THREADS]
    assert {answer.status_code for answer in answers} <= {200, 201}, [a.text[:300] for a in answers]
    # One caller issued it (or one of the tasks, which answer how many they mailed); 201 is the API's "issued".
    issued = [answer.json()["issued"] for answer in answers] + [results[THREADS][1]]
    assert issued.count(True) <= 1
    assert [answer.status_code == 201 for answer in answers] == [answer.json()["issued"] for answer in answers]
    assert ClosedMonth.objects.count() == 1 and Statement.objects.count() == 3
    bodies = {tuple(sorted(s["id"] for s in answer.json()["statements"])) for answer in answers}
    assert bodies == {tuple(sorted(Statement.objects.values_list("pk", flat=True)))}
    assert StatementLine.objects.count() == 8  # vision 3 + credit 1, speech 2, no team 2
    # Speech has no address, PI nor manager in the fleet: vision's statement only, once for both tasks.
    assert [message.subject for message in mail.outbox] == ["GPU statement 2026-10: vision"]
    assert sum(results[THREADS + 1:]) == 1
