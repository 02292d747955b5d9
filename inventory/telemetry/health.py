"""What a pull learns about GPU health besides the rollups: XID events from the sticky XID gauge
(``xid.py``), health events from the row-remap gauges (``remap.py``), and the MIG instances seen on each GPU.

``save_xid_events`` reads each GPU's gauge readings in time order against the last value stored for it
(``XidReading``) and writes one ``XidEvent`` per new non-zero code (unique per GPU, time and code, so a
retried pull writes nothing twice). ``count_xid_events`` then sets each touched hour's ``xid_errors`` to its
hardware events: the ageing rule and the fault tickets count events, not hours of a sticky value. A gauge that
reads 0 and was stored at 0, nearly every GPU in every pull, only moves its stored time on, in one UPDATE
(``_advance_quiet``): the pull of a 10,000-GPU fleet reads and writes no row of it through Python.

``save_remap_events`` does the same for the row-remap gauges (failure, pending: 0/1), per GPU and gauge against
``HealthReading``: one ``HealthEvent`` each time a gauge turns to 1.
"""

from collections import defaultdict
from datetime import timedelta
from operator import attrgetter, itemgetter

from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from portal import events as events_bus

from . import remap, xid
from .models import GPUHourly, HealthEvent, HealthReading, MigInstance, XidEvent, XidReading
from .rollups import among, floor_hour

HOUR = timedelta(hours=1)
LAST_MOMENT = timedelta(microseconds=1)
# The hour record's fields of each row-remap gauge: its last and highest reading in the hour.
REMAP_FIELDS = {kind: (f"{kind}_last", f"{kind}_max") for kind in remap.GAUGES}


def read_at(hours, now):
    """Hour → when its records' gauges are read: at its end, or now for the current hour (one per hour, not per
    record)."""
    return {hour: min(hour + HOUR - LAST_MOMENT, now) for hour in {record.hour for _, record in hours}}


def readings(hours, samples, now):
    """GPU id → its XID ``xid.Reading``\\ s in time order, from matched hour records (Prometheus) and samples
    (exporter scrapes). An hour's reading is taken at its end, or now for the current hour, so a later pull
    of the same hour reads it again as newer."""
    found, at = defaultdict(list), read_at(hours, now)
    for gpu_id, record in hours:
        if record.xid_last is None:
            continue
        changed = record.xid_changes > 0
        found[gpu_id].append(xid.Reading(at[record.hour], record.xid_last, record.xid_max if changed else None,
                                         changed and record.xid_min == 0))
    for gpu_id, record in samples:
        if record.xid is not None:
            found[gpu_id].append(xid.Reading(ts=record.ts, code=record.xid))
    in_time_order(found)
    return found


def save_xid_events(source, hours, samples, now):
    """Write the XID events in the readings of this pull; returns them as ``(gpu id, ts, code)``."""
    found = readings(hours, samples, now)
    left = _advance_quiet(XidReading.objects.all(), "code", found)
    if not left:
        return []
    state = {gpu_id: (code, ts) for gpu_id, code, ts in
             XidReading.objects.filter(among("gpu_id", left)).values_list("gpu_id", "code", "ts")}
    events, last = [], []
    for gpu_id in (gpu_id for gpu_id in found if gpu_id in left):  # in the readings' order
        before = state.get(gpu_id)
        newer = [reading for reading in found[gpu_id] if before is None or reading.ts > before[1]]
        if not newer:
            continue
        gpu_events, code = xid.events(before[0] if before else 0, newer)
        events += [(gpu_id, ts, value) for ts, value in gpu_events]
        last.append(XidReading(gpu_id=gpu_id, code=code, ts=newer[-1].ts))
    XidEvent.objects.bulk_create(
        [XidEvent(gpu_id=gpu_id, source=source, ts=ts, hour=floor_hour(ts), code=code, kind=xid.kind_of(code))
         for gpu_id, ts, code in events], ignore_conflicts=True, batch_size=2000)
    XidReading.objects.bulk_create(last, update_conflicts=True, unique_fields=["gpu"], update_fields=["code", "ts"])
    announce_xid_events(events)
    return events


def announce_xid_events(events):
    """Tell ``portal.events`` of each XID event (``gpu.xid``): the GPU, its node, the code, its class and meaning
    (one query for all). A retried pull tells the same events again: a subscriber records each once."""
    if not events:
        return
    from inventory.models import GPU  # inventory.models imports the telemetry models

    gpus = {row["pk"]: row for row in GPU.objects.filter(pk__in={gpu_id for gpu_id, _, _ in events}).values(
        "pk", "slot", "uuid", "node_id", "node__hostname", "node__site__name", "node__owner_team_id")}
    for gpu_id, ts, code in events:
        gpu = gpus.get(gpu_id, {})
        events_bus.emit("gpu.xid", {
            "gpu_id": gpu_id, "gpu": gpu.get("slot"), "uuid": gpu.get("uuid", ""), "node_id": gpu.get("node_id"),
            "node": gpu.get("node__hostname") or "no node", "site": gpu.get("node__site__name"),
            "team": gpu.get("node__owner_team_id"), "code": code, "class": xid.kind_of(code),
            "meaning": xid.meaning(code), "at": ts,
        })


def _advance_quiet(stored, field, found):
    """The readings in ``found`` (GPU id → readings) that change nothing, a gauge that read 0 throughout and is
    stored (``stored``, its ``field``) at 0, only move the stored reading's time on: one UPDATE per newest time.
    Returns the GPUs left to read one by one: those with another reading, or none stored, or one stored not 0."""
    quiet = defaultdict(list)
    for gpu_id, values in found.items():
        if not any(reading.code or reading.passed for reading in values):
            quiet[values[-1].ts].append(gpu_id)
    left = set(found)
    for ts, gpu_ids in quiet.items():
        rows = stored.filter(among("gpu_id", gpu_ids))
        rows.filter(ts__lt=ts, **{field: 0}).update(ts=ts)
        # Left: those stored at another value, and those not stored (every GPU at its first pull); not the others'
        # ids, 10,000 at a fleet's pull.
        left = left - set(gpu_ids) | set(rows.exclude(**{field: 0}).values_list("gpu_id", flat=True))
        if rows.count() < len(gpu_ids):
            left |= set(gpu_ids) - set(rows.values_list("gpu_id", flat=True))
    return left


def remap_readings(hours, samples, now):
    """Event kind → GPU id → the row-remap gauge's ``xid.Reading``\\ s in time order (1 for on, 0 for off), read
    as ``readings`` reads the XID gauge: an hour by its end, with its highest value as ``passed``."""
    found, at = {kind: defaultdict(list) for kind in remap.GAUGES}, read_at(hours, now)
    gauges = [(found[kind], attrgetter(*fields)) for kind, fields in REMAP_FIELDS.items()]
    for gpu_id, record in hours:
        ts = at[record.hour]
        for readings_of, figures in gauges:
            last, highest = figures(record)
            if last is not None or highest is not None:
                readings_of[gpu_id].append(xid.Reading(ts, int(bool(last)), int(bool(highest))))
    for gpu_id, record in samples:
        for kind in remap.GAUGES:
            if getattr(record, kind) is not None:
                found[kind][gpu_id].append(xid.Reading(ts=record.ts, code=int(bool(getattr(record, kind)))))
    for readings_of in found.values():
        in_time_order(readings_of)
    return found


def in_time_order(found):
    """Sort each list of readings of ``found`` by time (one reading, nearly always: nothing to sort)."""
    for values in found.values():
        if len(values) > 1:
            values.sort(key=itemgetter(0))


def save_remap_events(source, hours, samples, now):
    """Write the health events in the row-remap readings of this pull; returns them as ``(gpu id, ts, kind)``."""
    found = remap_readings(hours, samples, now)
    left = {kind: _advance_quiet(HealthReading.objects.filter(kind=kind), "value", found[kind]) for kind in found}
    if not any(left.values()):
        return []
    state = {(gpu_id, kind): (value, ts) for gpu_id, kind, value, ts in HealthReading.objects.filter(
        among("gpu_id", set().union(*left.values()))).values_list("gpu_id", "kind", "value", "ts")}
    events, last = [], []
    for kind, readings_of in found.items():
        for gpu_id in (gpu_id for gpu_id in readings_of if gpu_id in left[kind]):  # in the readings' order
            before = state.get((gpu_id, kind))
            newer = [reading for reading in readings_of[gpu_id] if before is None or reading.ts > before[1]]
            if not newer:
                continue
            turned_on, value = xid.events(before[0] if before else 0, newer)
            events += [(gpu_id, ts, kind) for ts, _ in turned_on]
            last.append(HealthReading(gpu_id=gpu_id, kind=kind, value=value, ts=newer[-1].ts))
    HealthEvent.objects.bulk_create(
        [HealthEvent(gpu_id=gpu_id, source=source, ts=ts, hour=floor_hour(ts), kind=kind)
         for gpu_id, ts, kind in events], ignore_conflicts=True, batch_size=2000)
    HealthReading.objects.bulk_create(last, update_conflicts=True, unique_fields=["gpu", "kind"],
                                      update_fields=["value", "ts"])
    return events


def count_xid_events(hours, gpu_ids):
    """Set ``xid_errors`` of the hours in ``hours`` of the GPUs ``gpu_ids`` to their hardware XID events (one
    UPDATE). Only rows whose figure changes are written: those of GPUs with an event in these hours, and any the
    upsert left at another figure than 0."""
    if not hours:
        return
    hours = list(hours)
    hardware = XidEvent.objects.filter(kind=xid.HARDWARE, hour__in=hours)
    counted = Coalesce(Subquery(hardware.filter(gpu=OuterRef("gpu"), hour=OuterRef("hour")).order_by()
                                .values("gpu").annotate(n=Count("pk")).values("n")), 0)
    (GPUHourly.objects.filter(among("gpu_id", gpu_ids), hour__in=hours)
     .filter(Q(xid_errors__gt=0) | Q(gpu_id__in=hardware.filter(among("gpu_id", gpu_ids)).values("gpu_id")))
     .exclude(xid_errors=counted).update(xid_errors=counted))


def save_mig_instances(records, now):
    """Upsert the MIG instances of matched ``(gpu id, record)`` pairs; returns how many."""
    rows = {(gpu_id, instance): MigInstance(gpu_id=gpu_id, instance_id=instance[:20], profile=profile[:40],
                                            first_seen=now, last_seen=now)
            for gpu_id, record in records for instance, profile in record.mig}
    MigInstance.objects.bulk_create(list(rows.values()), update_conflicts=True, unique_fields=["gpu", "instance_id"],
                                    update_fields=["profile", "last_seen"])
    return len(rows)
