"""The small fleet of the home dashboard's tests (``tests/portal/test_home_dashboard*.py``), with figures the tests
compute by hand: two nodes in service at 80 % and 20 %, one stuck in burn-in, a stale source, tickets, contracts."""

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from inventory.lifecycle import transition
from inventory.models import LifecycleState as L
from inventory.models import Node
from inventory.telemetry.models import GPUHourly, TelemetrySource
from inventory.telemetry.rollups import floor_hour, rollup_usage
from planning.contracts.models import Contract, RenewalAlert
from support.models import Ticket
from tests.factories import make_gpu, make_node, make_site, make_ticket

TODAY = timezone.localdate()
D = timedelta(days=1)


def hours_of(gpu, util, first, count=10):
    """``count`` hourly rows at ``util`` % ending ``first`` hours ago."""
    now = floor_hour(timezone.now())
    return [GPUHourly(gpu=gpu, hour=now - timedelta(hours=first + k), util_mean=util, samples=60) for k in range(count)]


def contract(kind, monthly, currency="USD", start=TODAY - 100 * D, end=TODAY + 300 * D, **kw):
    return Contract.objects.create(kind=kind, vendor="Acme", reference=f"C-{Contract.objects.count() + 1}",
                                   start=start, end=end, monthly_cost=Decimal(monthly), currency=currency, **kw)


def make_dashboard_fleet():
    """Nodes a (80 %) and b (20 %) in service with 2 GPUs each, c in burn-in for 20 days (5 %), d delivered
    yesterday, e delivered a month ago but in burn-in since today; a's warranty has ended."""
    site = make_site(name="Zurich")
    a = make_node(site=site, hostname="node-a", state=L.IN_SERVICE, warranty_end=TODAY - 400 * D)
    b = make_node(site=site, hostname="node-b", state=L.IN_SERVICE, partition="p1", owner_team="llm")
    c = make_node(site=site, hostname="node-c", state=L.BURN_IN)
    d = make_node(site=site, hostname="node-d", state=L.DELIVERED)
    e = make_node(site=site, hostname="node-e", state=L.DELIVERED)
    Node.objects.filter(pk=c.pk).update(created=timezone.now() - 20 * D)
    Node.objects.filter(pk__in=[d.pk]).update(created=timezone.now() - D)
    Node.objects.filter(pk=e.pk).update(created=timezone.now() - 30 * D)
    transition(Node.objects.get(pk=e.pk), L.BURN_IN)
    rows = []
    for node, util in ((a, 80), (b, 20)):
        for slot in range(2):
            gpu = make_gpu(node=node, slot=slot, state=L.IN_SERVICE)
            rows += hours_of(gpu, util, first=1) + hours_of(gpu, 40, first=7 * 24 + 1)  # this week, the one before
    rows += hours_of(make_gpu(node=c, slot=0, state=L.BURN_IN), 5, first=1)
    GPUHourly.objects.bulk_create(rows)
    rollup_usage()  # the usage hours the week's figures read
    TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090",
                                   stale_since=timezone.now() - D)
    TelemetrySource.objects.create(name="prom-ok", kind="prometheus", url="http://prom2:9090")
    make_ticket(title="ECC errors", category=Ticket.Category.HARDWARE, priority="P1", node=a,
                opened=timezone.now() - 2 * D)
    make_ticket(title="Driver question", category=Ticket.Category.SOFTWARE, priority="P4")
    rental = contract(Contract.Kind.RENTAL, 1000, rented_gpus=8)
    contract(Contract.Kind.SUPPORT, 500)
    contract(Contract.Kind.SUPPORT, 999, start=TODAY - 400 * D, end=TODAY - 10 * D)  # ended: not spent
    RenewalAlert.objects.create(contract=rental, notice_deadline=TODAY + 10 * D)
    return {"a": a, "b": b, "c": c, "d": d, "e": e}
