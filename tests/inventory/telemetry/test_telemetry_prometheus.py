"""The Prometheus collector: against a real Prometheus (Debian's ``prometheus``, started here on a loopback
port, scraping the simulator's exporter every second), and against a stub server for what a real one
rarely does on cue (errors, timeouts, bad values, long windows)."""

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from django.utils import timezone

from inventory.management.commands.simulate_telemetry import serve_in_thread
from inventory.models import GPUHourly, NodeHourly, PullReport, TelemetrySource, UnknownSeries, XidEvent
from inventory.telemetry import dcgm, prometheus, sim_health, simulator
from inventory.telemetry.models import HealthEvent
from inventory.telemetry.pull import pull
from inventory.telemetry.records import SourceError
from inventory.telemetry.rollups import floor_hour
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server
from tests.helpers.pgserver import free_port

PROMETHEUS = os.environ.get("PORTAL_PROMETHEUS", "/usr/bin/prometheus")
ROLLUP = ["util_mean", "util_max", "mem_used_mean_gb", "power_mean_w", "energy_wh", "gr_engine_active_mean",
          "tensor_active_mean", "xid_errors", "samples"]


# --- a real Prometheus --------------------------------------------------------------------------------------


def prometheus_or_fail():
    """Fails (never skips) without the binary, so a machine without it cannot pass the suite by accident."""
    executable = shutil.which(PROMETHEUS)
    if not executable:
        pytest.fail(f"The Prometheus test needs {PROMETHEUS} (Debian: apt-get install prometheus; "
                    "or set PORTAL_PROMETHEUS).")
    return executable


class RealPrometheus:
    """``prometheus`` in the foreground, temporary storage, scraping ``target`` every second."""

    def __init__(self, target):
        self.folder = Path(tempfile.mkdtemp(prefix="cluster-portal-prom-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (self.folder / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: dcgm\n    static_configs:\n      - targets: ['{target}']\n")
        self.log = open(self.folder / "prometheus.log", "w")  # closed in stop()
        self.process = subprocess.Popen(
            [prometheus_or_fail(), f"--config.file={self.folder / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.folder / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.folder,
        )

    def query(self, promql):
        answer = requests.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=30).json()
        return answer["data"]["result"]

    def wait_for_samples(self, series, samples, deadline=180):
        """Until each of ``series`` GPUs has at least ``samples`` utilization samples."""
        until = time.monotonic() + deadline
        while time.monotonic() < until:
            assert self.process.poll() is None, (self.folder / "prometheus.log").read_text()[-2000:]
            try:
                counts = self.query("count_over_time(DCGM_FI_DEV_GPU_UTIL[10m])")
            except (requests.RequestException, ValueError, KeyError):
                counts = []
            if len(counts) >= series and all(int(c["value"][1]) >= samples for c in counts):
                return
            time.sleep(0.5)
        log = (self.folder / "prometheus.log").read_text()[-2000:]
        pytest.fail(f"Prometheus has no samples after {deadline} s: {log}")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def fleet(db):
    """Two GPUs in a node in burn-in (the simulator runs them at ~100 %): one the exporter names by a UUID
    the inventory has, one by a UUID it lacks (matched by Hostname + gpu), plus one GPU on a host the
    inventory does not know at all."""
    node = make_node(hostname="dgx-it-001", partition="train-h200", state="burn_in")
    by_uuid = make_gpu(node=node, slot=0, uuid="GPU-11111111-2222-4333-8444-555555555555")
    by_slot = make_gpu(node=node, slot=1, uuid="")
    served = simulator.fleet()
    served[1] = dataclasses.replace(served[1], uuid="GPU-0b0b0b0b-2222-4333-8444-555555555555")
    stranger = dataclasses.replace(served[0], uuid="GPU-99999999-2222-4333-8444-555555555555",
                                   node=dataclasses.replace(served[0].node, hostname="dgx-it-999"))
    return by_uuid, by_slot, [*served, stranger]


def test_pull_from_a_real_prometheus(fleet, monkeypatch):
    by_uuid, by_slot, served = fleet
    # The GPU matched by UUID reports XID 79 the whole time (the simulator's own episodes are random), and an
    # energy counter that counts 1 Wh a second from now on, far from what its power says.
    real_xid, real_energy, started = simulator.xid, simulator.energy_mj, time.time()
    monkeypatch.setattr(simulator, "xid", lambda gpu, t: 79 if gpu.uuid == by_uuid.uuid else real_xid(gpu, t))
    monkeypatch.setattr(simulator, "energy_mj", lambda gpu, t: 3.6e6 * (t - started) if gpu.uuid == by_uuid.uuid
                        else real_energy(gpu, t))
    # DCGM blanks (issue 34): the other GPU is an L40S (no memory sensor: DCGM's "not supported") whose ECC counter
    # is "not supported" too (a mean or increase of it must not pass for a figure); the first one's row remap failed.
    served[1] = dataclasses.replace(served[1], model_name="L40S")
    real_health = sim_health.health_sample

    def health(gpu, t, util, power):
        values = real_health(gpu, t, util, power)
        return {**values, dcgm.ECC_SBE_VOL: sim_health.NOT_SUPPORTED} if gpu.uuid == served[1].uuid else values

    monkeypatch.setattr(sim_health, "health_sample", health)
    monkeypatch.setattr(sim_health, "ROW_REMAP_FAILED", {("dgx-it-001", 0)})
    exporter = serve_in_thread(port=0, fleet=lambda: served)
    server = RealPrometheus(f"127.0.0.1:{exporter.server_address[1]}")
    try:
        server.wait_for_samples(series=3, samples=3)
        # Stop the exporter: Prometheus gets no new samples, so both pulls below see the same data.
        exporter.shutdown()
        exporter.server_close()
        time.sleep(2.5)
        source = TelemetrySource.objects.create(name="prom", kind="prometheus", url=server.url, backfill_hours=3,
                                                timeout_seconds=10)

        summary = pull(source)
        rows = {(row.gpu_id, row.hour): [getattr(row, name) for name in ROLLUP] for row in GPUHourly.objects.all()}
        node_rows = NodeHourly.objects.count()
        again = pull(source)
    finally:
        server.stop()

    assert summary["unknown"] == 1 and again["unknown"] == 1
    assert UnknownSeries.objects.get(source=source).key == served[-1].uuid
    assert {gpu_id for gpu_id, _ in rows} == {by_uuid.pk, by_slot.pk}
    for gpu in (by_uuid, by_slot):
        hours = GPUHourly.objects.filter(gpu=gpu)
        assert sum(row.samples for row in hours) >= 3
        for row in hours:
            assert 95 <= row.util_mean <= row.util_max <= 100  # burn-in
            assert 70 < row.mem_used_mean_gb < 75  # 90 % of 80 GiB
            assert 300 < row.power_mean_w <= 700
            assert 0.9 < row.gr_engine_active_mean <= 1 and 0.6 < row.tensor_active_mean < 0.7
            if row.samples == 1:  # an hour the run just touched: one reading of the counter measures nothing
                assert row.energy_wh is None
            # health (issue 19): a burn-in GPU runs warm at its boost clock, counts no errors, has no remapped rows
            assert 50 < row.gpu_temp_max_c < 90 and row.sm_clock_mean_mhz > 1900
            assert row.remapped_rows == 0 and row.retired_pages is None
            if gpu == by_uuid:
                assert row.gpu_temp_max_c < row.memory_temp_max_c < 90 and row.ecc_sbe_errors in (0, None)
            else:  # the L40S: DCGM's blanks are no value, neither 9.2e18 °C nor 0 errors
                assert row.memory_temp_max_c is None and row.ecc_sbe_errors is None
    # energy: increase() of the counter over the hour, about one sample interval (1 s) per sample
    measured = GPUHourly.objects.filter(gpu=by_uuid, samples__gt=1)
    assert measured and all(row.energy_wh == pytest.approx(row.samples, abs=1.5) for row in measured)  # 1 Wh a s
    for row in GPUHourly.objects.filter(gpu=by_slot, samples__gt=1):  # the simulator's counter: its power × time
        assert 300 * (row.samples - 1) / 3600 < row.energy_wh < 700 * (row.samples + 1) / 3600
    # XID 79 the whole time is one event (the gauge is sticky), in the first hour; the second pull adds none.
    assert sum(GPUHourly.objects.filter(gpu=by_uuid).values_list("xid_errors", flat=True)) == 1
    assert list(XidEvent.objects.filter(gpu=by_uuid).values_list("code", "kind")) == [(79, "hardware")]
    assert not GPUHourly.objects.filter(gpu=by_slot, xid_errors__gt=0).exists()
    # the failed row remap: one health event, in the first hour; the blanks said on the data-quality panel
    assert list(HealthEvent.objects.values_list("gpu", "kind")) == [(by_uuid.pk, "row_remap_failure")]
    examples = PullReport.objects.filter(source=source).first().examples["dcgm_blank"]
    assert examples == [
        "single-bit ECC errors: blank, not supported or not permissioned on 1 GPU (DCGM sentinel)",
        "GPU-memory temperature: blank, not supported or not permissioned on 1 GPU (DCGM sentinel)"]
    # idempotent: the second pull rewrote the same hours with the same values
    assert {(row.gpu_id, row.hour): [getattr(row, name) for name in ROLLUP] for row in GPUHourly.objects.all()} == rows
    assert NodeHourly.objects.count() == node_rows == len({hour for _, hour in rows})
    source.refresh_from_db()
    assert source.synced_until == floor_hour(source.last_success_at) and source.last_error == ""


# --- a stub Prometheus --------------------------------------------------------------------------------------

NOW = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
H = timedelta(hours=1)
GPU = {"UUID": "GPU-aaaaaaaa-0000-4000-8000-000000000001", "Hostname": "dgx-01", "gpu": "0",
       "modelName": "NVIDIA H100 80GB HBM3", "job": "dcgm", "instance": "dgx-01:9400"}
TARGETS = {"status": "success", "data": {"activeTargets": [
    {"labels": {"job": "dcgm", "instance": "dgx-01:9400"}, "scrapeInterval": "30s", "health": "up"}]}}


def matrix(*series):
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": labels, "values": [[end.timestamp(), value] for end, value in points]} for labels, points in series
    ]}}


class FakePrometheus:
    """Answers each rollup query with the points the test gives per field (none: an empty matrix)."""

    def __init__(self, stub, points, targets=TARGETS):
        self.fields = {query: field for field, query in prometheus.queries().items()}
        self.points = points
        stub.route("/api/v1/query_range", self.answer)
        stub.route("/api/v1/targets", (200, "application/json", json.dumps(targets)) if targets
                   else (404, "text/plain", "404 page not found"))

    def answer(self, query):
        field = self.fields[query["query"][0]]
        return 200, "application/json", json.dumps(matrix(*self.points.get(field, [])))


class Source:  # collect() needs only these attributes
    auth_token, timeout_seconds, name = "", 2, "stub"

    def __init__(self, url, **kw):
        self.url = url
        self.__dict__.update(kw)


@pytest.fixture
def stub():
    with stub_server() as server:
        yield server


def test_hour_records_from_range_queries(stub):
    hour = NOW.replace(minute=0) - H  # the last complete hour: its value is evaluated at its end
    FakePrometheus(stub, {
        "util_mean": [(GPU, [(hour + H, "61.5")])], "util_max": [(GPU, [(hour + H, "99")])],
        "samples": [(GPU, [(hour + H, "120")])], "mem_used_mean_gb": [(GPU, [(hour + H, "40960")])],
        "power_mean_w": [(GPU, [(hour + H, "500")])], "power_samples": [(GPU, [(hour + H, "60")])],
        "tensor_active_mean": [(GPU, [(hour + H, "0.4")])], "xid_last": [(GPU, [(hour + H, "79")])],
        "xid_max": [(GPU, [(hour + H, "79")])], "xid_min": [(GPU, [(hour + H, "0")])],
        "xid_changes": [(GPU, [(hour + H, "1")])],
    })

    collected = prometheus.collect(Source(stub.url(), auth_token="tok"), NOW - 3 * H, NOW)

    (record,) = collected.hours
    assert record.series.uuid == GPU["UUID"] and record.series.hostname == "dgx-01"
    assert record.hour == hour and collected.synced_until == NOW.replace(minute=0)
    assert (record.util_mean, record.util_max, record.samples) == (61.5, 99.0, 120)
    assert (record.xid_last, record.xid_max, record.xid_min, record.xid_changes) == (79, 79, 0, 1)
    assert (record.mem_used_mean_gb, record.power_mean_w, record.tensor_active_mean) == (40.0, 500.0, 0.4)
    assert record.gr_engine_active_mean is None  # the series is absent: not reported, not 0
    assert record.energy_wh == 500 * 60 * 30 / 3600  # 60 samples × 30 s cover half the hour
    ranges = stub.hits("/api/v1/query_range")
    assert len(ranges) == len(prometheus.queries())
    assert {(q["start"][0], q["end"][0], q["step"][0], q["timeout"][0]) for q in ranges} == {
        (str((NOW.replace(minute=0) - 2 * H).timestamp()), str((NOW.replace(minute=0) + H).timestamp()), "3600", "2s")}
    assert any("changes(DCGM_FI_DEV_XID_ERRORS[1h])" in q["query"][0] for q in ranges)  # the gauge's changes
    assert all(headers["Authorization"] == "Bearer tok" for _, _, headers in stub.requests)


def test_without_a_targets_api_the_hour_counts_as_covered(stub):
    hour = NOW.replace(minute=0)
    FakePrometheus(stub, {"power_mean_w": [(GPU, [(hour, "400"), (hour + H, "400")])],
                          "power_samples": [(GPU, [(hour, "10"), (hour + H, "10")])]}, targets=None)

    collected = prometheus.collect(Source(stub.url()), NOW - 2 * H, NOW)

    energy = {record.hour: record.energy_wh for record in collected.hours}
    assert energy == {hour - H: 400.0, hour: 200.0}  # the current hour: up to now (10:30) only


def test_energy_from_the_counter_where_it_is_there(stub):
    """Hour by hour: the counter's increase (mJ → Wh); NaN or negative: no energy, said in a warning, and no
    power estimate in its place; no counter: the power estimate."""
    end = NOW.replace(minute=0)
    hours = [end - 3 * H, end - 2 * H, end - H, end]  # as the query points: the ends of the hours 06:00…09:00
    counted = {hours[0]: "1.44e9", hours[1]: "NaN", hours[2]: "-3.6e6"}  # the last hour: no counter series
    FakePrometheus(stub, {
        "power_mean_w": [(GPU, [(at, "500") for at in hours])], "power_samples": [(GPU, [(at, "120") for at in hours])],
        "energy_wh": [(GPU, list(counted.items()))], "energy_samples": [(GPU, [(at, "120") for at in counted])],
    })

    collected = prometheus.collect(Source(stub.url()), NOW - 4 * H, NOW)

    energy = {record.hour + H: record.energy_wh for record in collected.hours}
    assert energy == {hours[0]: 400.0, hours[1]: None, hours[2]: None, hours[3]: 500.0}  # 500 W × 120 × 30 s
    assert "energy_wh: 1 value(s) that are not finite numbers (NaN, Inf or text) left out" in collected.warnings
    assert ("increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION): 1 negative value(s) left out (no energy for those hours)"
            in collected.warnings)
    assert any("increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[1h])" in q["query"][0]
               for q in stub.hits("/api/v1/query_range"))


def test_a_long_window_is_asked_for_in_weeks(stub):
    FakePrometheus(stub, {})
    prometheus.collect(Source(stub.url()), NOW - timedelta(days=10), NOW)

    windows = sorted({(float(q["start"][0]), float(q["end"][0])) for q in stub.hits("/api/v1/query_range")})
    assert len(windows) == 2
    (first_start, first_end), (second_start, second_end) = windows
    assert (first_end - first_start) / 3600 + 1 == 168  # points per series, far under Prometheus' 11,000
    assert second_start == first_end + 3600
    assert second_end == (NOW.replace(minute=0) + H).timestamp()


def test_values_that_are_not_numbers(stub):
    end = NOW.replace(minute=0)
    other = {**GPU, "UUID": "GPU-aaaaaaaa-0000-4000-8000-000000000002", "gpu": "1"}
    FakePrometheus(stub, {
        "samples": [(GPU, [(end, "60")]), (other, [(end, "60")])],
        "util_mean": [(GPU, [(end, "NaN")]), (other, [(end, "55")])],
        "util_max": [(GPU, [(end, "+Inf")]), (other, [(end, "n/a")])],
        "power_mean_w": [(GPU, [(end, "-Inf")]), (other, [(end, "300")])],
    })

    collected = prometheus.collect(Source(stub.url()), NOW - H, NOW)

    records = {record.series.gpu_index: record for record in collected.hours}
    assert (records["0"].util_mean, records["0"].util_max, records["0"].power_mean_w) == (None, None, None)
    assert records["0"].energy_wh is None and records["0"].samples == 60
    assert (records["1"].util_mean, records["1"].util_max, records["1"].power_mean_w) == (55.0, None, 300.0)
    assert sorted(collected.warnings) == [
        f"{field}: {n} value(s) that are not finite numbers (NaN, Inf or text) left out"
        for field, n in (("power_mean_w", 1), ("util_max", 2), ("util_mean", 1))
    ]


def test_one_gpu_reported_by_two_scrape_jobs_counts_once(stub):
    end = NOW.replace(minute=0)
    twin = {**GPU, "job": "dcgm-backup", "instance": "backup:9400"}
    FakePrometheus(stub, {"samples": [(GPU, [(end, "120")]), (twin, [(end, "20")])],
                          "util_mean": [(GPU, [(end, "70")]), (twin, [(end, "10")])]})

    (record,) = prometheus.collect(Source(stub.url()), NOW - H, NOW).hours
    assert (record.samples, record.util_mean) == (120, 70.0)


def prometheus_source(stub, **kw):
    return TelemetrySource.objects.create(**{"name": "prom", "kind": "prometheus", "url": stub.url(),
                                             "interval_seconds": 300, "timeout_seconds": 1, **kw})


def test_http_500_is_recorded_with_backoff(db, stub):
    stub.route("/api/v1/targets", (200, "application/json", json.dumps(TARGETS)))
    stub.route("/api/v1/query_range", (500, "text/plain", "query engine exploded"))
    source = prometheus_source(stub)

    for failures in (1, 2):
        with pytest.raises(SourceError, match="HTTP 500"):
            pull(source, now=NOW + (failures - 1) * H)
        source.refresh_from_db()
        assert source.last_error == "/api/v1/query_range: HTTP 500 Internal Server Error from the server"
        assert "query engine exploded" not in source.last_error  # the answer's text is never stored
        assert source.stale_since == NOW  # since the first failure
        assert source.consecutive_failures == failures
        assert source.next_attempt_at == NOW + (failures - 1) * H + timedelta(seconds=300 * 2 ** (failures - 1))
    assert source.synced_until is None and source.is_stale


def test_a_slow_source_times_out(db, stub):
    stub.route("/api/v1/targets", (404, "text/plain", "not here"))
    stub.route("/api/v1/query_range", (200, "application/json", json.dumps(matrix())), delay=3)
    source = prometheus_source(stub)

    started = time.monotonic()
    with pytest.raises(SourceError, match="timed out after 1 s"):
        pull(source, now=timezone.now())
    assert time.monotonic() - started < 2.5
    source.refresh_from_db()
    assert "timed out after 1 s" in source.last_error and source.stale_since is not None


@pytest.mark.parametrize("status, body, message", [
    (200, "<html>proxy login</html>", "not JSON"),
    (200, json.dumps({"status": "error", "errorType": "execution", "error": "query timed out"}),
     r"Prometheus answered an error \(execution\)$"),
    (400, json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}), "HTTP 400"),
    (200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}), "expected a matrix"),
])
def test_unreadable_answers(stub, status, body, message):
    stub.route("/api/v1/query_range", (status, "application/json", body))
    with pytest.raises(SourceError, match=message):
        prometheus.collect(Source(stub.url()), NOW - H, NOW)


def test_refused_connection():
    with pytest.raises(SourceError, match="could not connect"):
        prometheus.collect(Source(f"http://127.0.0.1:{free_port()}"), NOW - H, NOW)


def test_durations():
    assert [prometheus.duration_seconds(text) for text in ("15s", "1m30s", "500ms", "1h", "", "15", "1x")] == [
        15, 90, 0.5, 3600, None, None, None]
