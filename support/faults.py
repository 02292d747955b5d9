"""Tickets opened by telemetry faults.

``detect(now)`` finds faults with a few set-based queries over the hourly rollups (never a loop over the fleet):

- ``xid``: a GPU with a *hardware* XID event in the window (``inventory.telemetry.xid``: a new code on DCGM's
  sticky XID gauge, e.g. 79 fallen off the bus, 74 NVLink): the ticket names each code and its meaning.
  Application errors (13, 31, 43, 45…: the job's own fault) open nothing and degrade nothing;
- ``ecc``: a GPU with ``SUPPORT_ECC_REPEAT`` or more ECC XID events (48, 63, 64, 92, 94, 95, 140) in the window;
  they are never reported as plain XID errors;
- ``row_remap``: a GPU whose DCGM row-remap failure gauge turned to 1 in the window (``inventory.telemetry.remap``):
  a memory row could not be remapped, the GPU must be replaced (NVIDIA's guidance: RMA). A *pending* remap (the
  GPU needs a reset) opens nothing: it is the GPU page's badge and event;
- an event counts once: events from before the latest ticket of the same fault on the GPU (open or resolved)
  open nothing again, so a GPU returned to service after its ticket is not degraded again by the same
  (sticky) code; a new event after that opens a new ticket;
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
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from inventory import lifecycle
from inventory.models import GPU, LifecycleState, Node
from inventory.telemetry import remap, xid
from inventory.telemetry.models import GPUHourly, HealthEvent, NodeHourly, XidEvent
from inventory.telemetry.rollups import floor_hour

from . import notifications, workflow
from .models import Ticket

log = logging.getLogger(__name__)

F = Ticket.Fault
WATCHED = (LifecycleState.IN_SERVICE, LifecycleState.DEGRADED)
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

    events = defaultdict(list)  # GPU id → its new hardware XID events in the window, oldest first
    latest = latest_tickets(F.XID, F.ECC, F.ROW_REMAP)
    for gpu_id, ts, code in (XidEvent.objects.filter(ts__gte=start, kind=xid.HARDWARE, gpu__state__in=WATCHED)
                             .order_by("ts").values_list("gpu_id", "ts", "code")):
        events[gpu_id].append((ts, code))
    for gpu in gpus.filter(pk__in=list(events)):
        seen = events[gpu.pk]
        ecc = since_ticket(latest, F.ECC, gpu, [(ts, code) for ts, code in seen if code in xid.ECC_CODES])
        if len(ecc) >= settings.SUPPORT_ECC_REPEAT:
            faults.append(Fault(F.ECC, event_detail(ecc, hours), node=gpu.node, gpu=gpu))
            continue
        # ECC codes are the ECC check's alone (below its threshold they open nothing): never plain XID errors.
        new = since_ticket(latest, F.XID, gpu, [(ts, code) for ts, code in seen if code not in xid.ECC_CODES])
        if new:
            faults.append(Fault(F.XID, event_detail(new, hours), node=gpu.node, gpu=gpu))

    failed = defaultdict(list)  # GPU id → when its row-remap failure gauge turned to 1 in the window
    for gpu_id, ts in (HealthEvent.objects.filter(ts__gte=start, kind=remap.FAILURE, gpu__state__in=WATCHED)
                       .order_by("ts").values_list("gpu_id", "ts")):
        failed[gpu_id].append((ts, remap.FAILURE))
    for gpu in gpus.filter(pk__in=list(failed)):
        new = since_ticket(latest, F.ROW_REMAP, gpu, failed[gpu.pk])
        if new:
            first = timezone.localtime(new[0][0])
            faults.append(Fault(F.ROW_REMAP, f"DCGM_FI_DEV_ROW_REMAP_FAILURE read 1 at {first:%Y-%m-%d %H:%M}. "
                                             f"{remap.meaning(remap.FAILURE)}", node=gpu.node, gpu=gpu))

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


def latest_tickets(*kinds):
    """(fault, GPU id) → when the latest ticket of that fault on the GPU was opened (one query)."""
    return {(fault, gpu_id): created for fault, gpu_id, created in (
        Ticket.objects.filter(fault__in=kinds, gpu__isnull=False).values_list("fault", "gpu_id")
        .annotate(created=Max("created")).order_by())}


def since_ticket(latest, fault, gpu, events):
    """The events after the latest ticket of ``fault`` on ``gpu`` was opened (all of them if it has none)."""
    opened = latest.get((fault, gpu.pk))
    return [(ts, code) for ts, code in events if opened is None or ts > opened]


def event_detail(events, hours):
    """What the ticket says of the XID events: each code with its meaning and when it was first read."""
    lines = [f"- {xid.describe(code)}, first read at {timezone.localtime(ts):%Y-%m-%d %H:%M}"
             for ts, code in events[:10]]
    more = f"\n- and {len(events) - 10} more" if len(events) > 10 else ""
    return f"{len(events)} XID event(s) in the last {hours} h:\n" + "\n".join(lines) + more


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
        team=node.owner_team if node else None,
    )
    try:
        with transaction.atomic():
            workflow.open_ticket(ticket, None, notify=False)
            asset = lifecycle.lock(fault.asset)  # a page or the API may be moving it right now
            if asset.state == LifecycleState.IN_SERVICE:
                # The lifecycle record is read by every team: the ticket's number and the fault, not its title.
                lifecycle.transition(asset, LifecycleState.DEGRADED, expected=LifecycleState.IN_SERVICE,
                                     reason=f"Ticket #{ticket.pk}: {F(fault.kind).label}")
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


@transaction.atomic
def return_to_service(ticket, user=None):
    """Move the resolved ticket's asset back to service; None if there is nothing to move (any more: the
    ticket and the asset are locked and read again, so a double submit moves it once)."""
    ticket.refresh_from_db(fields=["status"], from_queryset=Ticket.objects.select_for_update(of=("self",)))
    asset = returnable_asset(ticket)
    if asset is None or lifecycle.lock(asset).state not in RETURNABLE:
        return None
    # The lifecycle record is read by every team: the ticket's number, never its (private) title.
    return lifecycle.transition(asset, LifecycleState.IN_SERVICE, user=user, reason=f"Ticket #{ticket.pk} resolved",
                                expected=asset.state)
