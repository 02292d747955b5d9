"""Malformed and hostile answers (issue 14): whatever a source answers, the pull either reads it or ends as
failed with a clear reason, backs off and shows the source as stale; never an uncaught exception, never "ok".
Answers are capped in size (``OUTBOUND_MAX_ANSWER_BYTES``); a record that cannot be stored (a timestamp of
1e20, 4 billion GPUs, an XID code past 32 bits) is left out and said on the data-quality panel."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import PullReport, SlurmJob, TelemetrySample, TelemetrySource
from inventory.telemetry.pull import pull
from inventory.telemetry.records import SourceError
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server

NOW = datetime(2026, 12, 2, 10, 20, tzinfo=UTC)
JSON = "application/json"

pytestmark = pytest.mark.django_db


@pytest.fixture
def stub():
    with stub_server() as server:
        yield server


def source_for(stub, kind):
    path = {"prometheus": "", "exporter": "/metrics", "slurm": "/slurmdb/v0.0.40/jobs"}[kind]
    return TelemetrySource.objects.create(name=kind, kind=kind, url=stub.url(path), timeout_seconds=2,
                                          interval_seconds=60)


def matrix(result):
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def assert_failed(source, reason):
    with pytest.raises(SourceError, match=reason):
        pull(source, now=NOW)
    source.refresh_from_db()
    assert reason in source.last_error or pytest.fail(source.last_error)
    assert source.stale_since == NOW and source.consecutive_failures == 1
    assert source.next_attempt_at == NOW + timedelta(seconds=60)  # backs off: one interval, then doubling
    report = PullReport.objects.get(source=source)
    assert not report.ok and reason in report.error


@pytest.mark.parametrize("body, reason", [
    (matrix([1, 2]), "a result that is not a series object"),
    (matrix([{"metric": "UUID", "values": []}]), "a result that is not a series object"),
    (matrix([{"metric": {"UUID": "GPU-1"}, "values": 5}]), "values are not a list"),
    (matrix([{"metric": {"UUID": "GPU-1"}, "values": [[1e20, "50"]]}]), "a time no clock can hold"),
    (matrix([{"metric": {"UUID": "GPU-1"}, "values": [["x", "50"]]}]), "a point that is not"),
    (matrix([{"metric": {"UUID": "GPU-1"}, "values": [[1, 2, 3]]}]), "a point that is not"),
    (json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}), "expected a matrix"),
    (json.dumps({"status": "success", "data": "abc"}), "the answer has no data"),
    (json.dumps([1, 2, 3]), "JSON but not an object"),
    ('{"status": "success", "data": {"resultType": "mat', "not JSON"),  # truncated
    (json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}), "Prometheus answered an error"),
])
def test_prometheus_answers_that_cannot_be_read(stub, body, reason):
    source = source_for(stub, "prometheus")
    stub.route("/api/v1/query_range", (200, JSON, body))
    assert_failed(source, reason)


@pytest.mark.parametrize("body, reason", [
    ('{"jobs": [{"job_id": 1, "state": {"current": ["RUNN', "not JSON"),  # truncated
    (json.dumps({"jobs": "none"}), 'no "jobs" list'),
    (json.dumps([{"job_id": 1}]), 'no "jobs" list'),
    ("\x00\xff" * 10, "not JSON"),
])
def test_slurm_answers_that_cannot_be_read(stub, body, reason):
    source = source_for(stub, "slurm")
    stub.route("/slurmdb/v0.0.40/jobs", (200, JSON, body))
    assert_failed(source, reason)


def test_an_exporter_page_with_nothing_readable_fails(stub):
    source = source_for(stub, "exporter")
    stub.route("/metrics", (200, "text/plain", "<html><body>502 Bad Gateway</body></html>\n"))
    assert_failed(source, "not a metrics page")


@pytest.mark.parametrize("kind", ["prometheus", "exporter", "slurm"])
def test_an_answer_past_the_size_cap_fails(stub, kind, settings):
    settings.OUTBOUND_MAX_ANSWER_BYTES = 100_000
    source = source_for(stub, kind)
    huge = "x" * 300_000
    for path in ("/api/v1/query_range", "/api/v1/targets", "/metrics", "/slurmdb/v0.0.40/jobs"):
        stub.route(path, (200, JSON, huge))
    assert_failed(source, "larger than 100,000 bytes")


def test_slurm_jobs_that_cannot_be_stored_are_left_out_and_said(stub):
    """Job 1 is fine; job 2 was submitted at 1e20 s (past NO_VAL: unset), job 3 claims 4,294,967,293 GPUs (just
    under NO_VAL), job 4 is a list: each is skipped with its reason on the data-quality panel, and the pull succeeds."""
    def job(job_id, **over):
        return {"job_id": job_id, "state": {"current": ["COMPLETED"]}, "nodes": "n1", "account": "llm",
                "time": {"submission": 1764547200, "start": 1764547200, "end": 1764550800, "elapsed": 3600},
                "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 1}]}, **over}

    source = source_for(stub, "slurm")
    stub.route("/slurmdb/v0.0.40/jobs", (200, JSON, json.dumps({"last_update": "soon", "jobs": [
        job(1), job(2, time={"submission": 1e20}),
        job(3, tres={"allocated": [{"type": "gres", "name": "gpu", "count": 4294967293}]}), [4]]})))
    pull(source, now=NOW)
    assert list(SlurmJob.objects.values_list("job_id", flat=True)) == ["1"]
    report = PullReport.objects.get(source=source)
    assert report.ok and report.quality["warning"] == 4
    text = "\n".join(report.examples["warning"])
    for said in ("last_update is not a time", "job_id 2): no submit time", "GPU count 4294967293 is more",
                 "a job is an object, not list"):
        assert said in text


def test_exporter_values_that_cannot_be_stored_are_left_out(stub):
    gpu = make_gpu(node=make_node(hostname="n1"), slot=0, uuid="GPU-1")
    source = source_for(stub, "exporter")
    stub.route("/metrics", (200, "text/plain", "\n".join([
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1"} 40',
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-1",Hostname="n1"} 1e30',  # no XID code is that
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",Hostname="n1"} 100 100000000000000000000000',  # at 1e20 s
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1",Hostname="n1"} 9' * 1,
    ]) + "\n"))
    pull(source, now=NOW)
    sample = TelemetrySample.objects.get(gpu=gpu)
    assert (sample.util, sample.xid, sample.power_w, sample.mem_used_gb) == (40.0, None, 9.0, None)
    warnings = "\n".join(PullReport.objects.get(source=source).examples["warning"])
    assert "DCGM_FI_DEV_XID_ERRORS: 1 value(s)" in warnings and "timestamp no clock can hold" in warnings
