"""Background work of the statements (Celery; beat runs ``issue_monthly_statements`` on the first of each month).

The task issues last month (``issuing.issue_month``: idempotent) and e-mails each team's statement that was not yet
e-mailed, with its CSV and PDF, to the team's address, its PI and its managers. A statement is marked e-mailed under
its row lock as it is sent: a retried or doubled task sends each once.
"""

from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from inventory.telemetry.queries import last_closed_month

from . import render
from .issuing import issue_month
from .models import Statement


@shared_task(name="inventory.tasks.issue_monthly_statements")
def issue_monthly_statements():
    """Issue the last closed month and e-mail its statements; returns how many were e-mailed."""
    closed, _ = issue_month(last_closed_month())
    return mail_statements(closed)


def recipients(team):
    """The team's address, its PI's and its managers' (each once, in that order; blanks left out)."""
    found = [team.email, team.pi.email if team.pi_id else ""]
    found += [m.user.email for m in team.memberships.filter(role="manager").select_related("user")]
    return list(dict.fromkeys(address for address in found if address))


def mail_statements(closed):
    sent = 0
    for pk in closed.statements.filter(team__isnull=False, mailed_at__isnull=True).values_list("pk", flat=True):
        with transaction.atomic():
            statement = (Statement.objects.select_for_update(of=("self",))
                         .select_related("team__pi", "closed_month__rate_card").filter(pk=pk, mailed_at__isnull=True)
                         .first())
            if statement is None:  # another run sent it meanwhile
                continue
            to = recipients(statement.team)
            if to:
                message(statement, to).send()
                sent += 1
            statement.mailed_at = timezone.now()
            statement.save(update_fields=["mailed_at"])
    return sent


def message(statement, to):
    body = (f"The GPU statement of team {statement.team_name} for {statement.month_label}:\n\n"
            f"  GPU-hours        {statement.gpu_hours}\n"
            f"  Charges          {statement.charges} {statement.currency}\n"
            f"  Infrastructure credit  -{statement.credit} ({statement.credit_gpu_hours} GPU-hours lost)\n"
            f"  Adjustments      {statement.adjustments}\n"
            f"  Total            {statement.total} {statement.currency}\n\n"
            f"Priced at the {statement.rate_card}. The lines are in the attached CSV and PDF.\n")
    mail = EmailMessage(f"GPU statement {statement.month_label}: {statement.team_name}", body,
                        settings.DEFAULT_FROM_EMAIL, to)
    mail.attach(render.filename(statement, "csv"), render.to_csv(statement), "text/csv")
    mail.attach(render.filename(statement, "pdf"), render.to_pdf(statement), "application/pdf")
    return mail
