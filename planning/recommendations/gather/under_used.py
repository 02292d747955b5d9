"""Under-used: reclaim before you buy: idle nodes, teams' use of what they held, nodes stuck before service."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, timedelta

from django.conf import settings
from django.db.models import Count, F, FloatField, Max, Q, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.db.models.lookups import GreaterThanOrEqual, LessThan
from django.utils import timezone

from inventory.costs import gpu_hour_costs
from inventory.lifecycle import state_since
from inventory.models import GPU, LifecycleState, Node
from inventory.telemetry import allocation
from inventory.telemetry.models import GPUDaily, GPUHourly, SlurmJobNode
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
    constant number of queries (three for the idle nodes, three for the teams, one for the stuck nodes, and the
    costs' own)."""
    costs = gpu_hour_costs(timezone.localdate(now))
    return idle_nodes(now, costs, t), team_use(now, costs, t), stuck_nodes(now, costs, t)


def idle_nodes(now, costs, t=THRESHOLDS):
    """In-service nodes with ≥ ``idle_days`` idle days (UTC) in the window, with their own history and the fleet's:
    per node and day the GPU-hours and Σ utilization, summed in the database (one row per node and day), from the
    hourly rows in the window and the daily rollups of the ``idle_history_weeks`` before it (three queries)."""
    start, end = window(now, t)
    window_days = _node_days(
        GPUHourly.objects.filter(hour__gte=start, hour__lt=end, util_mean__isnull=False,
                                 gpu__node__state=LifecycleState.IN_SERVICE)
        .values_list("gpu__node_id", "gpu__node__partition", TruncDate("hour", tzinfo=UTC))
        .annotate(gpu_hours=Count("pk"), util=Sum("util_mean"), hours=Count("hour", distinct=True)), t)
    first_day = timezone.localdate(start)  # the daily rows' days are local; the day the window starts in is its own
    history_start = first_day - timedelta(weeks=t.idle_history_weeks)
    history_days = _node_days(
        GPUDaily.objects.filter(day__gte=history_start, day__lt=first_day, util_mean__isnull=False, hours__gt=0,
                                gpu__node__state=LifecycleState.IN_SERVICE)
        .values_list("gpu__node_id", "gpu__node__partition", "day")
        .annotate(gpu_hours=Sum("hours"), util=Sum(F("util_mean") * F("hours"), output_field=FloatField()),
                  hours=Max("hours")), t)
    candidates = {pk: [d for d in days.values() if d.idle] for pk, days in window_days.items()}
    candidates = {pk: idle for pk, idle in candidates.items() if len(idle) >= t.idle_days}
    if not candidates:
        return []
    partition_of = {pk: next(iter(days.values())).partition for pk, days in window_days.items()}
    quiet = _idle_shares(window_days, partition_of)
    fleet, fleet_before = _util(window_days), _util(history_days)
    nodes, by_partition = [], {}  # partition → (utilization in the window, before)
    for pk, hostname, partition, site_id in (Node.objects.filter(pk__in=list(candidates))
                                             .values_list("pk", "hostname", "partition", "site_id")):
        idle = candidates[pk]
        gpu_hours = sum(d.gpu_hours for d in idle)
        util_hours = sum(d.util_hours for d in idle)
        cost, by_contract = hour_cost(costs, pk)
        weeks = defaultdict(list)  # 0: the week just before the window
        for day, d in history_days.get(pk, {}).items():
            weeks[((first_day - day).days - 1) // 7].append(d)
        observed = [days for days in weeks.values() if len(days) >= t.idle_days]
        fleet_shares = [quiet[(pk, d.day)] for d in idle]
        if partition not in by_partition:
            members = [n for n, p in partition_of.items() if p == partition]
            by_partition[partition] = (_util({n: window_days[n] for n in members}),
                                       _util({n: history_days[n] for n in members if n in history_days}))
        nodes.append(IdleNode(
            pk, hostname, partition, site_id, len(idle), float(gpu_hours), gpu_hours - util_hours / 100,
            util_hours / gpu_hours, cost, by_contract,
            weeks_observed=len(observed), weeks_idle=sum(sum(d.idle for d in days) >= t.idle_days for days in observed),
            history_util=_util({pk: history_days[pk]}) if pk in history_days else None,
            shared_idle_days=sum((fleet_share or 0.0) >= t.idle_shared_share for fleet_share, _ in fleet_shares),
            others_idle_share=_mean(fleet_share for fleet_share, _ in fleet_shares),
            partition_idle_share=_mean(partition_share for _, partition_share in fleet_shares),
            fleet_util=fleet, fleet_history_util=fleet_before,
            partition_util=by_partition[partition][0], partition_history_util=by_partition[partition][1]))
    return nodes


@dataclass
class _Day:
    """One node's day with enough hours of readings: GPU-hours with readings, Σ utilization × hours, idle or not."""

    partition: str
    day: object
    gpu_hours: float
    util_hours: float
    idle: bool


def _node_days(rows, t):
    """node id → day → ``_Day``, for the days with enough hours of readings (``idle_day_min_hours``)."""
    days = defaultdict(dict)
    for node_id, partition, day, gpu_hours, util_hours, hours in rows.order_by():
        if hours >= t.idle_day_min_hours and gpu_hours:
            days[node_id][day] = _Day(partition, day, gpu_hours, util_hours, util_hours / gpu_hours < t.idle_day_util)
    return days


def _util(node_days):
    """Mean utilization (%) over the GPU-hours of ``node_days`` (node → day → ``_Day``); None without any."""
    gpu_hours = sum(d.gpu_hours for days in node_days.values() for d in days.values())
    return sum(d.util_hours for days in node_days.values() for d in days.values()) / gpu_hours if gpu_hours else None


FLEET = object()  # the scope of the whole fleet, whatever the partitions are named


def _idle_shares(node_days, partition_of):
    """(node, day) → (share of the fleet's other nodes idle that day, share of its partition's other nodes), None
    where no other node of that scope had readings."""
    idle, seen = defaultdict(int), defaultdict(int)  # (scope, day) → nodes idle, nodes with readings
    for node_id, days in node_days.items():
        for day, d in days.items():
            for scope in (FLEET, partition_of[node_id]):
                seen[(scope, day)] += 1
                idle[(scope, day)] += d.idle
    return {(node_id, day): tuple((idle[(scope, day)] - d.idle) / (seen[(scope, day)] - 1)
                                  if seen[(scope, day)] > 1 else None for scope in (FLEET, partition_of[node_id]))
            for node_id, days in node_days.items() for day, d in days.items()}


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def team_use(now, costs, t=THRESHOLDS):
    """Per Slurm account: the GPU-hours its jobs held on in-service nodes in node-hours with telemetry (each
    node-hour capped at the GPUs that reported, shared among the accounts in proportion), the busy part (held × the
    node's mean utilization in that hour) and what the held GPUs ran: nothing (no process), a process that computed
    nothing, or work at a low mean utilization (``TeamUse``). GPUs no job held ran nothing: a node-hour's GPUs that
    ran nothing count first as those unallocated, so a partly held node never charges a team for its free GPUs."""
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
    # An hour of a GPU ran nothing when its max utilization (its mean where the max is missing) stayed below
    # ``team_unused_util_max``; no process either when its memory used, where reported, stayed near zero.
    peak = Coalesce("util_max", "util_mean")
    ran_nothing, memory = LessThan(peak, t.team_unused_util_max), Coalesce("mem_used_mean_gb", 0.0)
    no_process = Q(ran_nothing) & Q(LessThan(memory, t.team_no_process_memory_gb))
    stalled = Q(ran_nothing) & Q(GreaterThanOrEqual(memory, t.team_no_process_memory_gb))
    low = Q(GreaterThanOrEqual(peak, t.team_unused_util_max)) & Q(util_mean__lt=t.storage_busy_util)
    readings = {(node_id, hour): rest for node_id, hour, *rest in (
        GPUHourly.objects.filter(gpu__node_id__in={node_id for node_id, _ in held}, hour__gte=start, hour__lt=end,
                                 util_mean__isnull=False)
        .values_list("gpu__node_id", "hour")
        .annotate(util=Sum("util_mean"), reporting=Count("pk"), unused=Count("pk", filter=no_process),
                  stalled=Count("pk", filter=stalled), low=Count("pk", filter=low))
        .order_by())}
    teams = {}
    for (node_id, hour), shares in held.items():
        if (node_id, hour) not in readings:
            continue  # no telemetry: nothing says whether the GPUs worked
        util, reporting, unused, stalled, low = readings[(node_id, hour)]
        total = sum(shares.values())
        scale = min(1.0, reporting / total)
        total *= scale
        # What the held GPUs ran (GPU-hours): the GPUs no job held are taken from those that ran nothing first.
        unused_held = max(0.0, unused - (reporting - total))
        stalled_held = min(stalled, total - unused_held)
        low_held = min(low, total - unused_held - stalled_held)
        cost, by_contract = hour_cost(costs, node_id)
        for (account, partition), gpu_hours in shares.items():
            gpu_hours *= scale
            part = gpu_hours / total
            busy = gpu_hours * util / reporting / 100
            team = teams.setdefault(account, TeamUse(account))
            team.held_gpu_hours += gpu_hours
            team.busy_gpu_hours += busy
            team.unused_gpu_hours += unused_held * part
            team.stalled_gpu_hours += stalled_held * part
            team.low_util_gpu_hours += low_held * part
            team.idle_cost += unused_held * part * cost
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
