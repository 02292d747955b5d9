"""Tickets opened by telemetry faults.

``detect(now)`` finds faults with a few set-based queries over the hourly rollups (never a loop over the fleet):

- ``xid``: a GPU whose hours in the window count samples with an XID error (unless they are ECC errors found now
  or already ticketed);
- ``ecc``: a GPU with ``SUPPORT_ECC_REPEAT`` or more samples reporting an ECC XID (48, 63, 64, 92, 94, 95) in
  the window (exporter sources keep the XID code of each sample; Prometheus sources give the count only);
- ``gpu_missing``: an in-service GPU that reported in the last week, absent from the window while its node
  reported (a GPU never matched to telemetry, e.g. without its UUID yet, opens nothing);
- ``node_silent``: an in-service or degraded node that reported in the last week but not for
  ``SUPPORT_NODE_SILENT_HOURS`` (skipped when no node at all reported: that is the telemetry pipeline, not
  the nodes).

``open_tickets(faults)`` opens one ticket per fault against the asset (its team from the node's owner team),
moves an in-service asset to ``degraded`` through ``inventory.lifecycle``, and opens nothing while a ticket for
the same asset and fault is open (a partial unique index on ``fault_key`` guards the race).
"""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef, Sum
from django.utils import timezone

from inventory import lifecycle
from inventory.models import GPU, LifecycleState, Node
from inventory.telemetry.models import GPUHourly, NodeHourly, TelemetrySample
from inventory.telemetry.rollups import floor_hour

from . import notifications, workflow
from .models import Team, Ticket

log = logging.getLogger(__name__)

F = Ticket.Fault
WATCHED = (LifecycleState.IN_SERVICE, LifecycleState.DEGRADED)
ECC_XIDS = (48, 63, 64, 92, 94, 95)
SILENT_LOOKBACK = timedelta(days=7)


@dataclass(frozen=True)
class Fault:
    kind: str
    detail: str
    node: Node | None = None
    gpu: GPU | None = None

    @property
    def asset(self):
        return self.gpu or self.node

    @property
    def key(self):
        return f"{self.kind}:gpu:{self.gpu.pk}" if self.gpu else f"{self.kind}:node:{self.node.pk}"

    @property
    def title(self):
        return f"{F(self.kind).label} on {self.asset}"


def window_start(now):
    return floor_hour(now) - timedelta(hours=settings.SUPPORT_FAULT_WINDOW_HOURS - 1)


def detect(now=None):
    now = now or timezone.now()
    start = window_start(now)
    hours = settings.SUPPORT_FAULT_WINDOW_HOURS
    faults = []
    gpus = GPU.objects.filter(state__in=WATCHED).select_related("node")

    ecc = dict(TelemetrySample.objects.filter(ts__gte=start, xid__in=ECC_XIDS, gpu__state__in=WATCHED)
               .values("gpu_id").annotate(n=Count("pk")).filter(n__gte=settings.SUPPORT_ECC_REPEAT)
               .values_list("gpu_id", "n"))
    for gpu in gpus.filter(pk__in=ecc):
        faults.append(Fault(F.ECC, f"{ecc[gpu.pk]} samples reported an ECC XID in the last {hours} h.",
                            node=gpu.node, gpu=gpu))

    # ECC errors are XIDs too: a GPU whose ECC errors are found now, or already have an open ticket, is not
    # reported a second time as plain "XID errors".
    ecc_ticket_open = Ticket.objects.open().filter(fault=F.ECC, gpu__isnull=False).values("gpu_id")
    xid = dict(GPUHourly.objects.filter(hour__gte=start, xid_errors__gt=0).exclude(gpu_id__in=ecc)
               .exclude(gpu_id__in=ecc_ticket_open)
               .values("gpu_id").annotate(n=Sum("xid_errors")).values_list("gpu_id", "n"))
    for gpu in gpus.filter(pk__in=xid):
        faults.append(Fault(F.XID, f"{xid[gpu.pk]} samples reported an XID error in the last {hours} h.",
                            node=gpu.node, gpu=gpu))

    node_reported = NodeHourly.objects.filter(node=OuterRef("node"), hour__gte=start, samples__gt=0)
    gpu_reported = GPUHourly.objects.filter(gpu=OuterRef("pk"), hour__gte=start, samples__gt=0)
    gpu_known = GPUHourly.objects.filter(gpu=OuterRef("pk"), hour__gte=now - SILENT_LOOKBACK, samples__gt=0)
    for gpu in gpus.filter(state=LifecycleState.IN_SERVICE, node__isnull=False).filter(
            Exists(node_reported), Exists(gpu_known), ~Exists(gpu_reported)):
        faults.append(Fault(F.GPU_MISSING, f"{gpu.node} reported in the last {hours} h, without this GPU.",
                            node=gpu.node, gpu=gpu))

    silent_since = floor_hour(now) - timedelta(hours=settings.SUPPORT_NODE_SILENT_HOURS - 1)
    if NodeHourly.objects.filter(hour__gte=silent_since, samples__gt=0).exists():
        recent = NodeHourly.objects.filter(node=OuterRef("pk"), hour__gte=silent_since, samples__gt=0)
        known = NodeHourly.objects.filter(node=OuterRef("pk"), hour__gte=now - SILENT_LOOKBACK, samples__gt=0)
        for node in Node.objects.filter(state__in=WATCHED).filter(Exists(known), ~Exists(recent)):
            faults.append(Fault(F.NODE_SILENT, f"No telemetry from {node} for "
                                               f"{settings.SUPPORT_NODE_SILENT_HOURS} h.", node=node))
    return faults


def describe(fault):
    return (f"Opened automatically from telemetry: **{F(fault.kind).label}** on `{fault.asset}`.\n\n"
            f"{fault.detail}\n\nThe asset was set *degraded*; resolving this ticket offers to return it to service.")


def open_ticket(fault, notify=True):
    """The fault's ticket, or None while one is open for the same asset and fault."""
    if Ticket.objects.open().filter(fault_key=fault.key).exists():
        return None
    node = fault.node
    ticket = Ticket(
        title=fault.title[:200], description=describe(fault), category=Ticket.Category.HARDWARE,
        priority=Ticket.Priority.P2, source=Ticket.Source.TELEMETRY, fault=fault.kind, fault_key=fault.key,
        node=node, gpu=fault.gpu,
        team=Team.objects.filter(name=node.owner_team).first() if node and node.owner_team else None,
    )
    try:
        with transaction.atomic():
            workflow.open_ticket(ticket, None, notify=False)
            asset = fault.asset
            asset.refresh_from_db(fields=["state"])
            if asset.state == LifecycleState.IN_SERVICE:
                lifecycle.transition(asset, LifecycleState.DEGRADED, reason=f"Ticket #{ticket.pk}: {fault.title}")
    except IntegrityError:  # another run opened it first
        return None
    if notify:
        notifications.notify(ticket, notifications.CREATED)
    return ticket


def open_tickets(faults, notify=True):
    opened = [ticket for fault in faults if (ticket := open_ticket(fault, notify)) is not None]
    if opened:
        log.info("Opened %d ticket(s) from telemetry faults", len(opened))
    return opened


RETURNABLE = (LifecycleState.DEGRADED, LifecycleState.IN_REPAIR)


def returnable_asset(ticket):
    """The node or GPU a resolved ticket may return to service, or None."""
    if ticket.is_open:
        return None
    asset = ticket.gpu or ticket.node
    return asset if asset is not None and asset.state in RETURNABLE else None


def return_to_service(ticket, user=None):
    asset = returnable_asset(ticket)
    if asset is None:
        return None
    return lifecycle.transition(asset, LifecycleState.IN_SERVICE, user=user,
                                reason=f"Ticket #{ticket.pk} resolved: {ticket.title}")
