"""Support metrics: open tickets by category and site, mean time to resolve, SLA compliance. A few aggregate
queries, shared by the metrics page and ``/api/support/metrics/``."""

from datetime import timedelta

from django.db.models import Avg, Count, F, Q
from django.utils import timezone

from .models import Ticket

DEFAULT_DAYS = 90


def hours(duration):
    return round(duration.total_seconds() / 3600, 1) if duration is not None else None


def compliance(tickets):
    """Share (%) of resolved tickets that met both the response and the resolution due times."""
    row = tickets.aggregate(
        total=Count("pk"),
        met=Count("pk", filter=Q(first_response_at__lte=F("response_due"), resolved_at__lte=F("resolution_due"))),
    )
    return {"resolved": row["total"], "met": row["met"],
            "percent": round(100 * row["met"] / row["total"], 1) if row["total"] else None}


def mean_time_to_resolve(tickets):
    """Mean hours from opened to resolved, less the time waited on the requester."""
    row = tickets.aggregate(span=Avg(F("resolved_at") - F("opened")), paused=Avg("paused_seconds"))
    if row["span"] is None:
        return None
    return hours(row["span"] - timedelta(seconds=row["paused"] or 0))


def summary(days=DEFAULT_DAYS, now=None, tickets=None):
    """Open tickets now by category, site and priority; over the last ``days``: mean time to resolve and SLA
    compliance, overall, per category and per priority."""
    now = now or timezone.now()
    tickets = Ticket.objects.all() if tickets is None else tickets
    open_tickets = tickets.open()
    resolved = tickets.filter(resolved_at__gte=now - timedelta(days=days), resolved_at__isnull=False)
    labels = dict(Ticket.Category.choices)
    by_category = dict(open_tickets.values_list("category").annotate(n=Count("pk")).order_by())
    by_site = dict(open_tickets.values_list("site__name").annotate(n=Count("pk")).order_by())
    by_priority = dict(open_tickets.values_list("priority").annotate(n=Count("pk")).order_by())
    return {
        "days": days,
        "open": sum(by_category.values()),
        "breached": tickets.breached(now).count(),
        "open_by_category": [{"category": key, "label": label, "count": by_category.get(key, 0)}
                             for key, label in labels.items()],
        "open_by_site": [{"site": name or "(no site)", "count": n} for name, n in sorted(
            by_site.items(), key=lambda item: (item[0] is None, item[0] or ""))],
        "open_by_priority": [{"priority": p, "count": by_priority.get(p, 0)} for p in Ticket.Priority.values],
        "mean_time_to_resolve_hours": mean_time_to_resolve(resolved),
        "mean_time_to_resolve_by_category": [
            {"category": key, "label": label, "hours": mean_time_to_resolve(resolved.filter(category=key))}
            for key, label in labels.items()
        ],
        "sla_compliance": compliance(resolved),
        "sla_compliance_by_priority": [{"priority": p, **compliance(resolved.filter(priority=p))}
                                       for p in Ticket.Priority.values],
    }


def charts(data):
    """The metrics page's bar charts (``charts.js`` ``bar``: x and y)."""
    return {
        "open-by-category": {"x": [row["label"] for row in data["open_by_category"]],
                             "y": [row["count"] for row in data["open_by_category"]]},
        "open-by-site": {"x": [row["site"] for row in data["open_by_site"]],
                         "y": [row["count"] for row in data["open_by_site"]]},
        "mttr-by-category": {"x": [r["label"] for r in data["mean_time_to_resolve_by_category"] if r["hours"]],
                             "y": [r["hours"] for r in data["mean_time_to_resolve_by_category"] if r["hours"]]},
        "compliance-by-priority": {
            "x": [r["priority"] for r in data["sla_compliance_by_priority"] if r["percent"] is not None],
            "y": [r["percent"] for r in data["sla_compliance_by_priority"] if r["percent"] is not None]},
    }
