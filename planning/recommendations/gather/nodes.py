"""Suspect nodes' health: out of warranty, fault days and XID days (``NodeHealth``)."""

from collections import Counter
from datetime import timedelta

from django.contrib.contenttypes.models import ContentType
from django.db.models import (
    Count,
    F,
    OuterRef,
    Q,
    Subquery,
    Sum,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from inventory.models import GPU, LifecycleState, Node, StateTransition
from inventory.telemetry.models import GPUDaily

from ..rules import (
    THRESHOLDS,
    NodeHealth,
)
from .common import node_prices

FAULT_DAY_SOURCES = []


def node_health(now, t=THRESHOLDS):
    """Nodes (not retired) out of warranty or with faults, with their fault days and XID days (five queries)."""
    today = timezone.localdate(now)
    fault_since = now - timedelta(days=t.fault_window_days)
    types = ContentType.objects.get_for_models(Node, GPU)
    node_type, gpu_type = types[Node], types[GPU]
    moves = StateTransition.objects.filter(to_state=LifecycleState.DEGRADED, created__gte=fault_since)
    days = set(moves.filter(content_type=node_type).values_list("object_id", TruncDate("created")).distinct())
    gpu_moves = moves.filter(content_type=gpu_type).values_list("object_id", TruncDate("created")).distinct()
    gpu_moves = list(gpu_moves)
    gpu_nodes = dict(GPU.objects.filter(pk__in={gpu for gpu, _ in gpu_moves}, node__isnull=False)
                     .values_list("pk", "node_id")) if gpu_moves else {}
    days |= {(gpu_nodes[gpu], day) for gpu, day in gpu_moves if gpu in gpu_nodes}
    for source in FAULT_DAY_SOURCES:
        days |= source(fault_since)
    fault_days = Counter(node for node, _ in days)
    xid = {row["node_id"]: row for row in (
        GPUDaily.objects.filter(day__gte=today - timedelta(days=t.xid_window_days), xid_errors__gt=0,
                                gpu__node__isnull=False)
        .values(node_id=F("gpu__node_id"))
        .annotate(errors=Sum("xid_errors"), days=Count("day", distinct=True)).order_by())}
    # A node's fleet: the nodes of its model at its site (not retired), against which its faults are weighed
    # (concentrated: a repair under warranty; spread: ageing). A subquery: no query more.
    fleet = (Node.objects.exclude(state=LifecycleState.RETIRED)
             .filter(site_id=OuterRef("site_id"), node_model_id=OuterRef("node_model_id"))
             .order_by().values("site_id").annotate(n=Count("pk")).values("n"))
    suspects = Node.objects.exclude(state=LifecycleState.RETIRED).filter(
        Q(warranty_end__lt=today) | Q(pk__in=list(fault_days)) | Q(pk__in=list(xid)))
    rows = list(suspects.annotate(fleet=Subquery(fleet))
                .values("pk", "hostname", "site_id", "site__name", "node_model_id", "node_model__name",
                        "warranty_end", "fleet").order_by("hostname"))
    prices = node_prices({row["node_model_id"] for row in rows}) if rows else {}
    return [NodeHealth(node_id=row["pk"], hostname=row["hostname"], site_id=row["site_id"],
                       site_name=row["site__name"], node_model_id=row["node_model_id"],
                       node_model_name=row["node_model__name"], node_price=prices.get(row["node_model_id"]),
                       warranty_end=row["warranty_end"], fault_days=fault_days.get(row["pk"], 0),
                       xid_errors=xid.get(row["pk"], {}).get("errors", 0),
                       xid_days=xid.get(row["pk"], {}).get("days", 0), fleet_nodes=row["fleet"] or 0)
            for row in rows]
