"""Capacity month by month: the GPU-hours the fleet can deliver in each month of a plan's horizon.

Three parts, each in GPUs averaged over the month (× 730 hours for GPU-hours):

- *Owned*: GPUs in service that no rental covers, counted by the capacity model (``inventory.capacity``: the GPU
  and its node in service), as every page counts them. GPUs out of service (degraded, in repair) are not counted:
  the sources say how many, since returning them to service comes before buying.
- *Rented*: each rental contract, for the days of the month it runs: the larger of its ``rented_gpus`` and the
  in-service GPUs of the nodes it covers (those leave with the rental when it ends).
- *Incoming*: GPUs delivered or in burn-in (theirs or their node's) join in the next month; what open purchase
  orders have not delivered yet (node lines: quantity × the model's GPU slots; GPU lines: quantity; an order
  counts the larger of the two, its GPU lines being the GPUs of its nodes when it has both, as a bill of materials
  lists them) joins in the month of ``ordered_on + settings.DELIVERY_LEAD_DAYS`` (the next month if that date has
  passed).

A scoped plan (``scope.Scope``: a partition, a site, a GPU model) counts only the GPUs in its scope: owned and
arriving nodes of the partition / site, their GPUs of the GPU model; rentals only for the nodes in scope they
cover (a rental's extra GPUs elsewhere serve other work); open orders only for the plan's node model or the
scope's GPU model. Nodes a replacement retires (``leaving``: node id → the day it leaves) leave the owned
GPUs from that day.

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


def monthly_gpus(months, owned, rentals, arrivals, departures=()):
    """``Capacity`` from ``owned`` GPUs, ``rentals`` [(start, end, GPUs)], ``arrivals`` [(day, GPUs)] and
    ``departures`` [(day, GPUs)] (owned GPUs that leave from that day)."""
    rented = [sum(gpus * active_share(month, start, end) for start, end, gpus in rentals) for month in months]
    incoming = [sum(gpus * active_share(month, day, None) for day, gpus in arrivals) for month in months]
    owned_by_month = [owned - sum(gpus * active_share(month, day, None) for day, gpus in departures)
                      for month in months]
    return Capacity(months, [float(o) for o in owned_by_month], rented, incoming)


def baseline(first_month, horizon, today=None, scope=None, node_model_id=None, leaving=None):
    """The capacity over ``horizon`` months from ``first_month``, from the inventory and contracts: the fleet's, or
    ``scope``'s (``node_model_id``: the plan's node model, whose open orders count); ``leaving``: {node id: day}."""
    from django.conf import settings
    from django.db.models import Count, Q
    from django.utils import timezone

    from inventory import capacity as fleet

    from ..contracts.coverage import nodes_covered_by
    from ..contracts.models import Contract
    from ..procurement.models import OrderLine, PurchaseOrder

    today = today or timezone.localdate()
    months = [add_months(first_month, i) for i in range(horizon)]
    scoped = scope is not None and not scope.fleet
    # The inventory's GPUs as the capacity model counts them on every page: in service when the GPU and its node
    # are; out of service (degraded, in repair) not counted, said so; delivered or in burn-in joining next month.
    by_node = fleet.count_by("node", **(scope.capacity_filters() if scoped else {}))
    node_gpus = {pk: counts.in_service for pk, counts in by_node.items() if pk is not None and counts.in_service}

    rentals, sources, rented_nodes = [], [], set()
    contracts = list(Contract.objects.filter(Q(end__isnull=True) | Q(end__gte=first_month),
                                             kind=Contract.Kind.RENTAL))
    covered = nodes_covered_by(contracts)
    for contract in contracts:
        nodes = covered.get(contract.pk, set()) & node_gpus.keys()
        rented_nodes |= nodes
        on_nodes = sum(node_gpus[n] for n in nodes)
        count = on_nodes if scoped else max(contract.rented_gpus, on_nodes)
        if count:
            rentals.append((contract.start, contract.end, count))
            until = f"until {contract.end:%Y-%m-%d}" if contract.end else "open-ended"
            sources.append(f"Rental {contract}: {count:,} GPUs, {until}.")
    owned = sum(n for pk, n in node_gpus.items() if pk not in rented_nodes)
    departures = []
    for node_id, day in sorted((leaving or {}).items(), key=lambda item: (item[1], item[0])):
        if node_gpus.get(node_id) and node_id not in rented_nodes:
            departures.append((max(day, first_month), node_gpus[node_id]))
    if departures:
        gone = sum(n for _, n in departures)
        sources.append(f"Leaving (replaced): {gone:,} GPUs from {min(d for d, _ in departures):%b %Y}.")

    next_month = add_months(today, 1)
    arrivals = []
    waiting = sum(counts.burn_in for counts in by_node.values())
    if waiting:
        arrivals.append((next_month, waiting))
        sources.append(f"Delivered or in burn-in: {waiting:,} GPUs from {next_month:%b %Y}.")
    if out := sum(counts.out_of_service for counts in by_node.values()):
        sources.append(f"Out of service (degraded or in repair): {out:,} GPUs, not counted; returned to service "
                       "they serve before anything bought does.")
    lead = timedelta(days=settings.DELIVERY_LEAD_DAYS)
    lines = (OrderLine.objects.filter(order__status__in=(PurchaseOrder.Status.OPEN, PurchaseOrder.Status.PARTIAL))
             .select_related("order", "node_model").annotate(delivered=Count("delivered_items")))
    if scoped:
        ours = Q(pk__in=[])
        if node_model_id:
            ours |= Q(node_model_id=node_model_id)
        if scope.gpu_model_id:
            ours |= Q(gpu_model_id=scope.gpu_model_id)
        lines = lines.filter(ours)
    # Per order, GPUs still due in its nodes and on its GPU lines: the same GPUs when an order lists the GPUs its
    # nodes carry (as a bill of materials does, so that deliveries record them), so the larger of the two counts.
    due = {}  # order → [GPUs due in its nodes, GPUs due on its GPU lines]
    for line in lines:
        missing, counts = max(0, line.quantity - line.delivered), due.setdefault(line.order, [0, 0])
        if line.node_model_id:
            counts[0] += missing * line.node_model.gpu_slots
        elif line.gpu_model_id:
            counts[1] += missing
    for order, counts in due.items():
        if gpus := max(counts):
            day = max(order.ordered_on + lead, next_month)
            arrivals.append((day, gpus))
            sources.append(f"Order {order.reference}: {gpus:,} GPUs expected from {day:%b %Y}.")
    capacity = monthly_gpus(months, owned, rentals, arrivals, departures)
    capacity.sources = [f"Owned, in service: {owned:,} GPUs.", *sources]
    return capacity
