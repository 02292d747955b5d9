"""Under-used: reclaim before you buy: idle nodes, teams' use of what they held, nodes stuck before service."""

from collections import defaultdict
from datetime import UTC, timedelta

from django.conf import settings
from django.db.models import (
    Count,
    Sum,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from inventory.costs import gpu_hour_costs
from inventory.lifecycle import state_since
from inventory.models import GPU, LifecycleState, Node
from inventory.telemetry import allocation
from inventory.telemetry.models import GPUHourly, SlurmJobNode
from inventory.telemetry.rollups import floor_hour
from portal.db import related_count

from ..rules import (
    THRESHOLDS,
    IdleNode,
    StuckNode,
    TeamUse,
)
from .common import window


def hour_cost(costs, node_id):
    """(cost per GPU-hour, priced by a contract) of a node: its contracts' cost, else ``IDLE_GPU_HOUR_COST``."""
    return (costs[node_id], True) if node_id in costs else (settings.IDLE_GPU_HOUR_COST, False)


def under_used(now, t=THRESHOLDS):
    """(idle nodes, teams' use of what they held, nodes stuck before service) for the under-used rules: a
    constant number of queries (two for the idle nodes, three for the teams, one for the stuck nodes, and the
    costs' own)."""
    costs = gpu_hour_costs(timezone.localdate(now))
    return idle_nodes(now, costs, t), team_use(now, costs, t), stuck_nodes(now, costs, t)


def idle_nodes(now, costs, t=THRESHOLDS):
    """In-service nodes with idle days (UTC) in the window: per node and day the GPU-hours and Σ utilization,
    summed in the database (one row per node and day)."""
    start, end = window(now, t)
    days = defaultdict(list)
    for node_id, _, gpu_hours, util_hours, hours in (
            GPUHourly.objects.filter(hour__gte=start, hour__lt=end, util_mean__isnull=False,
                                     gpu__node__state=LifecycleState.IN_SERVICE)
            .values_list("gpu__node_id", TruncDate("hour", tzinfo=UTC))
            .annotate(gpu_hours=Count("pk"), util=Sum("util_mean"), hours=Count("hour", distinct=True))
            .order_by()):
        if hours >= t.idle_day_min_hours and util_hours / gpu_hours < t.idle_day_util:
            days[node_id].append((gpu_hours, util_hours))
    idle = {pk: rows for pk, rows in days.items() if len(rows) >= t.idle_days}
    if not idle:
        return []
    nodes = []
    for pk, hostname, partition, site_id in (Node.objects.filter(pk__in=list(idle))
                                             .values_list("pk", "hostname", "partition", "site_id")):
        gpu_hours = sum(h for h, _ in idle[pk])
        util_hours = sum(u for _, u in idle[pk])
        cost, by_contract = hour_cost(costs, pk)
        nodes.append(IdleNode(pk, hostname, partition, site_id, len(idle[pk]), float(gpu_hours),
                              gpu_hours - util_hours / 100, util_hours / gpu_hours, cost, by_contract))
    return nodes


def team_use(now, costs, t=THRESHOLDS):
    """Per Slurm account: the GPU-hours its jobs held on in-service nodes in node-hours with telemetry (each
    node-hour capped at the GPUs that reported, shared among the accounts in proportion) and the busy part
    (held × the node's mean utilization in that hour)."""
    start, end = window(now, t)
    held = defaultdict(lambda: defaultdict(float))  # (node id, hour) → (account, partition) → GPU-hours
    hour_length = timedelta(hours=1)
    for node_id, account, partition, gpus, begin, finish in (
            allocation.in_window(SlurmJobNode.objects.filter(node__state=LifecycleState.IN_SERVICE, gpus__gt=0),
                                 start, end, prefix="job__")
            .annotate(finish=allocation.run_end(now, "job__"))
            .values_list("node_id", "job__account", "job__partition", "gpus", "job__start_time", "finish")):
        begin, finish = max(begin, start), min(finish, end)
        hour = floor_hour(begin)
        while hour < finish:
            held[(node_id, hour)][(account, partition)] += gpus * allocation.hours(
                min(finish, hour + hour_length) - max(begin, hour))
            hour += hour_length
    if not held:
        return []
    readings = {(node_id, hour): (util, reporting) for node_id, hour, util, reporting in (
        GPUHourly.objects.filter(gpu__node_id__in={node_id for node_id, _ in held}, hour__gte=start, hour__lt=end,
                                 util_mean__isnull=False)
        .values_list("gpu__node_id", "hour").annotate(util=Sum("util_mean"), reporting=Count("pk")).order_by())}
    teams = {}
    for (node_id, hour), shares in held.items():
        if (node_id, hour) not in readings:
            continue  # no telemetry: nothing says whether the GPUs worked
        util, reporting = readings[(node_id, hour)]
        scale = min(1.0, reporting / sum(shares.values()))
        cost, by_contract = hour_cost(costs, node_id)
        for (account, partition), gpu_hours in shares.items():
            gpu_hours *= scale
            busy = gpu_hours * util / reporting / 100
            team = teams.setdefault(account, TeamUse(account))
            team.held_gpu_hours += gpu_hours
            team.busy_gpu_hours += busy
            team.idle_cost += (gpu_hours - busy) * cost
            team.contract_priced_hours += gpu_hours if by_contract else 0.0
            team.partitions[partition] = team.partitions.get(partition, 0.0) + gpu_hours
    return list(teams.values())


def stuck_nodes(now, costs, t=THRESHOLDS):
    """Nodes delivered or in burn-in for more than ``stuck_days``, since their lifecycle record (one query)."""
    limit = now - timedelta(days=t.stuck_days)
    nodes = []
    for pk, hostname, state, site_id, site_name, since, gpus in (
            Node.objects.filter(state__in=[LifecycleState.DELIVERED, LifecycleState.BURN_IN])
            .annotate(since=state_since(Node)).filter(since__lt=limit)
            .annotate(gpu_count=related_count(GPU, "node"))
            .values_list("pk", "hostname", "state", "site_id", "site__name", "since", "gpu_count")):
        cost, by_contract = hour_cost(costs, pk)
        nodes.append(StuckNode(pk, hostname, LifecycleState(state).label, site_id, site_name, since,
                               (now - since).days, gpus, cost, by_contract))
    return nodes
