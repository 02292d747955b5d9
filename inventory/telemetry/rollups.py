"""Hourly and daily rollups, written with bulk upserts (``INSERT … ON CONFLICT DO UPDATE``) keyed by
(object, hour) or (object, day): writing the same hour twice replaces it, it never adds to it.

Every aggregate is computed by the database over a time range (set-based SQL), never per object in a
Python loop, so the cost grows with the hours touched, not with the size of the fleet's history.
"""

from datetime import datetime, time, timedelta

from django.conf import settings
from django.db.models import Avg, Count, F, Max, Q, Sum
from django.db.models.functions import TruncDate, TruncHour
from django.utils import timezone

from portal.db import bulk_upsert

from .models import GPUDaily, GPUHourly, NodeDaily, NodeHourly, TelemetrySample

ROLLUP_FIELDS = ["util_mean", "util_max", "mem_used_mean_gb", "power_mean_w", "energy_wh", "gr_engine_active_mean",
                 "tensor_active_mean", "xid_errors", "samples"]


def floor_hour(moment):
    return moment.replace(minute=0, second=0, microsecond=0)


def upsert_gpu_hours(matched):
    """``matched``: ``(gpu_id, HourRecord)`` pairs. Returns the hours written."""
    rows = [(gpu_id, record.hour, *(getattr(record, name) for name in ROLLUP_FIELDS)) for gpu_id, record in matched]
    bulk_upsert(GPUHourly, ["gpu_id", "hour"], ROLLUP_FIELDS, rows)
    return {row[1] for row in rows}


def _upsert_aggregates(model, key, aggregated, extra=()):
    """Write ``values().annotate()`` rows (dicts) keyed by ``(key, hour|day)``; returns the periods."""
    period = "hour" if "hour" in {f.name for f in model._meta.fields} else "day"
    fields = [*ROLLUP_FIELDS, *extra]
    rows = [(row[key], row[period], *(row[name] for name in fields)) for row in aggregated]
    bulk_upsert(model, [key, period], fields, rows)
    return {row[1] for row in rows}


def rollup_samples(start, end, interval_seconds):
    """Scraped samples in [start, end) → GPU hours. ``interval_seconds`` (the scrape interval) turns the
    mean power into energy for the part of the hour the samples cover."""
    aggregated = (
        TelemetrySample.objects.filter(ts__gte=start, ts__lt=end)
        .annotate(hour=TruncHour("ts"))
        .values("gpu_id", "hour")
        .annotate(
            util_mean=Avg("util"), util_max=Max("util"), mem_used_mean_gb=Avg("mem_used_gb"),
            power_mean_w=Avg("power_w"), gr_engine_active_mean=Avg("gr_engine_active"),
            tensor_active_mean=Avg("tensor_active"), xid_errors=Count("pk", filter=Q(xid__gt=0)),
            samples=Count("pk"),
        )
    )
    rows = []
    for row in aggregated:
        covered_hours = min(1.0, row["samples"] * interval_seconds / 3600)
        power = row["power_mean_w"]
        row["energy_wh"] = None if power is None else power * covered_hours
        rows.append(row)
    return _upsert_aggregates(GPUHourly, "gpu_id", rows)


def rollup_nodes(start, end):
    """GPU hours in [start, end) → node hours (GPUs counted in the node they are installed in)."""
    aggregated = (
        GPUHourly.objects.filter(hour__gte=start, hour__lt=end, gpu__node__isnull=False)
        .values("hour", node_id=F("gpu__node_id"))
        .annotate(
            util_mean=Avg("util_mean"), util_max=Max("util_max"), mem_used_mean_gb=Sum("mem_used_mean_gb"),
            power_mean_w=Sum("power_mean_w"), energy_wh=Sum("energy_wh"),
            gr_engine_active_mean=Avg("gr_engine_active_mean"), tensor_active_mean=Avg("tensor_active_mean"),
            xid_errors=Sum("xid_errors"), samples=Sum("samples"), gpus_reporting=Count("pk"),
        )
    )
    return _upsert_aggregates(NodeHourly, "node_id", aggregated, ["gpus_reporting"])


def day_start(day):
    return timezone.make_aware(datetime.combine(day, time.min))


def _daily(hourly_model, daily_model, key, start_day, end_day, extra=None):
    aggregated = (
        hourly_model.objects.filter(hour__gte=day_start(start_day), hour__lt=day_start(end_day + timedelta(days=1)))
        .annotate(day=TruncDate("hour"))
        .values(key, "day")
        .annotate(
            util_mean=Avg("util_mean"), util_max=Max("util_max"), mem_used_mean_gb=Avg("mem_used_mean_gb"),
            power_mean_w=Avg("power_mean_w"), energy_wh=Sum("energy_wh"),
            gr_engine_active_mean=Avg("gr_engine_active_mean"), tensor_active_mean=Avg("tensor_active_mean"),
            xid_errors=Sum("xid_errors"), samples=Sum("samples"), hours=Count("pk"), **(extra or {}),
        )
    )
    return _upsert_aggregates(daily_model, key, aggregated, ["hours", *(extra or {})])


def rollup_days(start_day, end_day):
    """Hourly rows of the days [start_day, end_day] → daily rows, for GPUs and nodes."""
    _daily(GPUHourly, GPUDaily, "gpu_id", start_day, end_day)
    _daily(NodeHourly, NodeDaily, "node_id", start_day, end_day, {"gpus_reporting": Max("gpus_reporting")})


def refresh(hours):
    """After GPU hours changed: recompute the node hours and the days they belong to."""
    if not hours:
        return
    first, last = min(hours), max(hours)
    rollup_nodes(first, last + timedelta(hours=1))
    rollup_days(timezone.localdate(first), timezone.localdate(last))


def enforce_retention(now=None):
    """Delete hourly rows older than ``TELEMETRY_HOURLY_RETENTION_DAYS`` and daily rows older than
    ``TELEMETRY_DAILY_RETENTION_DAYS`` (bulk DELETEs). Returns the rows deleted per table."""
    now = now or timezone.now()
    hourly_cutoff = now - timedelta(days=settings.TELEMETRY_HOURLY_RETENTION_DAYS)
    daily_cutoff = (now - timedelta(days=settings.TELEMETRY_DAILY_RETENTION_DAYS)).date()
    return {
        "gpu_hourly": GPUHourly.objects.filter(hour__lt=hourly_cutoff).delete()[0],
        "node_hourly": NodeHourly.objects.filter(hour__lt=hourly_cutoff).delete()[0],
        "gpu_daily": GPUDaily.objects.filter(day__lt=daily_cutoff).delete()[0],
        "node_daily": NodeDaily.objects.filter(day__lt=daily_cutoff).delete()[0],
        "samples": TelemetrySample.objects.filter(ts__lt=floor_hour(now) - timedelta(hours=2)).delete()[0],
    }
