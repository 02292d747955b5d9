"""Capacity month by month: the GPU-hours the fleet can deliver in each month of a plan's horizon.

Three parts, each in GPUs averaged over the month (× 730 hours for GPU-hours):

- *Owned*: GPUs of nodes in service or degraded (a degraded node still runs jobs) that no rental covers.
- *Rented*: each rental contract, for the days of the month it runs: the larger of its ``rented_gpus`` and the
  in-service GPUs of the nodes it covers (those leave with the rental when it ends).
- *Incoming*: nodes delivered or in burn-in join in the next month; what open purchase orders have not
  delivered yet (node lines: quantity × the model's GPU slots; GPU lines: quantity) joins in the month of
  ``ordered_on + settings.DELIVERY_LEAD_DAYS`` (the next month if that date has passed).

``baseline`` reads the inventory and the contracts in a few queries; ``monthly_gpus`` is plain arithmetic.
"""

import calendar
from dataclasses import dataclass, field
from datetime import timedelta

from .forecast import add_months

HOURS_PER_MONTH = 730  # 8,760 h / 12, as in planning.contracts.costs


@dataclass
class Capacity:
    """Per month of ``months``: ``owned``, ``rented`` and ``incoming`` GPUs (month averages) and ``hours``,
    their sum in GPU-hours; ``sources``: one line per rental or order, for people."""

    months: list
    owned: list
    rented: list
    incoming: list
    sources: list = field(default_factory=list)

    @property
    def gpus(self):
        return [o + r + i for o, r, i in zip(self.owned, self.rented, self.incoming, strict=True)]

    @property
    def hours(self):
        return [g * HOURS_PER_MONTH for g in self.gpus]


def active_share(month, start, end):
    """The share of ``month`` (its first day) that falls between ``start`` and ``end`` (None: open-ended)."""
    days = calendar.monthrange(month.year, month.month)[1]
    last = month + timedelta(days=days - 1)
    first_day, last_day = max(month, start), min(last, end) if end else last
    return max(0, (last_day - first_day).days + 1) / days


def monthly_gpus(months, owned, rentals, arrivals):
    """``Capacity`` from ``owned`` GPUs, ``rentals`` [(start, end, GPUs)] and ``arrivals`` [(day, GPUs)]."""
    rented = [sum(gpus * active_share(month, start, end) for start, end, gpus in rentals) for month in months]
    incoming = [sum(gpus * active_share(month, day, None) for day, gpus in arrivals) for month in months]
    return Capacity(months, [float(owned)] * len(months), rented, incoming)


def baseline(first_month, horizon, today=None):
    """The fleet's capacity over ``horizon`` months from ``first_month``, from the inventory and contracts."""
    from django.conf import settings
    from django.db.models import Count, Q
    from django.utils import timezone

    from inventory.models import LifecycleState, Node

    from ..contracts.coverage import nodes_covered_by
    from ..contracts.models import Contract
    from ..procurement.models import OrderLine, PurchaseOrder

    today = today or timezone.localdate()
    months = [add_months(first_month, i) for i in range(horizon)]
    serving = (LifecycleState.IN_SERVICE, LifecycleState.DEGRADED)
    arriving = (LifecycleState.DELIVERED, LifecycleState.BURN_IN)
    node_gpus = dict(Node.objects.filter(state__in=serving).annotate(n=Count("gpus")).values_list("pk", "n"))

    rentals, sources, rented_nodes = [], [], set()
    contracts = list(Contract.objects.filter(Q(end__isnull=True) | Q(end__gte=first_month),
                                             kind=Contract.Kind.RENTAL))
    covered = nodes_covered_by(contracts)
    for contract in contracts:
        nodes = covered.get(contract.pk, set()) & node_gpus.keys()
        rented_nodes |= nodes
        gpus = max(contract.rented_gpus, sum(node_gpus[n] for n in nodes))
        if gpus:
            rentals.append((contract.start, contract.end, gpus))
            until = f"until {contract.end:%Y-%m-%d}" if contract.end else "open-ended"
            sources.append(f"Rental {contract}: {gpus:,} GPUs, {until}.")
    owned = sum(n for pk, n in node_gpus.items() if pk not in rented_nodes)

    next_month = add_months(today, 1)
    arrivals = []
    waiting = Node.objects.filter(state__in=arriving).aggregate(n=Count("gpus"))["n"]
    if waiting:
        arrivals.append((next_month, waiting))
        sources.append(f"Delivered or in burn-in: {waiting:,} GPUs from {next_month:%b %Y}.")
    lead = timedelta(days=settings.DELIVERY_LEAD_DAYS)
    lines = (OrderLine.objects.filter(order__status__in=(PurchaseOrder.Status.OPEN, PurchaseOrder.Status.PARTIAL))
             .select_related("order", "node_model").annotate(delivered=Count("delivered_items")))
    for line in lines:
        missing = line.quantity - line.delivered
        per_unit = line.node_model.gpu_slots if line.node_model_id else 1 if line.gpu_model_id else 0
        if missing <= 0 or not per_unit:
            continue
        day = max(line.order.ordered_on + lead, next_month)
        arrivals.append((day, missing * per_unit))
        sources.append(f"Order {line.order.reference}: {missing * per_unit:,} GPUs expected from {day:%b %Y}.")
    capacity = monthly_gpus(months, owned, rentals, arrivals)
    capacity.sources = [f"Owned, in service: {owned:,} GPUs.", *sources]
    return capacity
