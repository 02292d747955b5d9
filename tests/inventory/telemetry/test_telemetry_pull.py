"""The pull flow and the rollups, with a stand-in collector: windows, upserts, backoff, staleness."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from inventory.models import (
    AllocationDaily,
    AllocationHourly,
    GPUDaily,
    GPUHourly,
    NodeDaily,
    NodeHourly,
    TelemetrySample,
    TelemetrySource,
    UnknownSeries,
)
from inventory.telemetry import pull as pull_module
from inventory.telemetry import tasks
from inventory.telemetry.records import Collected, HourRecord, SampleRecord, SeriesKey, SourceError
from inventory.telemetry.rollups import enforce_retention
from tests.factories import make_gpu, make_node

NOW = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
H = timedelta(hours=1)


class StandIn:
    """A collector whose answers the test chooses; it records the windows it was asked for."""

    def __init__(self):
        self.windows, self.answers = [], []

    def __call__(self, source, start, end):
        self.windows.append((start, end))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def collector(monkeypatch):
    stand_in = StandIn()
    monkeypatch.setattr(pull_module, "collectors", lambda: {kind: stand_in for kind in TelemetrySource.Kind})
    return stand_in


@pytest.fixture
def fleet(db):
    node = make_node(hostname="dgx-01")
    return node, [make_gpu(node=node, slot=i, uuid=f"GPU-{i:04d}") for i in range(2)]


def source(**kw):
    return TelemetrySource.objects.create(**{"name": "prom", "kind": "prometheus", "url": "http://prom:9090",
                                             "backfill_hours": 24, "interval_seconds": 300, **kw})


def hour(gpu_uuid, at, util, power=500.0, **kw):
    return HourRecord(series=SeriesKey(uuid=gpu_uuid), hour=at, util_mean=util, util_max=util + 5,
                      mem_used_mean_gb=40.0, power_mean_w=power, energy_wh=power, samples=60, **kw)


def test_first_contact_backfills_then_resumes_from_synced_until(fleet, collector):
    src = source()
    synced = NOW.replace(minute=0)
    collector.answers = [Collected(synced_until=synced), Collected(synced_until=synced + H)]
    pull_module.pull(src, now=NOW)
    assert collector.windows[0] == (datetime(2026, 12, 1, 10, tzinfo=UTC), NOW)  # 24 h back, on the hour
    src.refresh_from_db()
    assert src.synced_until == synced and src.last_success_at == NOW and src.next_attempt_at == NOW + 5 * H / 60
    pull_module.pull(src, now=NOW + H)
    assert collector.windows[1][0] == synced


def test_upserts_replace_rows_and_roll_up_nodes_and_days(fleet, collector):
    node, (gpu0, gpu1) = fleet
    at = datetime(2026, 12, 2, 8, tzinfo=UTC)
    first = Collected(hours=[hour("GPU-0000", at, 80), hour("GPU-0001", at, 40)], synced_until=at + H)
    again = Collected(hours=[hour("gpu-0000", at, 90), hour("GPU-0001", at, 40)], synced_until=at + H)
    collector.answers = [first, again]
    src = source()
    pull_module.pull(src, now=NOW)
    pull_module.pull(src, now=NOW)  # a retried / overlapping pull
    assert GPUHourly.objects.count() == 2
    assert GPUHourly.objects.get(gpu=gpu0).util_mean == 90  # replaced, not added (UUIDs match case-blind)
    node_hour = NodeHourly.objects.get(node=node, hour=at)
    assert (node_hour.util_mean, node_hour.gpus_reporting, node_hour.energy_wh) == (65, 2, 1000)
    day = GPUDaily.objects.get(gpu=gpu1)
    assert (day.day.isoformat(), day.util_mean, day.hours) == ("2026-12-02", 40, 1)
    assert NodeDaily.objects.get(node=node).energy_wh == 1000


def test_match_by_hostname_and_index_and_list_unknown_series(fleet, collector):
    node, (gpu0, gpu1) = fleet
    at = datetime(2026, 12, 2, 9, tzinfo=UTC)
    by_host = HourRecord(series=SeriesKey(hostname="dgx-01.cluster.local", gpu_index="1"), hour=at, util_mean=10)
    stranger = HourRecord(series=SeriesKey(uuid="GPU-ffff", hostname="ghost", gpu_index="0", model_name="H100"),
                          hour=at, util_mean=99)
    collector.answers = [Collected(hours=[by_host, stranger], synced_until=at + H)]
    summary = pull_module.pull(source(), now=NOW)
    assert GPUHourly.objects.get().gpu == gpu1
    unknown = UnknownSeries.objects.get()
    assert (unknown.key, unknown.hostname, unknown.model_name) == ("GPU-ffff", "ghost", "H100")
    assert summary["unknown"] == 1


def test_future_samples_are_dropped(fleet, collector):
    future = Collected(hours=[hour("GPU-0000", NOW + 5 * H, 50)], synced_until=NOW)
    collector.answers = [future]
    pull_module.pull(source(), now=NOW)
    assert not GPUHourly.objects.exists()


def test_failures_back_off_exponentially_and_mark_the_source_stale(fleet, collector):
    src = source(interval_seconds=60)
    collector.answers = [SourceError("connection refused"), SourceError("HTTP 500"), Collected(synced_until=NOW)]
    with pytest.raises(SourceError):
        pull_module.pull(src, now=NOW)
    src.refresh_from_db()
    assert (src.stale_since, src.consecutive_failures, src.last_error) == (NOW, 1, "connection refused")
    assert src.next_attempt_at == NOW + timedelta(seconds=60)
    later = NOW + timedelta(minutes=2)
    with pytest.raises(SourceError):
        pull_module.pull(src, now=later)
    src.refresh_from_db()
    assert src.stale_since == NOW  # stale since the first failure
    assert src.next_attempt_at == later + timedelta(seconds=120)
    pull_module.pull(src, now=later + H)
    src.refresh_from_db()
    assert src.stale_since is None and src.consecutive_failures == 0 and src.last_error == "HTTP 500"
    assert pull_module.backoff_seconds(20, 60) == 3600  # capped at an hour


def test_scraped_samples_roll_up_into_hours(fleet, collector):
    node, (gpu0, _) = fleet
    key = SeriesKey(uuid="GPU-0000")
    first = Collected(samples=[SampleRecord(series=key, ts=NOW - timedelta(minutes=2), util=20, power_w=300)])
    second = Collected(samples=[SampleRecord(series=key, ts=NOW, util=60, power_w=500, xid=79)])
    collector.answers = [first, second, second]
    src = source(kind="exporter", interval_seconds=60)
    for _ in range(3):  # the last one repeats the same scrape: no double counting
        pull_module.pull(src, now=NOW)
    assert TelemetrySample.objects.count() == 2
    row = GPUHourly.objects.get(gpu=gpu0)
    assert (row.util_mean, row.util_max, row.samples, row.xid_errors) == (40, 60, 2, 1)
    assert row.energy_wh == pytest.approx(400 * 2 / 60)  # 2 one-minute samples at 400 W mean


def test_counter_increases_count_in_the_hour_of_the_later_reading(fleet, collector):
    """Energy from DCGM's counter: a pair of readings that spans the hour counts in the later hour, the
    first reading measures nothing on its own, a reading after a gap of over an hour neither."""
    _, (gpu0, _) = fleet
    key = SeriesKey(uuid="GPU-0000")
    readings = [(datetime(2026, 12, 2, 8, 59, tzinfo=UTC), 1e9), (datetime(2026, 12, 2, 9, 1, tzinfo=UTC), 1e9 + 7.2e6),
                (datetime(2026, 12, 2, 10, 30, tzinfo=UTC), 1e9 + 7.2e6 + 3.6e9)]  # 89 minutes later
    collector.answers = [Collected(samples=[SampleRecord(series=key, ts=ts, util=50, power_w=400, energy_mj=mj)])
                         for ts, mj in readings]
    src = source(kind="exporter", interval_seconds=60)
    for ts, _ in readings:
        pull_module.pull(src, now=ts)

    energy = dict(GPUHourly.objects.filter(gpu=gpu0).values_list("hour__hour", "energy_wh"))
    assert energy == {8: None, 9: pytest.approx(2.0), 10: None}  # not 0, and not a power estimate either


@override_settings(TELEMETRY_HOURLY_RETENTION_DAYS=30, TELEMETRY_DAILY_RETENTION_DAYS=365)
def test_retention_drops_only_old_rows(fleet, collector):
    _, (gpu0, _) = fleet
    old, recent = NOW - timedelta(days=31), NOW - timedelta(days=29)
    for at in (old, recent):
        GPUHourly.objects.create(gpu=gpu0, hour=at.replace(minute=0), util_mean=1, samples=1)
    GPUDaily.objects.create(gpu=gpu0, day=(NOW - timedelta(days=400)).date(), util_mean=1, hours=1)
    jobs = TelemetrySource.objects.create(name="jobs", kind="slurm", url="http://slurm/")
    for at in (old, recent):  # the allocated GPU-hours are kept as long as the utilization they are compared with
        AllocationHourly.objects.create(source=jobs, hour=at.replace(minute=0), account="a", gpu_hours=1)
    for days in (400, 300):
        AllocationDaily.objects.create(source=jobs, day=(NOW - timedelta(days=days)).date(), account="a", gpu_hours=1)
    deleted = enforce_retention(now=NOW)
    assert deleted["gpu_hourly"] == 1 and deleted["gpu_daily"] == 1
    assert deleted["allocation_hourly"] == 1 and deleted["allocation_daily"] == 1
    assert GPUHourly.objects.get().hour == recent.replace(minute=0)
    assert AllocationHourly.objects.get().hour == recent.replace(minute=0)


def test_poll_queues_due_sources_once(fleet, monkeypatch, django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(tasks.pull_telemetry_source, "delay", queued.append)
    due = source(name="due")
    source(name="waiting", next_attempt_at=datetime(2999, 1, 1, tzinfo=UTC))
    source(name="off", enabled=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.poll_telemetry_sources() == 1
    assert queued == [due.pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.poll_telemetry_sources() == 0  # already queued: not twice


def test_two_polls_at_once_queue_a_due_source_once(fleet, monkeypatch, django_capture_on_commit_callbacks):
    """Two workers run beat's poll messages together: the other poll claims the source between this poll's read
    and its claim, and only one of them queues the pull."""
    queued = []
    monkeypatch.setattr(tasks.pull_telemetry_source, "delay", queued.append)
    due = source(name="due")
    is_due = TelemetrySource.is_due

    def other_poll_runs_now(self, now=None):
        monkeypatch.setattr(TelemetrySource, "is_due", is_due)
        assert tasks.poll_telemetry_sources() == 1
        return is_due(self, now)

    monkeypatch.setattr(TelemetrySource, "is_due", other_poll_runs_now)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.poll_telemetry_sources() == 0
    assert queued == [due.pk]


def test_pull_task_records_the_failure_instead_of_raising(fleet, collector):
    src = source()
    collector.answers = [SourceError("timed out after 10 s")]
    assert tasks.pull_telemetry_source(src.pk) == {"error": "timed out after 10 s"}
    src.refresh_from_db()
    assert src.last_error == "timed out after 10 s" and src.is_stale


@pytest.mark.parametrize("vendor", ["postgresql", "other"])
def test_bulk_upsert_inserts_then_replaces(fleet, monkeypatch, vendor):
    """Both paths of ``bulk_upsert``: COPY + merge on PostgreSQL, ``bulk_create`` elsewhere (the demo's SQLite)."""
    from django.db import connection

    from portal.db import bulk_upsert

    if vendor != "postgresql":
        monkeypatch.setattr(connection, "vendor", vendor)
    _, (gpu0, gpu1) = fleet
    at = datetime(2026, 12, 2, 8, tzinfo=UTC)
    fields = ["util_mean", "samples"]
    bulk_upsert(GPUHourly, ["gpu_id", "hour"], fields, [(gpu0.pk, at, 10.0, 1), (gpu1.pk, at, 20.0, 1)])
    bulk_upsert(GPUHourly, ["gpu_id", "hour"], fields, [(gpu0.pk, at, 30.0, 2)])
    assert sorted(GPUHourly.objects.values_list("util_mean", "samples")) == [(20.0, 1), (30.0, 2)]


@pytest.mark.parametrize("url, ok", [
    ("http://prometheus:9090", True), ("https://prom.example.org/", True), ("http://10.0.0.5:9400/metrics", True),
    ("ftp://prom:9090", False), ("prometheus:9090", False), ("http://:9090", False), ("http://prom:99999", False),
])
def test_source_urls_accept_cluster_service_names(url, ok, settings):
    from django.core.exceptions import ValidationError

    from inventory.telemetry.models import validate_source_url

    settings.OUTBOUND_ALLOWED_NETWORKS = ["10.0.0.0/8"]  # a private address only where allowed (test_outbound)

    if ok:
        validate_source_url(url)
    else:
        with pytest.raises(ValidationError):
            validate_source_url(url)
