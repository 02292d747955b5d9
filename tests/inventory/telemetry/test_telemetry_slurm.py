"""Slurm accounting: the parser on recorded ``sacct --json`` / slurmrestd shapes, the host list expander, the
collector against a real local HTTP server, the pull into ``SlurmJob`` rows, and the dashboard job figures."""

import copy
import json
import socket
import time
from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import SlurmJob, TelemetrySource
from inventory.telemetry import jobstats, pull, slurm
from inventory.telemetry.records import SourceError
from inventory.telemetry.slurm import expand_hostlist, parse_jobs
from tests.helpers.httpstub import stub_server
from tests.helpers.paths import FIXTURES

SLURM = FIXTURES / "slurm"


def fixture(name):
    return (SLURM / name).read_bytes()


def at(epoch):
    return datetime.fromtimestamp(epoch, tz=UTC)


def summary(records):
    """job id → (state, submit, start, end, nodes, node_count, gpus, account, partition)."""
    return {r.job_id: (r.state, r.submit_time, r.start_time, r.end_time, r.nodes, r.node_count, r.gpus, r.account,
                       r.partition) for r in records}


# --- Recorded shapes ------------------------------------------------------------------------------------


def test_sacct_22_05_string_states_plain_integer_times():
    warnings = []
    records = parse_jobs(fixture("sacct_22.05.json"), warnings)
    assert warnings == []
    assert summary(records) == {
        "1001": ("COMPLETED", at(1700000000), at(1700000600), at(1700007800), "gpu-[001-002]", 2, 16, "ml-research",
                 "a100"),
        # Pending: no start, nodes "None assigned" → "", the GPUs it asks for.
        "1002": ("PENDING", at(1700003600), None, None, "", 0, 8, "ml-research", "a100"),
        # Cancelled before it started: an end, no start, no GPUs allocated.
        "1003": ("CANCELLED", at(1700001000), None, at(1700002000), "", 0, 0, "ml-research", "a100"),
        # Running: end 0 → None; limit INFINITE and het offset NO_VAL are not mistaken for values.
        "1004": ("RUNNING", at(1700004000), at(1700005800), None, "gpu-[003-004,010]", 3, 24, "genomics", "a100"),
        "1005_4": ("COMPLETED", at(1700000100), at(1700001100), at(1700002000), "gpu-007", 1, 1, "ml-research",
                   "a100"),
    }
    first = records[0]
    assert (first.cluster, first.user, first.name) == ("hpc1", "alice", "llm-pretrain")


def test_sacct_23_02_typed_gpus_counted_once_het_and_array_tasks():
    records = parse_jobs(fixture("sacct_23.02.json"))
    assert summary(records) == {
        # gres/gpu=8 and gres/gpu:h100=8 are the same eight GPUs.
        "2001": ("COMPLETED", at(1700010000), at(1700013600), at(1700017200), "dgx-a01", 1, 8, "vision", "h100"),
        "2010+0": ("COMPLETED", at(1700020000), at(1700021800), at(1700023600), "dgx-a[02-03]", 2, 16, "vision",
                   "h100"),
        "2010+1": ("COMPLETED", at(1700020000), at(1700021800), at(1700023600), "cpu-b07", 1, 0, "vision", "cpu"),
        "2015_3": ("FAILED", at(1700030000), at(1700030600), at(1700031200), "dgx-a04", 1, 2, "speech", "h100"),
        "2030": ("TIMEOUT", at(1700040000), at(1700043600), at(1700058000), "dgx-a05", 1, 4, "speech", "h100"),
    }  # the array's still-pending tasks (2015_[4-9%2]) are left out: each is stored once it starts


def test_v0_0_40_list_states_time_objects_typed_gpu_only():
    records = parse_jobs(fixture("sacct_24.05.json"))
    assert summary(records) == {
        "3001": ("COMPLETED", at(1700100000), at(1700103600), at(1700109000), "gpu-[001-004]", 4, 32, "llm", "h100"),
        "3002": ("RUNNING", at(1700105000), at(1700106800), None, "gpu-[005,007]", 2, 16, "llm", "h100"),
        "3003": ("PENDING", at(1700107000), None, None, "", 0, 4, "robotics", "l40s"),
        "3004": ("OUT_OF_MEMORY", at(1700101000), at(1700101300), at(1700101600), "l40s-12", 1, 2, "robotics",
                 "l40s"),
    }


def test_slurmrestd_slurm_endpoint_job_state_and_tres_strings():
    records = parse_jobs(fixture("slurmrestd_slurm_v0.0.39_jobs.json"))
    assert summary(records) == {
        # A running job's end_time there is the forecast end (start + limit): dropped.
        "5001": ("RUNNING", at(1700200000), at(1700203600), None, "gpu-[101-104]", 4, 32, "llm", "h100"),
        # A pending job's start_time is the scheduler's forecast: dropped; GPUs from tres_req_str.
        "5002": ("PENDING", at(1700202000), None, None, "", 1, 8, "llm", "h100"),
        "5010_7": ("COMPLETED", at(1700190000), at(1700195400), at(1700199000), "gpu-105", 1, 1, "bio", "h100"),
    }
    assert records[0].user == "hank"


def test_job_state_list_with_flags_uses_the_base_state():
    job = {"job_id": 7, "job_state": ["RUNNING", "COMPLETING"], "submit_time": 1700000000,
           "start_time": {"set": True, "infinite": False, "number": 1700000100},
           "end_time": {"set": True, "infinite": False, "number": 1700003700}, "tres_alloc_str": "gres/gpu=4"}
    (record,) = parse_jobs({"jobs": [job]})
    assert (record.state, record.start_time, record.end_time, record.gpus) == ("RUNNING", at(1700000100), None, 4)


@pytest.mark.parametrize("tres, gpus", [
    ([{"type": "gres", "name": "gpu", "count": 8}], 8),
    ([{"type": "gres", "name": "gres/gpu", "count": 8}], 8),
    ([{"type": "gres/gpu", "name": None, "count": "8"}], 8),
    ([{"type": "gres", "name": "gpu:h100", "count": 8}], 8),
    ([{"type": "gres", "name": "gpu:a100", "count": 2}, {"type": "gres", "name": "gpu:h100", "count": 4}], 6),
    ([{"type": "gres", "name": "gpu", "count": 6}, {"type": "gres", "name": "gpu:a100", "count": 2},
      {"type": "gres", "name": "gpu:h100", "count": 4}], 6),
    ([{"type": "gres", "name": "gpumem", "count": 80000}, {"type": "cpu", "name": None, "count": 8}], 0),
    ("cpu=64,mem=1T,node=2,billing=64,gres/gpu=16", 16),
    ("cpu=64,gres/gpu:h100=16,gres/gpu=16", 16),
    ("cpu=8,gres/gpu:a100=1,gres/gpu:l40s=2", 3),
    ("cpu=8,mem=64G", 0),
])
def test_gpu_tres_spellings(tres, gpus):
    job = {"job_id": 1, "state": {"current": "COMPLETED"}, "time": {"submission": 1700000000, "start": 1700000001,
                                                                       "end": 1700000002}}
    job.update({"tres": {"allocated": tres}} if isinstance(tres, list) else {"tres_alloc_str": tres})
    (record,) = parse_jobs({"jobs": [job]})
    assert record.gpus == gpus


@pytest.mark.parametrize("value, expected", [
    (1700000000, at(1700000000)),
    ("1700000000", at(1700000000)),
    ({"set": True, "infinite": False, "number": 1700000000}, at(1700000000)),
    ({"set": False, "infinite": False, "number": 1700000000}, None),
    ({"set": True, "infinite": True, "number": 0}, None),
    (0, None),
    (None, None),
    (4294967295, None),  # INFINITE in plain-integer output
    (4294967294, None),  # NO_VAL
])
def test_time_shapes(value, expected):
    assert slurm.timestamp(value) == expected


def test_node_count_from_the_host_list_when_the_job_does_not_say():
    job = {"job_id": 9, "state": {"current": "COMPLETED"}, "time": {"submission": 1, "start": 2, "end": 3},
           "nodes": "gpu-[001-003],gpu-010"}
    (record,) = parse_jobs({"jobs": [job]})
    assert record.node_count == 4


def test_malformed_jobs_are_skipped_with_a_warning():
    good = {"job_id": 1, "state": {"current": "COMPLETED"}, "time": {"submission": 1700000000}}
    document = {
        "errors": [{"error": "partial answer", "description": "cluster hpc2 unreachable"}],
        "jobs": [
            good,
            "not a job",
            {"state": {"current": "COMPLETED"}, "time": {"submission": 1700000000}},  # no job_id
            {"job_id": 3, "state": {"current": "COMPLETED"}, "time": {"submission": "yesterday"}},
            {"job_id": 4, "time": {"submission": 1700000000}},  # no state
            {"job_id": 5, "state": {"current": "PENDING"}, "time": {}},  # no submit time
            {"job_id": 6, "state": {"current": "RUNNING"}, "time": {"submission": 1700000000, "start": 1700000001},
             "nodes": "gpu-[001-"},  # unreadable host list and no node count
        ],
    }
    warnings = []
    records = parse_jobs(document, warnings)
    assert [r.job_id for r in records] == ["1"]
    assert len(warnings) == 7
    assert warnings[0] == "Slurm reported: cluster hpc2 unreachable"
    assert "job_id 3" in warnings[3] and "yesterday" in warnings[3]


def test_many_malformed_jobs_are_counted_not_listed():
    warnings = []
    assert parse_jobs({"jobs": [{"job_id": n} for n in range(1, 101)]}, warnings) == []
    assert len(warnings) == slurm.MAX_WARNINGS + 1
    assert warnings[-1] == f"skipped {100 - slurm.MAX_WARNINGS} more Slurm jobs that could not be read"


def test_a_requeued_job_listed_once_per_run_keeps_every_run():
    """``sacct --duplicates``: one record per run, each with its own submit time (Slurm resets it at a requeue)
    and restart count; the same run listed twice is one record."""
    def run(submit, state, restarts):
        return {"job_id": 8, "state": {"current": state}, "restart_cnt": restarts,
                "time": {"submission": submit, "start": submit + 1}}
    records = parse_jobs({"jobs": [run(1700000000, "REQUEUED", 0), run(1700005000, "RUNNING", 2),
                                   run(1700000500, "NODE_FAIL", 1), run(1700005000, "RUNNING", 2)]})
    runs = sorted((r.submit_time, r.job_id, r.state, r.restarts) for r in records)
    assert runs == [(at(1700000000), "8", "REQUEUED", 0), (at(1700000500), "8", "NODE_FAIL", 1),
                    (at(1700005000), "8", "RUNNING", 2)]


@pytest.mark.parametrize("value, expected", [(3, 3), ({"set": True, "infinite": False, "number": 1}, 1),
                                             ({"set": False, "number": 0}, None), (0, 0)])
def test_restart_count_in_every_shape(value, expected):
    job = {"job_id": 9, "state": {"current": "PENDING"}, "time": {"submission": 1700000000}, "restart_cnt": value}
    (record,) = parse_jobs({"jobs": [job]})
    assert record.restarts == expected


def test_a_job_without_restart_count_has_none_and_a_negative_one_is_skipped():
    job = {"job_id": 9, "state": {"current": "PENDING"}, "time": {"submission": 1700000000}}
    assert parse_jobs({"jobs": [job]})[0].restarts is None
    warnings = []
    assert parse_jobs({"jobs": [job | {"restart_cnt": -1}]}, warnings) == []
    assert "restart count -1 is negative" in warnings[0]


def test_long_values_are_cut_to_the_columns():
    for field, limit in slurm.FIELD_LIMITS.items():
        assert SlurmJob._meta.get_field(field).max_length == limit
    job = {"job_id": 1, "name": "x" * 500, "state": {"current": "PENDING"}, "time": {"submission": 1700000000}}
    (record,) = parse_jobs({"jobs": [job]})
    assert len(record.name) == 200


@pytest.mark.parametrize("document", [b"<html>502 Bad Gateway</html>", b"", b"[1, 2]", b'{"meta": {}}',
                                      b'{"jobs": null, "errors": [{"error": "Unable to query jobs"}]}'])
def test_a_document_without_jobs_is_a_source_error(document):
    with pytest.raises(SourceError, match="not JSON|no \"jobs\""):
        parse_jobs(document)


def test_the_simulators_sacct_output_parses():
    """The demo's simulator serves v0.0.40-shaped ``sacct --json``: every job reads, as the simulator meant it."""
    simulator = pytest.importorskip("inventory.telemetry.simulator")
    nodes = [simulator.SimNode(f"zrh-h100-{n:03d}", "train-h100", "vision") for n in range(1, 9)]
    nodes += [simulator.SimNode(f"zrh-h200-{n:03d}", "train-h200", "llm-pretrain") for n in range(1, 5)]
    end = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
    document = simulator.jobs(nodes, end - timedelta(days=2), end)
    warnings = []
    records = parse_jobs(json.dumps(document), warnings)
    assert warnings == [] and len(records) == len(document["jobs"]) > 20
    hostnames = {node.hostname for node in nodes}
    states = set()
    for record in records:
        states.add(record.state)
        assert record.account in ("vision", "llm-pretrain") and record.partition in ("train-h100", "train-h200")
        if record.state == "PENDING":
            assert (record.start_time, record.end_time, record.nodes) == (None, None, "")
            continue
        assert record.start_time >= record.submit_time
        assert (record.end_time is None) == (record.state == "RUNNING")
        assert set(expand_hostlist(record.nodes)) <= hostnames
        assert record.node_count == len(expand_hostlist(record.nodes))
        assert record.gpus == 8 * record.node_count
    assert {"COMPLETED", "RUNNING"} <= states
    assert any(record.node_count > 1 for record in records)


# --- Host lists -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("hostlist, hosts", [
    ("gpu-[001-003,010]", ["gpu-001", "gpu-002", "gpu-003", "gpu-010"]),
    ("a[1-2]b", ["a1b", "a2b"]),
    ("n1,n2", ["n1", "n2"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("n[08-10]", ["n08", "n09", "n10"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ("gpu-[001-002],cpu-07,io[1,3]", ["gpu-001", "gpu-002", "cpu-07", "io1", "io3"]),
    ("dgx-a01", ["dgx-a01"]),
    ("", []),
])
def test_expand_hostlist(hostlist, hosts):
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("hostlist", ["gpu-[001-", "gpu-]1[", "gpu-[3-1]", "gpu-[a-b]", "gpu-[[1-2]]",
                                      "n[1-999999999]", "n[1-1000]m[1-1000]"])
def test_expand_hostlist_refuses_what_it_cannot_read(hostlist):
    with pytest.raises(ValueError):
        expand_hostlist(hostlist)


# --- The collector against a real HTTP server -----------------------------------------------------------


class FakeSlurm:
    """slurmrestd stand-in on a loopback port (``tests.helpers.httpstub``): answers ``answers`` in turn (the last one
    again and again); ``requests`` records each request's path, query and headers."""

    PATH = "/slurmdb/v0.0.40/jobs"

    def __init__(self, stub):
        self.stub, self.answers = stub, [(200, b'{"jobs": []}')]
        self.requests = stub.requests
        self.url = stub.url(self.PATH)
        self.answer(b'{"jobs": []}')

    def _next(self, query):
        status, body = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return status, "application/json", body

    def answer(self, body, status=200, delay=0):
        self.answers = [(status, body)]
        self.stub.route(self.PATH, self._next, delay=delay)


@pytest.fixture
def slurm_server():
    with stub_server() as stub:
        yield FakeSlurm(stub)


@pytest.fixture
def slurm_source(db, slurm_server):
    return TelemetrySource.objects.create(name="slurm", kind=TelemetrySource.Kind.SLURM, url=slurm_server.url,
                                          timeout_seconds=1, backfill_hours=168, auth_token="jwt-token")


START, END = at(1700090000), at(1700110000)


def test_collect_sends_the_window_and_token_and_parses(slurm_server, slurm_source):
    slurm_server.answer(fixture("sacct_24.05.json"))
    collected = slurm.collect(slurm_source, START, END)
    assert sorted(job.job_id for job in collected.jobs) == ["3001", "3002", "3003", "3004"]
    path, query, headers = slurm_server.requests[0]
    assert path == "/slurmdb/v0.0.40/jobs"
    # parse_time()'s epoch form: 22.05/23.02 refuse a bare number, and a date string would be read in the
    # server's time zone.
    assert query == {"start_time": ["uts1700090000"], "end_time": ["uts1700110000"]}
    assert headers["X-SLURM-USER-TOKEN"] == "jwt-token"
    assert "X-SLURM-USER-NAME" not in headers  # none saved
    # 3002 runs and 3003 waits: the next window starts at the earlier one's submit time, so both are read again.
    assert collected.synced_until == at(1700105000)


def test_collect_moves_to_the_window_end_once_every_job_ended(slurm_server, slurm_source):
    slurm_server.answer(fixture("sacct_23.02.json"))  # its one pending record is an array's pending tasks
    assert slurm.collect(slurm_source, START, END).synced_until == END


def test_collect_never_moves_the_window_back(slurm_server, slurm_source):
    slurm_server.answer(fixture("sacct_22.05.json"))  # 1002 is pending since before START
    assert slurm.collect(slurm_source, START, END).synced_until == START


def test_collect_sends_the_user_name_with_the_token(slurm_server, slurm_source):
    slurm_source.user_name = "slurm"
    slurm.collect(slurm_source, START, END)
    headers = slurm_server.requests[0][2]
    assert (headers["X-SLURM-USER-NAME"], headers["X-SLURM-USER-TOKEN"]) == ("slurm", "jwt-token")


def test_collect_without_token_sends_no_token_header(slurm_server, slurm_source):
    slurm_source.auth_token = ""
    slurm.collect(slurm_source, START, END)
    assert "X-SLURM-USER-TOKEN" not in slurm_server.requests[0][2]


@pytest.mark.parametrize("answer, message", [
    ((500, b'{"errors": [{"error": "Unable to query jobs", "description": "slurmdbd unreachable"}], "jobs": []}'),
     "HTTP 500 Internal Server Error from the server$"),  # in the portal's words: nothing of the answer
    ((502, b"<html>Bad Gateway</html>"), "HTTP 502 Bad Gateway from the server$"),
    ((401, b"Authentication failure"), "HTTP 401"),
    ((200, b"Authentication failure"), "not JSON"),
    ((200, b'{"meta": {}, "errors": []}'), "no \"jobs\" list"),
])
def test_collect_errors(slurm_server, slurm_source, answer, message):
    slurm_server.answer(answer[1], status=answer[0])
    with pytest.raises(SourceError, match=message):
        slurm.collect(slurm_source, START, END)


def test_collect_gives_up_after_the_timeout(slurm_server, slurm_source):
    slurm_server.answer(fixture("sacct_24.05.json"), delay=2.5)
    began = time.monotonic()
    with pytest.raises(SourceError, match="timed out after 1 s"):
        slurm.collect(slurm_source, START, END)
    assert time.monotonic() - began < 2.4  # gave up at the timeout, before the answer came


def test_collect_refused(slurm_source):
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    slurm_source.url = f"http://127.0.0.1:{port}/slurmdb/v0.0.40/jobs"
    with pytest.raises(SourceError, match="could not connect"):
        slurm.collect(slurm_source, START, END)


# --- Through the pull -----------------------------------------------------------------------------------


def finished(document, job_id, end):
    """The same answer later: ``job_id`` has completed at ``end`` (v0.0.40 shape)."""
    document = copy.deepcopy(document)
    for job in document["jobs"]:
        if job["job_id"] == job_id:
            job["state"]["current"] = ["COMPLETED"]
            job["time"]["end"] = {"set": True, "infinite": False, "number": end}
    return json.dumps(document).encode()


def test_pull_stores_jobs_and_a_second_pull_updates_them(slurm_server, slurm_source):
    first = json.loads(fixture("sacct_24.05.json"))
    slurm_server.answers = [(200, json.dumps(first).encode()), (200, finished(first, 3002, 1700112000))]
    now = at(1700110000)
    pull.pull(slurm_source, now=now)
    assert SlurmJob.objects.filter(source=slurm_source).count() == 4
    running = SlurmJob.objects.get(source=slurm_source, job_id="3002")
    assert (running.state, running.end_time, running.gpus, running.node_count) == ("RUNNING", None, 16, 2)
    slurm_source.refresh_from_db()
    assert slurm_source.synced_until == at(1700105000) and slurm_source.last_success_at == now

    pull.pull(slurm_source, now=now + timedelta(hours=1))
    assert SlurmJob.objects.filter(source=slurm_source).count() == 4  # upserted, no duplicates
    done = SlurmJob.objects.get(source=slurm_source, job_id="3002")
    assert (done.state, done.end_time) == ("COMPLETED", at(1700112000))
    assert slurm_server.requests[1][1]["start_time"] == ["uts1700105000"]  # re-read from the open job's submit
    slurm_source.refresh_from_db()
    assert slurm_source.synced_until == at(1700107000)  # 3003 still pending


def test_pull_failure_is_recorded_on_the_source(slurm_server, slurm_source):
    slurm_server.answer(b'{"errors": [{"description": "slurmdbd unreachable"}]}', status=500)
    with pytest.raises(SourceError):
        pull.pull(slurm_source, now=END)
    slurm_source.refresh_from_db()
    assert slurm_source.last_error == "Slurm source: HTTP 500 Internal Server Error from the server"
    assert slurm_source.stale_since == END and slurm_source.consecutive_failures == 1
    assert not SlurmJob.objects.exists()


# --- Job figures for the dashboards ---------------------------------------------------------------------

T0 = datetime(2026, 12, 1, tzinfo=UTC)
H = timedelta(hours=1)


def job(source, job_id, partition="a100", account="llm", submit=None, start=None, end=None, gpus=8, node_count=1):
    return SlurmJob(source=source, job_id=job_id, partition=partition, account=account, gpus=gpus,
                    node_count=node_count, state="COMPLETED" if end else "RUNNING" if start else "PENDING",
                    submit_time=submit or start or T0, start_time=start, end_time=end)


@pytest.fixture
def waits(db):
    source = TelemetrySource.objects.create(name="jobs", kind="slurm", url="http://slurm/")
    jobs = [job(source, f"a{n}", submit=T0, start=T0 + n * H) for n in (3, 0, 4, 1, 2)]  # waits 0-4 h
    jobs += [job(source, "h1", "h100", submit=T0, start=T0 + H), job(source, "h2", "h100", submit=T0, start=T0 + 3 * H),
             job(source, "pending", submit=T0),  # not started: its wait is not known yet
             job(source, "skew", "cpu", submit=T0 + H, start=T0)]  # started "before" submit: waits 0
    SlurmJob.objects.bulk_create(jobs)
    return SlurmJob.objects.filter(source=source)


def test_queue_wait_percentiles(waits):
    expected = [
        {"partition": "a100", "jobs": 5, "p50_hours": 2.0, "p95_hours": pytest.approx(3.8)},
        {"partition": "cpu", "jobs": 1, "p50_hours": 0.0, "p95_hours": 0.0},
        {"partition": "h100", "jobs": 2, "p50_hours": 2.0, "p95_hours": pytest.approx(2.9)},
    ]
    assert jobstats.queue_wait_percentiles(waits) == expected
    # The portable path (SQLite, the demo) agrees with PostgreSQL's percentile_cont.
    assert jobstats.wait_percentiles_in_python(waits.filter(start_time__isnull=False), "partition") == expected


def test_queue_wait_by_team_and_bad_grouping(waits):
    assert [row["jobs"] for row in jobstats.queue_wait_percentiles(waits, by="account")] == [8]
    with pytest.raises(ValueError):
        jobstats.queue_wait_percentiles(waits, by="name; DROP TABLE")


def test_percentile_edges():
    assert jobstats.percentile([], 0.5) is None
    assert jobstats.percentile([7.0], 0.95) == 7.0


WINDOW = (T0 + 10 * H, T0 + 14 * H)


@pytest.fixture
def runs(db):
    source = TelemetrySource.objects.create(name="jobs", kind="slurm", url="http://slurm/")
    SlurmJob.objects.bulk_create([
        job(source, "A", "h100", "llm", start=T0 + 8 * H, end=T0 + 12 * H, gpus=8, node_count=2),  # 2 h × 8 = 16
        job(source, "B", "h100", "llm", start=T0 + 11 * H, end=T0 + 11.5 * H, gpus=4),  # 0.5 h × 4 = 2
        job(source, "C", "h100", "bio", start=T0 + 12 * H, gpus=2),  # running: 12:00 → now (13:00) × 2 = 2
        job(source, "D", "a100", "bio", start=T0 + 6 * H, end=T0 + 9 * H, gpus=8),  # before the window
        job(source, "E", "a100", "bio", start=T0 + 13.5 * H, end=T0 + 16 * H, gpus=1),  # 0.5 h × 1 = 0.5
        job(source, "F", "a100", "llm", start=T0 + 10 * H, end=T0 + 12 * H, gpus=0),  # no GPUs
        job(source, "G", "h100", "llm", submit=T0 + 10 * H, gpus=8),  # pending
        job(source, "H", "a100", "bio", start=T0 + 9 * H, end=T0 + 18 * H, gpus=16, node_count=4),  # 4 h × 16 = 64
    ])
    return SlurmJob.objects.filter(source=source)


def test_allocated_gpu_hours_clipped_to_the_window(runs):
    # At 13:00 nothing counts past the clock: H (9:00-18:00 by Slurm's clock) 3 h × 16 = 48, E (from 13:30) 0.
    now = T0 + 13 * H
    assert jobstats.allocated_gpu_hours(runs, *WINDOW, now=now) == [
        {"account": "bio", "gpu_hours": pytest.approx(50.0)}, {"account": "llm", "gpu_hours": pytest.approx(18.0)}]
    assert jobstats.allocated_gpu_hours(runs, *WINDOW, by="partition", now=now) == [
        {"partition": "a100", "gpu_hours": pytest.approx(48)}, {"partition": "h100", "gpu_hours": pytest.approx(20)}]
    # Later, the running job C counts to the window's end (2 h × 2), not beyond it; H and E to the window's end.
    later = jobstats.allocated_gpu_hours(runs, *WINDOW, by="partition", now=T0 + 20 * H)
    assert later == [{"partition": "a100", "gpu_hours": pytest.approx(64.5)},
                     {"partition": "h100", "gpu_hours": pytest.approx(22)}]


def test_allocated_gpu_hours_match_the_model_for_whole_runs(runs):
    """A window around everything gives each job's own ``SlurmJob.gpu_hours``."""
    now = T0 + 13 * H
    total = sum(row["gpu_hours"] for row in jobstats.allocated_gpu_hours(runs, T0, T0 + 24 * H, now=now))
    assert total == pytest.approx(sum(j.gpu_hours(now=now) for j in runs))


def test_multi_node_share(runs):
    assert jobstats.multi_node_share(runs, *WINDOW, now=T0 + 20 * H) == [
        {"partition": "a100", "gpu_hours": pytest.approx(64.5), "multi_node_gpu_hours": pytest.approx(64),
         "share": pytest.approx(64 / 64.5)},
        {"partition": "h100", "gpu_hours": pytest.approx(22), "multi_node_gpu_hours": pytest.approx(16),
         "share": pytest.approx(16 / 22)},
    ]


def test_multi_node_share_without_multi_node_jobs(runs):
    rows = jobstats.multi_node_share(runs.filter(node_count=1), *WINDOW, now=T0 + 20 * H)
    assert [(row["partition"], row["multi_node_gpu_hours"], row["share"]) for row in rows] == [
        ("a100", 0.0, 0.0), ("h100", 0.0, 0.0)]
