"""The statement pages (list with filters and the issue form, a statement with sorted lines, totals, credit and
adjustments), the CSV (read back into the numbers shown) and the PDF (read back), the rate card pages (a used
card cannot be edited), and the monthly task's e-mail (recipients, attachments, once)."""

import csv
import io
import re
from datetime import date
from decimal import Decimal

import pytest
from django.core import mail

from inventory.models import TeamMember
from inventory.statements import render, tasks
from inventory.statements.issuing import adjust, issue_month
from inventory.statements.models import ClosedMonth, Statement
from portal.roles import MANAGER, RESEARCHER
from tests.helpers.accounts import make_user
from tests.helpers.statements import NOW, OCTOBER, SEPTEMBER, make_fleet

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    found = make_fleet()
    issue_month(SEPTEMBER, now=NOW)
    adjust(found["speech"], SEPTEMBER, "-5.00", "job 4 double counted")
    issue_month(OCTOBER, now=NOW)
    found["statement"] = Statement.objects.get(month=OCTOBER, team=found["vision"])
    found["speech_statement"] = Statement.objects.get(month=OCTOBER, team=found["speech"])
    return found


def test_csv_reads_back_into_the_numbers_shown(fleet, manager_client):
    statement = fleet["speech_statement"]
    response = manager_client.get(f"/inventory/statements/{statement.pk}/csv/")
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="statement-speech-2026-10.csv"' in response["Content-Disposition"]
    text = response.content.decode()
    assert "<" not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["month"] for row in rows} == {"2026-10"} and {row["rate_card"] for row in rows} == {"2026-01-01"}
    total = rows[-1]
    assert total["kind"] == "total"
    parts = [Decimal(row["amount"]) for row in rows[:-1]]
    assert sum(parts) == Decimal(total["amount"]) == statement.total == Decimal("51.00")
    assert sum(Decimal(row["gpu_hours"]) for row in rows if row["kind"] == "usage") == Decimal(total["gpu_hours"])
    assert [row["kind"] for row in rows] == ["usage", "usage", "adjustment", "total"]
    page = manager_client.get(f"/inventory/statements/{statement.pk}/").content.decode()
    for row in rows:
        assert row["amount"] in page  # the numbers the page shows


def test_pdf_is_readable(fleet, manager_client):
    statement = fleet["statement"]
    response = manager_client.get(f"/inventory/statements/{statement.pk}/pdf/")
    assert response["Content-Type"] == "application/pdf"
    pdf = response.content
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    text = b" ".join(re.findall(rb"\((.*?)\) Tj", pdf)).decode("latin-1")
    for shown in ("GPU statement 2026-10: vision", "Rate card from 2026-01-01", "Total 266.00 USD", "-18.00",
                  "Infrastructure credit", "alice", "240.00"):
        assert shown in text, shown


def test_statement_page(fleet, manager_client):
    statement = fleet["statement"]
    page = manager_client.get(f"/inventory/statements/{statement.pk}/?sort=-amount")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="statement-total">266.00<' in html and "−18.00" in html
    amounts = [row.record.amount for row in page.context["lines"].rows]
    assert amounts == sorted(amounts, reverse=True)
    speech = manager_client.get(f"/inventory/statements/{fleet['speech_statement'].pk}/").content.decode()
    assert "job 4 double counted" in speech and "2026-09" in speech
    assert fleet["speech_statement"].credit == 0 and "−0.00" not in speech  # no credit is no minus


def test_list_filters_and_issues(fleet, client):
    manager = make_user("mona", MANAGER)
    client.force_login(manager)
    listed = client.get("/inventory/statements/", {"month": "2026-10"})
    assert listed.context["table"].paginator.count == 3
    assert client.get("/inventory/statements/", {"team": "no team"}).context["table"].paginator.count == 1
    assert client.get("/inventory/statements/", {"month": "2026-13"}).status_code == 200  # a field error, no 500
    assert 'id="issue-month"' in listed.content.decode()
    refused = client.post("/inventory/statements/issue/", {"month": "2099-01"}, follow=True)
    assert "once it has ended" in refused.content.decode()
    again = client.post("/inventory/statements/issue/", {"month": "2026-10"}, follow=True)
    assert "already issued" in again.content.decode() and Statement.objects.filter(month=OCTOBER).count() == 3
    client.force_login(make_user("rita", RESEARCHER))
    assert client.post("/inventory/statements/issue/", {"month": "2026-08"}).status_code == 403


def test_a_used_rate_card_is_not_editable_on_its_page(fleet, manager_client):
    card = fleet["card"]
    page = manager_client.get(f"/inventory/rate-cards/{card.pk}/").content.decode()
    assert "cannot change" in page and f"/inventory/rate-cards/{card.pk}/edit/" not in page
    edit = manager_client.post(f"/inventory/rate-cards/{card.pk}/edit/",
                               {"effective_from": "2026-01-01", "currency": "EUR", "note": "x"})
    assert edit.status_code == 200 and "add a card with a later date" in edit.content.decode()
    card.refresh_from_db()
    assert card.currency == "USD"


def test_monthly_task_mails_each_team_once(fleet, settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    lead, manager = make_user("pia", RESEARCHER), make_user("max", RESEARCHER)
    speech = fleet["speech"]
    speech.pi, speech.email = lead, ""
    speech.save()
    TeamMember.objects.create(team=speech, user=manager, role="manager")
    TeamMember.objects.create(team=fleet["vision"], user=make_user("mem", RESEARCHER), role="member")
    monkeypatch.setattr(tasks, "last_closed_month", lambda: date(2026, 8, 1))
    ClosedMonth.objects.update()  # August: no jobs; its statements are none, nothing to mail
    tasks.issue_monthly_statements.apply()
    assert mail.outbox == []
    monkeypatch.setattr(tasks, "issue_month", lambda month: (ClosedMonth.objects.get(month=OCTOBER), False))
    tasks.issue_monthly_statements.apply()
    tasks.issue_monthly_statements.apply()  # a retry sends nothing twice
    sent = {message.subject: message for message in mail.outbox}
    assert sorted(sent) == ["GPU statement 2026-10: speech", "GPU statement 2026-10: vision"]
    assert sent["GPU statement 2026-10: vision"].to == ["vision@example.org"]
    assert sent["GPU statement 2026-10: speech"].to == ["pia@example.org", "max@example.org"]
    names = [name for name, _, _ in sent["GPU statement 2026-10: vision"].attachments]
    assert names == ["statement-vision-2026-10.csv", "statement-vision-2026-10.pdf"]
    _, content, kind = sent["GPU statement 2026-10: vision"].attachments[1]
    assert kind == "application/pdf" and content.startswith(b"%PDF")
    assert "Total            266.00 USD" in sent["GPU statement 2026-10: vision"].body
    assert render.to_csv(fleet["statement"]) == sent["GPU statement 2026-10: vision"].attachments[0][1]


def test_a_rate_card_is_added_with_its_rates_on_its_page(manager_client):
    from inventory.statements.models import RateCard
    from tests.factories import make_gpu_model

    model = make_gpu_model()
    form = {"effective_from": "2027-01-01", "currency": "usd", "note": "2027", "rates-TOTAL_FORMS": "3",
            "rates-INITIAL_FORMS": "0", "rates-0-price_per_gpu_hour": "2.00", "rates-1-gpu_model": str(model.pk),
            "rates-1-price_per_gpu_hour": "5.00", "rates-2-partition": "infer", "rates-2-price_per_gpu_hour": "1"}
    page = manager_client.get("/inventory/rate-cards/add/")
    assert page.status_code == 200 and 'id="rates"' in page.content.decode()
    twice = manager_client.post("/inventory/rate-cards/add/", {**form, "rates-2-partition": "",
                                                                "rates-2-gpu_model": str(model.pk)})
    assert twice.status_code == 200 and "Two rates for the same GPU model and partition" in twice.content.decode()
    assert not RateCard.objects.exists()
    made = manager_client.post("/inventory/rate-cards/add/", form)
    assert made.status_code == 302
    card = RateCard.objects.get()
    assert card.currency == "USD"
    assert {(r.gpu_model_id, r.partition, str(r.price_per_gpu_hour)) for r in card.rates.all()} == {
        (None, "", "2.0000"), (model.pk, "", "5.0000"), (None, "infer", "1.0000")}
