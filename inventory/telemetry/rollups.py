"""Hourly and daily rollups, written with bulk upserts (``INSERT … ON CONFLICT DO UPDATE``) keyed by
(object, hour) or (object, day): writing the same hour twice replaces it, it never adds to it.

Every aggregate is computed by the database over a time range (set-based SQL), never per object in a
Python loop, so the cost grows with the hours touched, not with the size of the fleet's history. (Energy
counter readings are paired by a window function in SQL and summed in one pass over the rows.)

A pull refreshes only what it touched (``refresh(hours, gpu_ids)``): its GPUs' nodes' hours and usage hours, its GPUs'
days and their nodes' usage days (a ``Scope``), under a transaction-long advisory lock per node, so pulls of different
sites (disjoint nodes) run side by side and two writers of one node take turns. A full recompute (no scope: the
functions called alone, the benchmarks, the migrations) takes the fleet's lock, which every refresh shares.
"""

import json
import logging
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from operator import attrgetter

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import (
    Avg,
    BooleanField,
    Count,
    Exists,
    F,
    FloatField,
    Func,
    Max,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    Window,
)
from django.db.models.functions import Lead, TruncDate, TruncHour
from django.utils import timezone

from inventory.models import GPU
from portal.db import bulk_upsert

from . import dcgm
from .dcgm import TOTAL_ENERGY, counter_increase, mj_to_wh
from .models import (
    AllocationDaily,
    AllocationHourly,
    GPUDaily,
    GPUHourly,
    NodeDaily,
    NodeHourly,
    TelemetrySample,
    UsageDaily,
    UsageHourly,
)
from .partitions import drop_months_before, ensure_partitions, maintain, months_of

log = logging.getLogger(__name__)

# The longest time between two samples whose energy counter increase is counted (or twice the scrape interval).
COUNTER_GAP = timedelta(hours=1)

HEALTH_FIELDS = ["gpu_temp_max_c", "memory_temp_max_c", "sm_clock_mean_mhz", "ecc_sbe_errors", "ecc_dbe_errors",
                 "nvlink_errors", "pcie_replays", "retired_pages", "remapped_rows"]
ROLLUP_FIELDS = ["util_mean", "util_max", "mem_used_mean_gb", "power_mean_w", "energy_wh", "gr_engine_active_mean",
                 "tensor_active_mean", "xid_errors", "samples", *HEALTH_FIELDS]


def health_aggregates(levels):
    """How hours of GPUs add up into a node's hour or a day: the hottest reading, the mean clock, errors summed;
    retired pages and remapped rows (totals, not counts in the hour) with ``levels`` (Sum over a node's GPUs,
    Max over a day's hours). SQL's SUM/MAX/AVG of nothing but nulls is null: not reported stays not reported."""
    return {
        "gpu_temp_max_c": Max("gpu_temp_max_c"), "memory_temp_max_c": Max("memory_temp_max_c"),
        "sm_clock_mean_mhz": Avg("sm_clock_mean_mhz"), "ecc_sbe_errors": Sum("ecc_sbe_errors"),
        "ecc_dbe_errors": Sum("ecc_dbe_errors"), "nvlink_errors": Sum("nvlink_errors"),
        "pcie_replays": Sum("pcie_replays"), "retired_pages": levels("retired_pages"),
        "remapped_rows": levels("remapped_rows"),
    }


def floor_hour(moment):
    return moment.replace(minute=0, second=0, microsecond=0)


def upsert_gpu_hours(matched):
    """``matched``: ``(gpu_id, HourRecord)`` pairs. Returns the hours written."""
    values = attrgetter("hour", *ROLLUP_FIELDS)
    rows = [(gpu_id, *values(record)) for gpu_id, record in matched]
    return _upsert(GPUHourly, "gpu_id", "hour", ROLLUP_FIELDS, rows)


def _upsert(model, key, period, fields, rows):
    """Upsert rows ``(key, period, *fields)``; returns the periods (hours or days) written. Hourly tables get
    their months' partitions first (PostgreSQL)."""
    periods = {row[1] for row in rows}
    if period == "hour":
        ensure_partitions(model, periods)
    bulk_upsert(model, [key, period], fields, rows)
    return periods


def _upsert_aggregates(model, key, aggregated, extra=()):
    """Write ``values().annotate()`` rows (dicts) keyed by ``(key, hour|day)``; returns the periods."""
    period = _period(model)
    fields = [*ROLLUP_FIELDS, *extra]
    return _upsert(model, key, period, fields, [(row[key], row[period], *(row[name] for name in fields))
                                                for row in aggregated])


def _period(model):
    return "hour" if "hour" in {f.name for f in model._meta.fields} else "day"


def _insert_aggregated(model, key, aggregated, extra=()):
    """Write a ``values(key, period).annotate(...)`` queryset keyed by ``(key, hour|day)`` with one
    ``INSERT … SELECT … ON CONFLICT DO UPDATE``: the rows never travel to Python and back."""
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    names = [key, _period(model), *ROLLUP_FIELDS, *extra]
    columns = [quote(model._meta.get_field(name.removesuffix("_id")).column) for name in names]
    updates = ", ".join(f"{column} = EXCLUDED.{column}" for column in columns[2:])
    sql, params = aggregated.order_by().query.sql_with_params()
    # WHERE true: SQLite reads the ON of ON CONFLICT after a bare SELECT as a join's.
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)}) "
                       f"SELECT {', '.join(quote(name) for name in names)} FROM ({sql}) AS aggregated WHERE true "
                       f"ON CONFLICT ({columns[0]}, {columns[1]}) DO UPDATE SET {updates}", params)


class AmongIds(Func):
    """``expression`` among ``values`` (ids, unless ``db_type`` says otherwise) in one parameter however many there are
    (a pull touches up to the whole fleet): ``= ANY(array)`` on PostgreSQL, which hashes it and tells the planner its
    length, ``IN json_each`` on SQLite."""

    output_field = BooleanField()

    def __init__(self, expression, values, db_type="bigint"):
        super().__init__(expression)
        self.values, self.db_type = sorted(values), db_type

    def as_sql(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.get_source_expressions()[0])
        return f"{sql} = ANY(%s::{self.db_type}[])", [*params, array_text(self.values)]

    def as_sqlite(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.get_source_expressions()[0])
        return f"{sql} IN (SELECT value FROM json_each(%s))", [*params, json.dumps(self.values)]


def array_text(values):
    """PostgreSQL's text of an array of ``values`` (all ints, or all strings, quoted), for a ``%s::type[]``
    parameter: psycopg quotes a list element by element, about 20 ms for 10,000 ids."""
    values = list(values)
    if not values or isinstance(values[0], int):
        return "{" + ",".join(map(str, values)) + "}"
    return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


def among(field, values, db_type="bigint"):
    """A filter: ``field`` (a lookup path) among ``values``."""
    return Q(AmongIds(F(field), values, db_type))


def rollup_samples(start, end, interval_seconds, new_since=None, gpu_ids=None):
    """Scraped samples in [start, end) → GPU hours (of the GPUs ``gpu_ids``, None: every GPU's).

    Energy: in an hour where samples carry DCGM's energy counter, what the counter measured
    (``counter_energy``; resets in samples from ``new_since`` on, those the pull just brought, are logged).
    Elsewhere, the mean power × the part of the hour the samples cover (samples × ``interval_seconds``,
    the scrape interval)."""
    samples = TelemetrySample.objects.all() if gpu_ids is None else TelemetrySample.objects.filter(
        among("gpu_id", gpu_ids))
    aggregated = (
        samples.filter(ts__gte=start, ts__lt=end)
        .annotate(hour=TruncHour("ts"))
        .values("gpu_id", "hour")
        .annotate(
            util_mean=Avg("util"), util_max=Max("util"), mem_used_mean_gb=Avg("mem_used_gb"),
            power_mean_w=Avg("power_w"), gr_engine_active_mean=Avg("gr_engine_active"),
            # XID events are counted by the pull from the gauge's changes (``health.count_xid_events``).
            tensor_active_mean=Avg("tensor_active"), xid_errors=Value(0),
            samples=Count("pk"), counter_readings=Count("energy_mj"),
            gpu_temp_max_c=Max("gpu_temp_c"), memory_temp_max_c=Max("memory_temp_c"),
            sm_clock_mean_mhz=Avg("sm_clock_mhz"), retired_pages=Max("retired_pages"),
            remapped_rows=Max("remapped_rows"),
        )
    )
    max_gap = max(COUNTER_GAP, timedelta(seconds=2 * interval_seconds))
    metered = counter_energy(samples, start, end, max_gap, new_since or start)
    errors = counter_errors(samples, start, end, max_gap)
    rows = []
    for row in aggregated:
        counted = errors.get((row["gpu_id"], row["hour"]), {})
        row.update({name: counted.get(name) for name in dcgm.ERROR_COUNTERS.values()})
        for name in ("retired_pages", "remapped_rows"):  # read as floats, stored as the whole numbers they are
            row[name] = None if row[name] is None else round(row[name])
        power, covered_hours = row["power_mean_w"], min(1.0, row["samples"] * interval_seconds / 3600)
        if row["counter_readings"]:  # what the counter measured; None while it has measured nothing
            row["energy_wh"] = metered.get((row["gpu_id"], row["hour"]))
        else:
            row["energy_wh"] = None if power is None else power * covered_hours
        rows.append(row)
    return _upsert_aggregates(GPUHourly, "gpu_id", rows)


def counter_energy(samples, start, end, max_gap, new_since):
    """(gpu_id, hour) → Wh that DCGM's energy counter measured in the hours of [start, end), from ``samples``.

    Two consecutive readings of a GPU's counter (``LEAD`` over its readings by time, in SQL) measure the
    increase between them, counted in the hour of the later one. The reading before ``start`` pairs with
    the first one in the window while it is still stored and at most ``max_gap`` older; the first reading
    of a GPU, or the first after a longer gap, measures nothing on its own. A counter that went back
    (driver reload, reboot) counts its new value, the energy since the reset, as Prometheus' ``increase``
    does; resets at or after ``new_since`` are logged, once per GPU."""
    def following(field):
        return Window(Lead(field), partition_by=[F("gpu_id")], order_by=F("ts").asc())

    pairs = (
        samples.filter(energy_mj__isnull=False, ts__gte=start - max_gap, ts__lt=end)
        .annotate(next_ts=following("ts"), next_mj=following("energy_mj"))
        .filter(next_ts__gte=start)  # the later reading is in the window (filtered after the window function)
        .values_list("gpu_id", "ts", "energy_mj", "next_ts", "next_mj")
    )
    energy, resets = defaultdict(float), defaultdict(list)
    for gpu_id, ts, value, next_ts, next_value in pairs.iterator(chunk_size=10_000):
        if next_ts - ts > max_gap:
            continue
        increase, reset = counter_increase(value, next_value)
        if reset and next_ts >= new_since:
            resets[gpu_id].append((next_ts, value, next_value))
        energy[(gpu_id, floor_hour(timezone.localtime(next_ts)))] += mj_to_wh(increase)  # the hour TruncHour gives
    names = GPU.objects.select_related("node").in_bulk(resets) if resets else {}  # one query, only for resets
    for gpu_id, events in resets.items():
        ts, before, after = events[0]
        log.warning("GPU %s: %s went back %d time(s), first at %s from %.0f to %.0f mJ (driver reload or reboot); "
                    "counted the energy since each reset", names.get(gpu_id, gpu_id), TOTAL_ENERGY, len(events),
                    ts.isoformat(timespec="seconds"), before, after)
    return energy


def counter_errors(samples, start, end, max_gap):
    """(gpu_id, hour) → {rollup field: errors counted} for DCGM's error counters (ECC, NVLink, PCIe replay) in
    the hours of [start, end) of ``samples``: paired as ``counter_energy`` pairs the energy counter (the increase
    between two consecutive readings at most ``max_gap`` apart, in the later one's hour; a counter that went back
    counts its new value). An hour whose readings pair with none has no figure (None), never 0."""
    counters = list(dcgm.ERROR_COUNTERS)

    def following(field):
        return Window(Lead(field), partition_by=[F("gpu_id")], order_by=F("ts").asc())

    reported = Q()
    for name in counters:
        reported |= Q(**{f"{name}__isnull": False})
    pairs = (
        samples.filter(reported, ts__gte=start - max_gap, ts__lt=end)
        .annotate(next_ts=following("ts"), **{f"next_{name}": following(name) for name in counters})
        .filter(next_ts__gte=start)
        .values_list("gpu_id", "ts", "next_ts", *counters, *(f"next_{name}" for name in counters))
    )
    counted = defaultdict(dict)
    for gpu_id, ts, next_ts, *values in pairs.iterator(chunk_size=10_000):
        if next_ts - ts > max_gap:
            continue
        hour = counted[(gpu_id, floor_hour(timezone.localtime(next_ts)))]
        for name, value, next_value in zip(counters, values, values[len(counters):], strict=False):
            if value is not None and next_value is not None:
                field = dcgm.ERROR_COUNTERS[name]
                hour[field] = hour.get(field, 0) + round(counter_increase(value, next_value)[0])
    return counted


@dataclass(frozen=True)
class Scope:
    """What a pull's refresh recomputes: ``gpu_ids``, the GPUs whose hours it wrote, and ``node_ids``, the nodes they
    are in or were in since the first day it touched (a GPU that moved leaves its old node's hours and usage days
    to be recomputed without it: what it held there is older than the move); ``spare``: also the GPUs in no node."""

    gpu_ids: frozenset
    node_ids: frozenset
    spare: bool

    @classmethod
    def of(cls, gpu_ids, since):
        """The scope of ``gpu_ids``; ``since``: the first instant of the first day the refresh touches."""
        nodes = set(GPU.objects.filter(among("pk", gpu_ids)).order_by().values_list("node_id", flat=True).distinct())
        history = GPU.history.model
        changed = list(history.objects.filter(among("id", gpu_ids), history_date__gte=since)
                       .values_list("id", "node_id"))
        nodes |= {node_id for _, node_id in changed}
        if changed:  # where the GPUs that changed since then were before it (few: RMA swaps, moves, state changes)
            earlier = history.objects.filter(id=OuterRef("pk"), history_date__lt=since).order_by("-history_date")
            nodes |= set(GPU.objects.filter(Exists(earlier), pk__in=[pk for pk, _ in changed]).order_by()
                         .values_list(Subquery(earlier.values("node_id")[:1]), flat=True))
        return cls(frozenset(gpu_ids), frozenset(nodes - {None}), None in nodes)


# Advisory locks (PostgreSQL), two-key form (namespace, key): one per node, and the fleet's (FLEET), which a full
# recompute takes alone and every scoped refresh shares. Key 0 stands for the GPUs in no node (node ids start at 1).
LOCKS, FLEET = 35_0001, -1


@contextmanager
def _locked(scope, using="default"):
    """A transaction holding the locks of ``scope`` (None: the whole fleet) until it ends."""
    connection = connections[using]
    with transaction.atomic(using=using):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                if scope is None:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCKS, FLEET])
                else:
                    cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", [LOCKS, FLEET])
                    advisory_locks(cursor, LOCKS, scope.node_ids | ({0} if scope.spare else set()))
        yield


def advisory_locks(cursor, namespace, keys):
    """Hold the advisory locks ``(namespace, key)`` of ``keys`` (ids) until the transaction ends, taken in one
    statement in key order: two transactions locking overlapping sets never wait for each other in a circle."""
    keys = array_text(sorted(keys))
    cursor.execute("SELECT count(pg_advisory_xact_lock(%s, (n %% 2147483647)::int)) "
                   "FROM (SELECT unnest(%s::bigint[]) AS n ORDER BY 1) AS ordered", [namespace, keys])


def rollup_nodes(start, end, scope=None):
    """GPU hours in [start, end) → node hours and usage hours (GPUs counted in the node they are installed in); of
    ``scope``'s nodes (None: every node)."""
    with _locked(scope):
        _node_hours(start, end, scope)


def _node_hours(start, end, scope):
    hours = GPUHourly.objects.filter(hour__gte=start, hour__lt=end, gpu__node__isnull=False)
    if scope is not None:
        hours = hours.filter(among("gpu__node_id", scope.node_ids))
    aggregated = hours.values("hour", node_id=F("gpu__node_id")).annotate(
        util_mean=Avg("util_mean"), util_max=Max("util_max"), mem_used_mean_gb=Sum("mem_used_mean_gb"),
        power_mean_w=Sum("power_mean_w"), energy_wh=Sum("energy_wh"),
        gr_engine_active_mean=Avg("gr_engine_active_mean"), tensor_active_mean=Avg("tensor_active_mean"),
        xid_errors=Sum("xid_errors"), samples=Sum("samples"), gpus_reporting=Count("pk"),
        **health_aggregates(Sum),
    )
    ensure_partitions(NodeHourly, months_of(start, end))
    _insert_aggregated(NodeHourly, "node_id", aggregated, ["gpus_reporting"])
    _usage_hours(start, end, GPUHourly, UsageHourly, scope)


def day_start(day):
    return timezone.make_aware(datetime.combine(day, time.min))


def _daily(hourly_model, daily_model, key, start_day, end_day, ids=None, extra=None):
    hours = hourly_model.objects.filter(hour__gte=day_start(start_day), hour__lt=day_start(end_day + timedelta(days=1)))
    if ids is not None:
        hours = hours.filter(among(key, ids))
    aggregated = (
        hours.annotate(day=TruncDate("hour"))
        .values(key, "day")
        .annotate(
            # Hours with a utilization reading, as the hourly ranges count them (hours with only power are not);
            # first, while "util_mean" still names the column rather than the mean below.
            hours=Count("util_mean"),
            util_mean=Avg("util_mean"), util_max=Max("util_max"), mem_used_mean_gb=Avg("mem_used_mean_gb"),
            power_mean_w=Avg("power_mean_w"), energy_wh=Sum("energy_wh"),
            gr_engine_active_mean=Avg("gr_engine_active_mean"), tensor_active_mean=Avg("tensor_active_mean"),
            xid_errors=Sum("xid_errors"), samples=Sum("samples"), **health_aggregates(Max), **(extra or {}),
        )
    )
    _insert_aggregated(daily_model, key, aggregated, ["hours", *(extra or {})])


def rollup_days(start_day, end_day, scope=None):
    """Hourly rows of the days [start_day, end_day] → daily rows, for GPUs and nodes, and their usage days; of
    ``scope``'s GPUs and nodes (None: every one's)."""
    with _locked(scope):
        _days(start_day, end_day, scope)


def _days(start_day, end_day, scope):
    gpus, nodes = (None, None) if scope is None else (scope.gpu_ids, scope.node_ids)
    _daily(GPUHourly, GPUDaily, "gpu_id", start_day, end_day, gpus)
    _daily(NodeHourly, NodeDaily, "node_id", start_day, end_day, nodes, {"gpus_reporting": Max("gpus_reporting")})
    _usage(start_day, end_day, GPUDaily, UsageDaily, scope)


def rollup_usage(start_day=None, end_day=None, gpu_daily=GPUDaily, usage_daily=UsageDaily, scope=None,
                 gpu_hourly=GPUHourly, usage_hourly=UsageHourly):
    """GPU rows of the days [start_day, end_day] (open ends: every day) → usage days (daily GPU rows) and usage hours
    (hourly GPU rows), per node (where the GPU is now) and GPU model: one INSERT … SELECT each; of ``scope``'s nodes
    (None: every node). The rows of those nodes and periods are replaced, not upserted, so a GPU that moved leaves
    none of its hours on its old node. The migrations that create the tables pass their historical models
    (``usage_daily`` or ``usage_hourly`` None: not that table)."""
    table = usage_daily if usage_daily is not None else usage_hourly
    with _locked(scope, router.db_for_write(table)):
        if usage_daily is not None:
            _usage(start_day, end_day, gpu_daily, usage_daily, scope)
        if usage_hourly is not None:
            start = None if start_day is None else day_start(start_day)
            end = None if end_day is None else day_start(end_day + timedelta(days=1))
            _usage_hours(start, end, gpu_hourly, usage_hourly, scope)


def _usage(start_day, end_day, gpu_daily, usage_daily, scope):
    _replace_usage(gpu_daily, usage_daily, "day", start_day, end_day and end_day + timedelta(days=1), scope,
                   gpus=Count("pk"), gpu_hours=Sum("hours"),
                   util_hours=Sum(F("util_mean") * F("hours"), output_field=FloatField()))


def _usage_hours(start, end, gpu_hourly, usage_hourly, scope):
    _replace_usage(gpu_hourly, usage_hourly, "hour", start, end, scope, gpus=Count("pk"), util_hours=Sum("util_mean"))


def _replace_usage(gpu_rows, usage_rows, period, start, end, scope, **sums):
    """Replace ``usage_rows`` of the periods in [start, end) (None: open) of ``scope`` by ``gpu_rows`` with a
    utilization reading, summed per period, node and GPU model (``sums``)."""
    connection = connections[router.db_for_write(usage_rows)]
    bounds = {f"{period}__{op}": moment for op, moment in (("gte", start), ("lt", end)) if moment is not None}
    old = usage_rows.objects.using(connection.alias).filter(**bounds)
    new = gpu_rows.objects.using(connection.alias).filter(util_mean__isnull=False, **bounds)
    if scope is not None:
        old = old.filter(_in_nodes("node", scope))
        new = new.filter(_in_nodes("gpu__node", scope))
    summed = (new.values(period, node_id=F("gpu__node_id"), gpu_model_id=F("gpu__gpu_model_id"))
              .annotate(**sums).order_by())
    sql, params = summed.query.sql_with_params()
    table = connection.ops.quote_name(usage_rows._meta.db_table)
    columns = ", ".join([period, "node_id", "gpu_model_id", *sums])
    old.delete()
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM ({sql}) summed", params)


def _in_nodes(node, scope):
    """``node`` (a lookup path) among ``scope``'s nodes, or none where it counts the GPUs in no node."""
    installed = among(f"{node}_id", scope.node_ids)
    return installed | Q(**{f"{node}__isnull": True}) if scope.spare else installed


def refresh(hours, gpu_ids=None):
    """After GPU hours changed: recompute the node hours, usage hours and the days they belong to. ``gpu_ids``: the
    GPUs whose hours changed; only their nodes' hours and usage hours, their own days and their nodes' usage days are
    recomputed, with the same figures as a full recompute gives those rows (None: every GPU's, the full recompute)."""
    if not hours:
        return
    first, last = min(hours), max(hours)
    first_day, last_day = timezone.localdate(first), timezone.localdate(last)
    scope = None if gpu_ids is None else Scope.of(gpu_ids, day_start(first_day))
    with _locked(scope):
        _node_hours(first, last + timedelta(hours=1), scope)
        _days(first_day, last_day, scope)


def enforce_retention(now=None):
    """Delete hourly rows older than ``TELEMETRY_HOURLY_RETENTION_DAYS`` and daily rows older than
    ``TELEMETRY_DAILY_RETENTION_DAYS``. Returns the rows deleted per table.

    On PostgreSQL the hourly tables' months past the cutoff are dropped whole (``partitions``); a DELETE takes the
    rest, in the month the cutoff falls in. Runs daily, so it also creates the coming months' partitions."""
    now = now or timezone.now()
    hourly_cutoff = now - timedelta(days=settings.TELEMETRY_HOURLY_RETENTION_DAYS)
    daily_cutoff = (now - timedelta(days=settings.TELEMETRY_DAILY_RETENTION_DAYS)).date()
    maintain([GPUHourly, NodeHourly], now)

    def hourly(model):
        return drop_months_before(model, hourly_cutoff) + model.objects.filter(hour__lt=hourly_cutoff).delete()[0]

    return {
        "gpu_hourly": hourly(GPUHourly),
        "node_hourly": hourly(NodeHourly),
        "usage_hourly": UsageHourly.objects.filter(hour__lt=hourly_cutoff).delete()[0],
        "gpu_daily": GPUDaily.objects.filter(day__lt=daily_cutoff).delete()[0],
        "node_daily": NodeDaily.objects.filter(day__lt=daily_cutoff).delete()[0],
        "usage_daily": UsageDaily.objects.filter(day__lt=daily_cutoff).delete()[0],
        # Allocated GPU-hours: kept as long as the utilization rows they are compared with (the jobs stay).
        "allocation_hourly": AllocationHourly.objects.filter(hour__lt=hourly_cutoff).delete()[0],
        "allocation_daily": AllocationDaily.objects.filter(day__lt=daily_cutoff).delete()[0],
        "samples": TelemetrySample.objects.filter(ts__lt=floor_hour(now) - timedelta(hours=2)).delete()[0],
    }
