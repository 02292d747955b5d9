"""What other apps read from support (the dashboard card): small query functions, no views."""

from django.db.models import Case, F, When

from .models import Ticket

AT_RISK_LIMIT = 10


def at_risk(user, limit=AT_RISK_LIMIT):
    """Open tickets ``user`` may see whose SLA is breached or breaching soon, most urgent first, and how many."""
    tickets = Ticket.objects.visible_to(user).at_risk()
    running_due = Case(When(first_response_at__isnull=True, then=F("response_due")), default=F("resolution_due"))
    rows = (tickets.select_related("assignee", "site", "node", "gpu__node", "switch", "storage_system")
            .order_by(running_due, "pk")[:limit])
    return {"tickets": list(rows), "count": tickets.count()}
