"""The ticket queues' table: status, priority and assignee editable in place (htmx) for support staff."""

import django_tables2 as tables
from django.template.loader import render_to_string
from django.utils.functional import cached_property
from django.utils.html import format_html

from . import sla, workflow
from .forms import staff_users
from .models import Ticket


def inline_control(ticket, field, user, staff=(), message="", ok=False):
    """The ``<select>`` that changes one field of a ticket from its row, or the plain value for people who
    cannot change it."""
    if field == "status":
        targets = workflow.allowed_targets(ticket, user)
        choices = [(ticket.status, ticket.get_status_display())] + [(s.value, s.label) for s in targets]
        current = ticket.status
    elif field == "priority":
        choices, current = Ticket.Priority.choices, ticket.priority
    else:
        choices = [("", "— unassigned —")] + [(str(u.pk), u.get_username()) for u in staff]
        current = str(ticket.assignee_id or "")
    editable = user.has_perm("support.edit_ticket", ticket)
    if field == "status":
        editable = len(choices) > 1
    return render_to_string("support/inline_field.html", {
        "ticket": ticket, "field": field, "choices": choices, "current": current, "editable": editable,
        "shown": dict(choices).get(current, "—"), "message": message, "ok": ok,
    })


# Columns the queue page leaves out so that it fits a 1280 px screen (the ticket page and the CSV export have them).
PAGE_EXCLUDE = ("category", "site", "team", "rma_number")


class TicketTable(tables.Table):
    id = tables.Column(linkify=True, verbose_name="#")
    # Long titles and asset names wrap (class "wrap"), so the queue's columns fit a 1280 px screen.
    title = tables.Column(linkify=True, attrs={"td": {"class": "wrap"}})
    priority = tables.Column()
    status = tables.Column()
    assignee = tables.Column(accessor="assignee__username", verbose_name="Assignee", empty_values=())
    sla = tables.Column(empty_values=(), orderable=False, verbose_name="SLA")
    next_due = tables.Column(empty_values=(), orderable=False, verbose_name="Due")
    asset = tables.Column(empty_values=(), orderable=False, verbose_name="Asset", attrs={"td": {"class": "wrap"}})
    team = tables.Column(accessor="team__name", verbose_name="Team")
    requester = tables.Column(accessor="requester__username", verbose_name="Requester")
    opened = tables.DateTimeColumn(format="Y-m-d H:i")

    class Meta:
        model = Ticket
        fields = ("id", "title", "priority", "status", "assignee", "sla", "next_due", "category", "asset", "site",
                  "team", "requester", "opened", "rma_number")
        row_attrs = {"id": lambda record: f"ticket-{record.pk}"}

    @cached_property
    def user(self):
        return self.request.user

    @cached_property
    def staff(self):
        return list(staff_users()) if self.user.has_perm("support.work_tickets") else []

    # After an inline change the row is rendered again with the outcome next to the field changed:
    # {ticket id: (field, message, ok)}.
    flash = {}

    def control(self, record, field, staff=()):
        flashed, message, ok = self.flash.get(record.pk, (None, "", False))
        if flashed != field:
            message, ok = "", False
        return inline_control(record, field, self.user, staff, message=message, ok=ok)

    def render_status(self, record):
        return self.control(record, "status")

    def render_priority(self, record):
        return self.control(record, "priority")

    def render_assignee(self, record):
        return self.control(record, "assignee", self.staff)

    def render_sla(self, record):
        state = sla.state(record)
        return format_html('<span class="badge sla sla-{}">{}</span>', state.replace(" ", "-"), state)

    def value_sla(self, record):
        return sla.state(record)

    def render_next_due(self, record):
        due = sla.next_due(record) if record.is_open else None
        if due is None:
            return "—"
        what = "first response" if record.first_response_at is None else "resolution"  # which clock (sla.next_due)
        return format_html('<span title="{} due">{}</span>', what, due.strftime("%Y-%m-%d %H:%M"))

    def value_next_due(self, record):
        return sla.next_due(record) if record.is_open else None  # the export writes it in ISO 8601

    def render_asset(self, record):
        return str(record.asset) if record.asset else "—"

    def value_status(self, record):
        return record.get_status_display()

    def value_priority(self, record):
        return record.priority

    def value_assignee(self, record):
        return record.assignee.get_username() if record.assignee else ""
