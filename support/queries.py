"""What other apps read from support (the dashboard card, the global search): small query functions, no views."""

from django.db.models import Case, Count, F, Q, When
from django.db.models.functions import Coalesce, TruncDate
from django.urls import reverse
from django.utils import timezone

from portal.search import any_field, search_group

from .models import Ticket, breached

AT_RISK_LIMIT = 10


def at_risk(user, limit=AT_RISK_LIMIT):
    """Open tickets ``user`` may see whose SLA is breached or breaching soon, most urgent first, and how many."""
    tickets = Ticket.objects.visible_to(user).at_risk()
    running_due = Case(When(first_response_at__isnull=True, then=F("response_due")), default=F("resolution_due"))
    rows = (tickets.select_related("assignee", "site", "node", "gpu__node", "switch", "storage_system")
            .order_by(running_due, "pk")[:limit])
    return {"tickets": list(rows), "count": tickets.count()}


def home_counts(user, now=None):
    """Open tickets ``user`` may see: how many breached their SLA, how many are hardware faults (one query)."""
    return Ticket.objects.visible_to(user).open().aggregate(
        breached=Count("pk", filter=breached(now or timezone.now())),
        hardware=Count("pk", filter=Q(category=Ticket.Category.HARDWARE)))


def hardware_ticket_days(since):
    """``{(node id, day)}``: days since ``since`` on which someone filed a hardware ticket against a node or one
    of its GPUs (telemetry's own tickets are left out: their fault already counts as a move to degraded). The
    ageing recommendation counts these as fault days (``planning.recommendations.gather.FAULT_DAY_SOURCES``)."""
    tickets = (Ticket.objects.filter(category=Ticket.Category.HARDWARE, created__gte=since)
               .exclude(source=Ticket.Source.TELEMETRY)
               .annotate(on_node=Coalesce(F("node_id"), F("gpu__node_id")), day=TruncDate("created"))
               .filter(on_node__isnull=False).values_list("on_node", "day").distinct())
    return set(tickets)


# What the global search looks at (``portal.registry``); researchers find only their own and their teams' tickets.
SEARCH_LOOKS_AT = (("ticket numbers, titles, RMA numbers and the hostnames of their nodes", "support.read_ticket"),)
TICKET_TEXT_FIELDS = ("title", "rma_number", "node__hostname", "gpu__node__hostname")
MAX_TICKET_NUMBER = 2**63 - 1  # a bigint: a longer number would make PostgreSQL refuse the query


def search(term, user):
    """The tickets ``user`` may read whose title, RMA number or node's hostname contains ``term``, or whose number
    is the term ("42", "#42"): a ``portal.search`` group, in one query. The number and the RMA number are exact
    matches."""
    term = term.strip()
    if not term:
        return []
    exact = Q(rma_number__iexact=term)
    number = term.removeprefix("#")
    if number.isascii() and number.isdigit() and int(number) <= MAX_TICKET_NUMBER:
        exact |= Q(pk=int(number))
    tickets = Ticket.objects.visible_to(user).filter(any_field(TICKET_TEXT_FIELDS, "icontains", term) | exact)
    group = search_group("Tickets", tickets, exact)
    return [group] if group else []


def interruption_tickets(interruptions, within=None):
    """``{interruption pk: {"id", "url"}}``: the telemetry ticket opened for each interruption's fault — the first
    one against its GPU (else its node) opened from its fault's time to ``within`` (a day) after. Registered as
    goodput's ticket finder (``inventory.goodput.hooks``); one query for a whole page."""
    from datetime import timedelta

    within = within or timedelta(days=1)
    faulty = [row for row in interruptions if row.fault_ts and (row.gpu_id or row.node_id)]
    if not faulty:
        return {}
    since = min(row.fault_ts for row in faulty)
    tickets = list(Ticket.objects.filter(source=Ticket.Source.TELEMETRY, opened__gte=since - timedelta(hours=1),
                                         opened__lte=max(row.fault_ts for row in faulty) + within)
                   .filter(Q(gpu_id__in={row.gpu_id for row in faulty if row.gpu_id})
                           | Q(node_id__in={row.node_id for row in faulty}, gpu__isnull=True))
                   .order_by("opened", "pk").values_list("pk", "gpu_id", "node_id", "opened"))
    found = {}
    for row in faulty:
        # The ticket is opened from the hourly rollups: up to an hour's rounding before the event's own time.
        for pk, gpu_id, node_id, opened in tickets:
            same = gpu_id == row.gpu_id if row.gpu_id else node_id == row.node_id and gpu_id is None
            if same and row.fault_ts - timedelta(hours=1) <= opened <= row.fault_ts + within:
                found[row.pk] = {"id": pk, "url": reverse("support:ticket_detail", args=[pk])}
                break
    return found
