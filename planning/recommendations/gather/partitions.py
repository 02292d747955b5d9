"""Per Slurm partition (nodes in service only): utilization, memory, jobs, widths and fabric (``PartitionStats``)."""

from collections import Counter, defaultdict
from datetime import datetime, timedelta

from django.db.models import (
    Avg,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Cast, Coalesce, Greatest

from inventory import capacity
from inventory.models import GPU, FabricAttachment, LifecycleState, Node
from inventory.telemetry import allocation, jobstats, slurm
from inventory.telemetry.matching import NodeMatcher
from inventory.telemetry.models import GPUHourly, SlurmJob, SlurmJobNode
from inventory.telemetry.rollups import floor_hour

from ..rules import (
    THRESHOLDS,
    WIDTHS,
    PartitionStats,
    Width,
    width_of,
)
from .common import FAILED_STATES, FAST_FABRICS, node_prices, window


def partition_stats(now, t=THRESHOLDS):
    start, end = window(now, t)
    in_service = LifecycleState.IN_SERVICE
    rows = GPUHourly.objects.filter(hour__gte=start, hour__lt=end, util_mean__isnull=False,
                                    gpu__node__state=in_service)
    busy = Q(util_max__gte=t.busy_util_max)
    memory = ExpressionWrapper(F("mem_used_mean_gb") / Cast("gpu__gpu_model__memory_gb", FloatField()),
                               output_field=FloatField())
    stats = {}
    for row in (rows.values(partition=F("gpu__node__partition"))
                .annotate(gpus=Count("gpu", distinct=True), gpu_hours=Count("pk"), util_hours=Sum("util_mean"),
                          idle_hours=Count("pk", filter=Q(util_mean__lt=t.idle_util)),
                          busy_hours=Count("pk", filter=busy), busy_util=Sum("util_mean", filter=busy),
                          busy_max=Sum("util_max", filter=busy),
                          memory=Avg(memory, filter=busy & Q(mem_used_mean_gb__isnull=False)),
                          engine=Avg("gr_engine_active_mean", filter=busy),
                          engine_hours=Count("pk", filter=busy & Q(gr_engine_active_mean__isnull=False)))
                .order_by("partition")):
        hours = row["gpu_hours"]
        stats[row["partition"]] = PartitionStats(
            partition=row["partition"], gpus=row["gpus"], gpu_hours=float(hours),
            util_mean=row["util_hours"] / hours, busy_hours=float(row["busy_hours"]),
            busy_util=row["busy_util"] / row["busy_hours"] if row["busy_hours"] else None,
            stall_share=1 - row["busy_util"] / row["busy_max"] if row["busy_max"] else None,
            idle_share=row["idle_hours"] / hours, memory_share=row["memory"],
            engine_active=row["engine"], engine_hours=float(row["engine_hours"]),
        )
    if not stats:
        return []
    add_series(stats, rows, busy, memory)
    add_memory(stats, rows, memory, start, end, now)
    add_jobs(stats, start, end, now)
    multi_node = add_widths(stats, start, end, now)
    add_nodes(stats)
    add_fabric(stats, multi_node)
    return [stats[name] for name in sorted(stats)]


def add_series(stats, rows, busy, memory):
    """Hourly mean utilization, max utilization and frame-buffer use per partition (one query)."""
    cells = defaultdict(dict)
    hours = set()
    for row in (rows.values("hour", partition=F("gpu__node__partition"))
                .annotate(mean_util=Avg("util_mean"), max_util=Avg("util_max"), memory=Avg(memory, filter=busy))
                .order_by()):
        cells[row["partition"]][row["hour"]] = row
        hours.add(row["hour"])
    x = sorted(hours)
    for name, p in stats.items():
        mine = cells[name]

        def values(key, scale=1.0, mine=mine):
            return [None if h not in mine or mine[h][key] is None else round(mine[h][key] * scale, 1) for h in x]

        p.series = {"x": [h.isoformat() for h in x], "util": values("mean_util"), "util_max": values("max_util"),
                    "memory": values("memory", 100.0)}


def add_memory(stats, rows, memory, start, end, now):
    """Frame-buffer use while jobs ran, over the window and per hour (two queries), in place of the busy-hour
    mean wherever Slurm placed jobs on the partition's nodes.

    An hourly rollup averages the frame buffer over the whole hour: a job of ten minutes that filled it reads
    as a sixth full. So each node-hour counts the GPU-hours its jobs held in it (``allocation
    .held_by_node_hour``, at most the GPUs that reported) and the frame buffer used in it (Σ used / the GPU's
    memory, at most what was held: memory outside jobs is not theirs); the share is Σ used / Σ held, a ratio
    that weighs each hour by the time jobs actually ran in it. Node-hours without jobs do not count.
    """
    held = allocation.held_by_node_hour(
        SlurmJobNode.objects.filter(node__state=LifecycleState.IN_SERVICE, node__partition__in=list(stats)),
        start, end, now)
    if not held:
        return
    totals = defaultdict(lambda: [0.0, 0.0])  # partition → [frame buffer used, GPU-hours held]
    hourly = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))  # partition → hour → the same
    for node_id, partition, hour, used, reporting in (
            rows.filter(mem_used_mean_gb__isnull=False)
            .values_list("gpu__node_id", "gpu__node__partition", "hour")
            .annotate(used=Sum(memory), reporting=Count("pk")).order_by()):
        gpu_hours = min(held.get((node_id, hour), 0.0), reporting)
        if gpu_hours <= 0:
            continue
        for cell in (totals[partition], hourly[partition][hour]):
            cell[0] += min(used, gpu_hours)
            cell[1] += gpu_hours
    for name, (used, gpu_hours) in totals.items():
        p = stats[name]
        p.memory_share = used / gpu_hours
        cells = hourly[name]
        p.series["memory"] = [round(100 * cells[h][0] / cells[h][1], 1) if h in cells else None
                              for h in map(datetime.fromisoformat, p.series["x"])]


def add_jobs(stats, start, end, now):
    """Allocated GPU-hours and multi-node share, queue waits, GPUs waiting, failures (four queries)."""
    jobs = SlurmJob.objects.filter(partition__in=list(stats))
    for row in jobstats.multi_node_share(jobs, start, end, now=now):
        if p := stats.get(row["partition"]):
            p.allocated_gpu_hours, p.multi_node_share = row["gpu_hours"] or 0.0, row["share"]
    for row in jobstats.queue_wait_percentiles(jobs.filter(start_time__gte=start, start_time__lt=end)):
        if p := stats.get(row["partition"]):
            p.jobs_started, p.wait_p50_hours, p.wait_p95_hours = row["jobs"], row["p50_hours"], row["p95_hours"]
    gpus = Cast("gpus", IntegerField())
    waited = Greatest(ExpressionWrapper(Coalesce(F("start_time"), Value(now)) - F("submit_time"),
                                        output_field=DurationField()), Value(timedelta(0)))
    ended = Q(end_time__gte=start, end_time__lt=end)
    for row in (jobs.filter(submit_time__gte=start, submit_time__lt=end).values("partition")
                .annotate(wait_time=Sum(ExpressionWrapper(gpus * waited, output_field=DurationField())))
                .order_by()):
        if p := stats.get(row["partition"]):
            p.gpus_waiting = jobstats.hours(row["wait_time"] or timedelta(0)) / ((end - start).total_seconds() / 3600)
    for row in (jobs.filter(Q(end_time__isnull=True) | Q(end_time__gte=start), start_time__lt=end, gpus__gt=0)
                .values("partition")
                .annotate(ended_jobs=Count("pk", filter=ended),
                          failed=Count("pk", filter=ended & Q(state__in=FAILED_STATES)),
                          oom=Count("pk", filter=ended & Q(state="OUT_OF_MEMORY")),
                          oom_users=Count("user", distinct=True,
                                          filter=ended & Q(state="OUT_OF_MEMORY") & ~Q(user="")))
                .order_by()):
        if p := stats.get(row["partition"]):
            p.ended_jobs, p.failed_jobs, p.oom_jobs = row["ended_jobs"], row["failed"], row["oom"]
            p.oom_users = row["oom_users"]


def add_nodes(stats):
    """Nodes in service per partition: count, main site and main node model with its price, and the GPUs in and
    out of service (degraded or in repair) by the capacity model (four queries)."""
    counts = defaultdict(Counter)
    sites, models = {}, {}
    for row in (Node.objects.filter(state=LifecycleState.IN_SERVICE, partition__in=list(stats))
                .values("partition", "site_id", "site__name", "node_model_id", "node_model__name",
                        "node_model__gpu_slots")
                .annotate(n=Count("pk")).order_by()):
        counts[row["partition"]][(row["site_id"], row["node_model_id"])] += row["n"]
        sites[row["site_id"]] = row["site__name"]
        models[row["node_model_id"]] = (row["node_model__name"], row["node_model__gpu_slots"])
    prices = node_prices(list(models)) if models else {}
    for name, gpus in capacity.count_by("partition").items():  # as every page counts them (inventory.capacity)
        if name in stats:
            # GPUs in service by the capacity model, not those that reported: a degraded GPU in a node in service
            # reports but is out of service, a silent one in service is still there to use.
            stats[name].gpus, stats[name].gpus_out_of_service = gpus.in_service, gpus.out_of_service
            stats[name].gpus_arriving = gpus.burn_in
    for name, counter in counts.items():
        p = stats[name]
        (site_id, model_id), _ = counter.most_common(1)[0]
        p.nodes = sum(counter.values())
        p.site_id, p.site_name = site_id, sites[site_id]
        p.node_model_id, (p.node_model_name, p.gpu_slots) = model_id, models[model_id]
        p.node_price = prices.get(model_id)


def add_widths(stats, start, end, now):
    """Per partition: its jobs grouped by the GPU model and fast fabric of their nodes and by node count
    (``WIDTHS``) with their GPU-hours and mean per-GPU utilization; returns {partition: ids of the nodes its
    measured multi-node jobs ran on} (three queries).

    Slurm keeps a job's nodes only as a compressed host list (gpu-[001-004]), which SQL cannot expand
    portably. So the jobs are read in one query and their host lists expanded here; the nodes' ids come in a
    second; in the third the database reduces those nodes' GPU-hours to node-hours (Σ utilization and GPUs
    reporting per node and hour, 8× fewer rows than GPU-hours); each job then adds up its nodes' hours.
    Only full hours inside the job's run count: in the hours it starts and ends the GPUs did other things.
    The second query also reads each node's GPU model and fast fabric (first by name, as subqueries): a job on
    nodes that differ in them is no clean measurement of either and is left out.
    """
    jobs = []
    for partition, hostlist, gpus, started, ended in (
            jobstats.in_window(SlurmJob.objects.filter(partition__in=list(stats)), start, end)
            .values_list("partition", "nodes", "gpus", "start_time", "end_time").order_by()):
        try:
            hosts = slurm.expand_hostlist(hostlist)
        except ValueError:  # a host list the pull let through but nobody can read: the job cannot be placed
            continue
        if hosts:
            jobs.append((partition, hosts, gpus, started, ended))
    matcher = NodeMatcher() if jobs else None  # Slurm's short names against the inventory's FQDNs, any case
    ids = {host: matcher.node_id(host) for _, hosts, *_ in jobs for host in hosts}
    gpu_model = GPU.objects.filter(node=OuterRef("pk")).order_by("gpu_model__name").values("gpu_model__name")[:1]
    fabric = (FabricAttachment.objects.filter(node=OuterRef("pk"), fabric__kind__in=FAST_FABRICS)
              .order_by("fabric__name").values("fabric__name")[:1])
    slots, kinds = {}, {}
    for pk, gpu_slots, model, fast in (Node.objects.filter(pk__in={pk for pk in ids.values() if pk})
                                       .annotate(model=Subquery(gpu_model), fast=Subquery(fabric))
                                       .values_list("pk", "node_model__gpu_slots", "model", "fast") if ids else ()):
        slots[pk], kinds[pk] = gpu_slots, (model or "", fast or "")
    nodes = {host: (pk, slots[pk]) for host, pk in ids.items() if pk in slots}
    node_hours = {(node_id, hour): (util, gpus) for node_id, hour, util, gpus in (
        GPUHourly.objects.filter(gpu__node_id__in=[pk for pk, _ in nodes.values()], hour__gte=start,
                                 hour__lt=end, util_mean__isnull=False)
        .values_list("gpu__node_id", "hour").annotate(util=Sum("util_mean"), gpus=Count("pk")).order_by())
    } if nodes else {}
    widths = {name: {} for name in stats}  # partition → (GPU model, fabric) → the groups by node count
    multi_node = defaultdict(set)
    for partition, hosts, gpus, started, ended in jobs:
        placed = [nodes[host] for host in hosts if host in nodes]
        if len(placed) < len(hosts) or gpus < sum(slots for _, slots in placed):
            continue  # a node not in the inventory, or nodes shared with other jobs: no clean measurement
        if len({kinds[pk] for pk, _ in placed}) > 1:
            continue  # nodes of different GPU models or fabrics: comparable with neither
        first = floor_hour(max(started, start))
        if first < started:
            first += timedelta(hours=1)
        last = min(ended or now, end)
        hours = [first + timedelta(hours=k) for k in range(int((last - first).total_seconds() // 3600))]
        cells = [node_hours[(pk, hour)] for pk, _ in placed for hour in hours if (pk, hour) in node_hours]
        if not cells:
            continue
        model, fast = kind = kinds[placed[0][0]]
        groups = widths[partition].setdefault(kind, [Width(low, high, gpu_model=model, fabric=fast)
                                                     for low, high in WIDTHS])
        w = groups[width_of(len(placed))]
        w.jobs += 1
        w.util_sum += sum(util for util, _ in cells)
        w.gpu_hours += sum(count for _, count in cells)
        if len(placed) > 1:
            multi_node[partition].update(pk for pk, _ in placed)
            w.node_ids.update(pk for pk, _ in placed)
    for name, p in stats.items():
        p.widths = [w for _, groups in sorted(widths[name].items()) for w in groups if w.jobs]
    return multi_node


def add_fabric(stats, multi_node):
    """Per partition, over the nodes its multi-node jobs ran on (``multi_node``: {partition: node ids}), and per
    multi-node group over its own (``Width.node_ids``): the fast fabrics they attach to, the highest
    oversubscription of those attachments' switches, the switches above 1:1 and the weakest node's fast-fabric
    bandwidth per GPU slot (one query)."""
    node_ids = set().union(*multi_node.values()) if multi_node else set()
    if not node_ids:
        return
    attachments = defaultdict(list)
    for node_id, *row in (FabricAttachment.objects.filter(node_id__in=node_ids, fabric__kind__in=FAST_FABRICS)
                          .values_list("node_id", "fabric__name", "switch__name", "switch__oversubscription_ratio",
                                       "ports", "speed_gbps", "node__node_model__gpu_slots")):
        attachments[node_id].append(row)
    for name, ids in multi_node.items():
        p = stats[name]
        for target, nodes in ((p, ids), *((w, w.node_ids) for w in p.widths if w.node_ids)):
            if rows := [row for node_id in sorted(nodes) for row in attachments[node_id]]:
                set_fabric(target, rows)


def set_fabric(target, rows):
    """A partition's or a group's fabric figures from its nodes' fast-fabric attachments."""
    ratios = {switch: float(ratio) for _, switch, ratio, *_ in rows if switch is not None and ratio is not None}
    target.fabrics = sorted({fabric for fabric, *_ in rows})
    target.oversubscription = max(ratios.values(), default=None)
    target.oversubscribed_switches = {switch: ratio for switch, ratio in sorted(ratios.items()) if ratio > 1}
    target.fabric_gbps_per_gpu = min(float(ports * speed) / max(slots, 1) for *_, ports, speed, slots in rows)


# Other apps that know of faults (support: hardware tickets people filed) register a function here:
# ``(since) → {(node id, day)}``, days on which the node or one of its GPUs had a fault. Planning imports no
# app above it; the app registers itself when it loads (``support.apps``).
