"""The last seven days of the fleet as the home dashboard tells them, from the utilization dashboard's own figures
(``charts.FleetDashboard``, the 7-day range), so the two pages agree: utilization against its target and against
the seven days before, Slurm's allocated GPU-hours against the GPU-hours DCGM saw used, the idle GPU-hours and
what they cost, and the least-used nodes in service."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from inventory.models import LifecycleState, Node

from . import queries
from .charts import FleetDashboard

RANGE = "7d"
LEAST_USED = 5


def last_week(now=None, target=None):
    now = now or timezone.now()
    board = FleetDashboard(RANGE, now=now)
    totals = board.totals
    before = queries.fleet_figures(RANGE, now=now - timedelta(days=7))  # the 7 × 24 hours just before
    util, util_before = totals["util_mean"], before["util_mean"]
    nodes = [g for g in board.groups("node") if g["key"] is not None]
    in_service = set(Node.objects.filter(pk__in=[g["key"] for g in nodes], state=LifecycleState.IN_SERVICE)
                     .values_list("pk", flat=True)) if nodes else set()
    # Slurm against DCGM only where both speak: partitions with jobs and telemetry.
    compared = [p for p in board.allocations_by_partition if p["used_gpu_hours"] is not None]
    return {
        "util_mean": util,
        "target": settings.UTILIZATION_TARGET if target is None else target,
        "util_before": util_before,
        "util_change": None if util is None or util_before is None else round(util - util_before, 2),
        "gpu_hours": totals["gpu_hours"],
        "idle_gpu_hours": totals["idle_gpu_hours"],
        "idle_cost": totals["idle_cost"],
        "totals": totals,  # with the idle GPU-hours priced at the default rate (``queries.idle_cost_basis``)
        "default_hour_cost": settings.IDLE_GPU_HOUR_COST,
        "currency": settings.COST_CURRENCY,
        "has_jobs": board.has_jobs,
        "allocated_gpu_hours": round(sum(p["gpu_hours"] for p in compared), 2),
        "used_gpu_hours": round(sum(p["used_gpu_hours"] for p in compared), 2),
        "partitions_compared": len(compared),
        "used_beyond_allocation": [p["name"] for p in compared if p["used_beyond_allocation"]],
        "partitions_with_jobs": len(board.allocations_by_partition),
        "least_used": [g for g in queries.least_used(nodes, limit=None) if g["key"] in in_service][:LEAST_USED],
        "stale_sources": len(queries.stale_sources()),
    }
