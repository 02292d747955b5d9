"""The fleet's recent GPU faults, as the home page's health tiles count them and the GPU list filters by them
(issue 37): one definition for both, so that a tile's link lists exactly the GPUs it counts.

- hardware XID events (``xid.HARDWARE``: the driver's faults, ECC ones included) read in the last hours;
- ECC errors: the hourly rollup's single- and double-bit counts in the last hours (the hours since the one that
  holds the start);
- failed row remaps: GPUs whose row-remap failure gauge reads 1 now (their "row remap failed" badge).
"""

from datetime import timedelta

from django.db.models import Count, Q, Sum
from django.utils import timezone

from . import remap, xid
from .models import GPUHourly, HealthReading, XidEvent
from .rollups import floor_hour

HOURS = 24  # the home page's window
WINDOWS = {"24": "last 24 hours", "168": "last 7 days"}  # the GPU list's choices (hours: label)


def xid_events(hours=HOURS, now=None):
    """The hardware XID events read in the last ``hours``."""
    since = (now or timezone.now()) - timedelta(hours=hours)
    return XidEvent.objects.filter(kind=XidEvent.Kind.HARDWARE, ts__gte=since)


def ecc_hours(hours=HOURS, now=None):
    """The GPU hours of the last ``hours`` that counted an ECC error (single- or double-bit)."""
    since = floor_hour((now or timezone.now()) - timedelta(hours=hours))
    return GPUHourly.objects.filter(Q(ecc_sbe_errors__gt=0) | Q(ecc_dbe_errors__gt=0), hour__gte=since)


def remap_failed():
    """The row-remap failure gauges that read 1 now (one per GPU)."""
    return HealthReading.objects.filter(kind=remap.FAILURE, value__gt=0)


def gpu_ids(rows):
    """A subquery of the GPUs of ``rows`` (one of the querysets above): what the GPU list filters on."""
    return rows.values("gpu_id")


def counts(hours=HOURS, now=None):
    """The figures of the health tiles: ``{"xid_events", "xid_gpus", "ecc_xid_events", "ecc_errors",
    "ecc_double_bit", "ecc_gpus", "remap_failed"}``. Three queries."""
    events = xid_events(hours, now).aggregate(
        n=Count("pk"), gpus=Count("gpu_id", distinct=True), ecc=Count("pk", filter=Q(code__in=xid.ECC_CODES)))
    ecc = ecc_hours(hours, now).aggregate(sbe=Sum("ecc_sbe_errors"), dbe=Sum("ecc_dbe_errors"),
                                           gpus=Count("gpu_id", distinct=True))
    return {
        "xid_events": events["n"], "xid_gpus": events["gpus"], "ecc_xid_events": events["ecc"],
        "ecc_errors": int((ecc["sbe"] or 0) + (ecc["dbe"] or 0)), "ecc_double_bit": int(ecc["dbe"] or 0),
        "ecc_gpus": ecc["gpus"], "remap_failed": remap_failed().count(),
    }
