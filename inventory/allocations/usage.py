"""What a team used of its allocations: used, running, left, the projected day of exhaustion, the burn-down.

GPU-hours count exactly as every allocation figure does (``allocation_rollup``: a job's GPUs × the part of its run
in the period, on the nodes of the allocation's GPU model when it names one): the allocations page, the team page,
the API and the warnings read ``figures``, and the burn-down ``burn_down``. A period is the local days
[start, end] (``TIME_ZONE``), cut as the utilization ranges cut days. In a fixed number of queries however many
allocations: one rollup read per GPU model named (and one for those naming none), one for the running jobs (and one
per GPU model named).
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Sum
from django.utils import timezone

from inventory.models import GPU, Node
from inventory.telemetry import allocation_rollup
from inventory.telemetry.models import SlurmJob, SlurmJobNode
from inventory.telemetry.rollups import day_start


def period(allocation):
    """[start, end) of the allocation's days, as aware datetimes."""
    return day_start(allocation.start), day_start(allocation.end + timedelta(days=1))


@dataclass
class Figures:
    """One allocation's use at ``now``: ``used`` GPU-hours in the period so far, ``running`` GPUs held by the team's
    jobs now (in scope), and, with a budget, ``left``, ``share`` (used / budget, 0-1+), ``burn_rate`` (GPU-hours a day
    over the last ``ALLOCATION_BURN_RATE_DAYS`` days) and ``exhausted_on`` (the day the budget runs out at that
    rate, None when it lasts the period or nothing burns); ``billing``: ``used`` in Slurm's billing units, each
    partition's GPU-hours × its ``TRESBillingWeights`` weight of ``gres/gpu`` as the latest look at Slurm read it
    (None before one, or when a partition used weighs no GPUs)."""

    used: float
    running: int
    budget: float | None = None
    left: float | None = None
    share: float | None = None
    burn_rate: float = 0.0
    exhausted_on: date | None = None
    state: str = "active"  # upcoming, active, ended
    billing: float | None = None  # ``used`` in Slurm's billing units (``billing``), when known

    @property
    def percent(self):
        return None if self.share is None else round(100 * self.share, 1)

    @property
    def level(self):
        """The highest warning level (``ALLOCATION_ALERT_LEVELS``) the use reached, or None."""
        if self.share is None:
            return None
        reached = [level for level in settings.ALLOCATION_ALERT_LEVELS if 100 * self.share >= level]
        return max(reached) if reached else None


def figures(allocations, now=None):
    """``{allocation pk: Figures}`` of ``allocations`` at ``now``."""
    now = now or timezone.now()
    allocations = list(allocations)
    windows, recent = {}, {}
    rate_days = settings.ALLOCATION_BURN_RATE_DAYS
    for allocation in allocations:
        start, end = period(allocation)
        windows[allocation.pk] = (start, min(end, now))
        recent[allocation.pk] = (max(start, now - timedelta(days=rate_days)), min(end, now))
    used = used_in_windows(allocations, windows, now)
    burned = used_in_windows(allocations, recent, now)
    weights = gpu_billing_weights()
    running = running_gpus(allocations, now)
    found = {}
    for allocation in allocations:
        start, end = period(allocation)
        state = "upcoming" if now < start else "ended" if now >= end else "active"
        partitions = used.get(allocation.pk, {})
        row = Figures(used=round(sum(partitions.values()), 2), running=running.get(allocation.pk, 0), state=state,
                      billing=billing(partitions, weights))
        if allocation.gpu_hours is not None:
            row.budget = allocation.gpu_hours
            row.left = round(allocation.gpu_hours - row.used, 2)
            row.share = row.used / allocation.gpu_hours
            begin, finish = recent[allocation.pk]
            days = (finish - begin).total_seconds() / 86400
            rate = sum(burned.get(allocation.pk, {}).values()) / days if days > 0 else 0.0
            row.exhausted_on = exhaustion(row.left, rate, now, allocation.end)
            row.burn_rate = round(rate, 2)
        found[allocation.pk] = row
    return found


def exhaustion(left, rate, now, last_day):
    """The local day ``left`` GPU-hours run out at ``rate`` a day from ``now``, if by ``last_day`` (today if out)."""
    today = timezone.localdate(now)
    if left <= 0:
        return today
    if rate <= 0:
        return None
    day = timezone.localdate(now + timedelta(days=left / rate))
    return day if day <= last_day else None


def used_in_windows(allocations, windows, now):
    """``{allocation pk: {partition: GPU-hours}}`` of each allocation's team (and partition, GPU model) in its
    window."""
    by_model = defaultdict(list)
    for allocation in allocations:
        start, end = windows[allocation.pk]
        if start < end:
            by_model[allocation.gpu_model_id].append(allocation)
    found = {}
    for model_id, group in by_model.items():
        nodes = None if model_id is None else model_nodes(model_id)
        read = allocation_rollup.Reader(now, nodes=nodes).read({a.pk: windows[a.pk] for a in group},
                                                                ("account", "partition"))
        for allocation in group:
            found[allocation.pk] = per_partition(allocation, read[allocation.pk])
    return found


def per_partition(allocation, groups):
    """``{partition: GPU-hours}`` of the allocation's team and scope among a read's (account, partition) groups."""
    found = defaultdict(float)
    for (account, partition), row in groups.items():
        if account == allocation.team.name and (not allocation.partition or partition == allocation.partition):
            found[partition] += row["gpu_hours"]
    return found


def gpu_billing_weights():
    """``{partition: billing units per GPU-hour}`` (the ``gres/gpu`` weight of ``TRESBillingWeights``) as the latest
    look at Slurm read them; {} before any look, or where no partition weighs GPUs."""
    from .models import SlurmSync  # the sync's record; usage reads it, not the other way round

    latest = SlurmSync.objects.exclude(billing_weights={}).order_by("-created", "-pk").values_list(
        "billing_weights", flat=True).first() or {}
    return {partition: weights["gres/gpu"] for partition, weights in latest.items() if "gres/gpu" in weights}


def billing(partitions, weights):
    """GPU-hours per partition in Slurm's billing units, or None when a partition used has no GPU weight."""
    if not weights or any(partition not in weights for partition, hours in partitions.items() if hours):
        return None
    return round(sum(hours * weights[partition] for partition, hours in partitions.items()), 2)


def model_nodes(model_id):
    """The nodes with GPUs of the model (as the goodput and utilization filters by GPU model select them)."""
    return Node.objects.filter(Exists(GPU.objects.filter(node=OuterRef("pk"), gpu_model_id=model_id))).values("pk")


def running_gpus(allocations, now):
    """``{allocation pk: GPUs}`` the team's jobs in scope hold now (running, started, not ended): one query, and one
    per GPU model named."""
    running = SlurmJob.objects.filter(end_time__isnull=True, start_time__lte=now, state="RUNNING", gpus__gt=0)
    teams = {allocation.team.name for allocation in allocations}
    per_job = defaultdict(int)
    for account, partition, gpus in (running.filter(account__in=teams).values_list("account", "partition")
                                     .annotate(n=Sum("gpus")).order_by()):
        per_job[(account, partition)] += gpus
    per_model = defaultdict(int)
    for model_id in {allocation.gpu_model_id for allocation in allocations} - {None}:
        for account, partition, gpus in (
                SlurmJobNode.objects.filter(job__in=running.filter(account__in=teams), node__in=model_nodes(model_id))
                .values_list("job__account", "job__partition").annotate(n=Sum("gpus")).order_by()):
            per_model[(account, partition, model_id)] += gpus
    found = {}
    for allocation in allocations:
        name = allocation.team.name
        if allocation.gpu_model_id is None:
            found[allocation.pk] = sum(gpus for (account, partition), gpus in per_job.items()
                                       if account == name and (not allocation.partition
                                                               or partition == allocation.partition))
        else:
            found[allocation.pk] = sum(gpus for (account, partition, model), gpus in per_model.items()
                                       if account == name and model == allocation.gpu_model_id
                                       and (not allocation.partition or partition == allocation.partition))
    return found


def burn_down(allocation, now=None):
    """The allocation's day-by-day use: ``{"days": [date], "used": [GPU-hours used from the start to each day's end,
    None after today], "budget", "projected": [GPU-hours at each day's end from today on, at the burn rate; None
    without a budget], "figures": Figures}``. The rollup is read once for every day."""
    now = now or timezone.now()
    start, _ = period(allocation)
    days = [allocation.start + timedelta(days=n) for n in range((allocation.end - allocation.start).days + 1)]
    windows = {day: (start, min(day_start(day + timedelta(days=1)), now)) for day in days if day_start(day) < now}
    cumulative = per_day(allocation, windows, now)
    row = figures([allocation], now)[allocation.pk]
    today, past = timezone.localdate(now), day_fraction(now)
    projected = [None if day < today or row.budget is None
                 else round(row.used + row.burn_rate * ((day - today).days + 1 - past), 2) for day in days]
    return {"days": days, "used": [round(cumulative[day], 2) if day in cumulative else None for day in days],
            "budget": allocation.gpu_hours, "projected": projected, "figures": row}


def per_day(allocation, windows, now):
    """``{day: GPU-hours from the period's start to the day's end}`` (one rollup read for every day)."""
    nodes = None if allocation.gpu_model_id is None else model_nodes(allocation.gpu_model_id)
    read = allocation_rollup.Reader(now, nodes=nodes).read(windows, ("account", "partition"))
    return {day: sum(per_partition(allocation, groups).values()) for day, groups in read.items()}


def day_fraction(now):
    """The part of today (local) already past."""
    local = timezone.localtime(now)
    return (local.hour * 3600 + local.minute * 60 + local.second) / 86400
