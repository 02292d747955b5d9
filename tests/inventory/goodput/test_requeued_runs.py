"""A requeued job, read through the pull: each run is its own row, so the run a hardware fault ended keeps its
GPU-hours and its interruption after the job has moved on (issue 20). Figures worked out by hand in each test."""

import json
from datetime import UTC, datetime

import pytest

from inventory.goodput import queries
from inventory.goodput.models import Interruption
from inventory.goodput.recording import record_interruptions
from inventory.models import GPU, PullReport, SlurmJob, TelemetrySource
from inventory.telemetry import pull
from tests.factories import make_gpu, make_node
from tests.helpers.goodput import xid
from tests.helpers.httpstub import stub_server

T = 1_790_000_000  # 2026-09-21 14:13:20 UTC, epoch seconds
H, M = 3600, 60


def at(seconds):
    return datetime.fromtimestamp(seconds, tz=UTC)


def sacct_run(job_id, state, submit, start, elapsed, end=0, restarts=None):
    """One run of a job on gpu-001 with 8 GPUs, as ``sacct --json`` 23.11+ writes it."""
    job = {"job_id": job_id, "account": "vision", "partition": "train", "cluster": "c1", "name": "llm-pretrain",
           "user": "ada", "nodes": "gpu-001", "allocation_nodes": 1, "state": {"current": [state], "reason": "None"},
           "time": {"submission": submit, "start": start, "end": end, "elapsed": elapsed, "eligible": submit},
           "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 8}]}}
    return job if restarts is None else job | {"restart_cnt": restarts}


@pytest.fixture
def slurm(db):
    node = make_node(hostname="gpu-001", state="in_service")
    for _ in range(8):
        make_gpu(node=node)
    with stub_server() as stub:
        source = TelemetrySource.objects.create(name="sacct", kind="slurm", url=stub.url("/sacct.json"),
                                                timeout_seconds=2, backfill_hours=48)

        def serve(*jobs):
            stub.route("/sacct.json", (200, "application/json", json.dumps({"jobs": list(jobs)})))

        source.serve, source.node = serve, node
        yield source


def runs(source):
    return list(SlurmJob.objects.filter(source=source, job_id="500").order_by("submit_time")
                .values_list("state", "submit_time", "start_time", "end_time", "restarts"))


def quality(source):
    report = PullReport.objects.filter(source=source).first()
    return report.quality, report.examples


def test_a_run_requeued_between_pulls_is_closed_and_its_interruption_counted(slurm):
    """Pull 1 (T + 2 h): job 500 runs since T on gpu-001's 8 GPUs. An XID 79 at T + 3 h; Slurm requeues the job at
    T + 3 h 2 min (the new run's submit time) and starts it again at T + 3 h 30 min. Pull 2 (T + 5 h) sees only
    the new run (restart count 1).

    By hand: run 1 ends at the requeue, T + 3 h 2 min, REQUEUED: 8 × 182 min = 24.267 GPU-hours; run 2 from
    T + 3 h 30 min to T + 5 h: 8 × 1.5 = 12; allocated 36.267. Run 1 is an infrastructure interruption (XID 79
    2 min before its end); lost: 182 min mod 60 = 2 min × 8 GPUs = 0.267 GPU-h of work, plus the 28 min wait until
    the team's next run started × 8 = 3.733: 4.0 GPU-hours."""
    slurm.serve(sacct_run(500, "RUNNING", T - M, T, 2 * H))
    pull.pull(slurm, now=at(T + 2 * H))
    assert runs(slurm) == [("RUNNING", at(T - M), at(T), None, None)]

    xid(GPU.objects.get(node=slurm.node, slot=0), at(T + 3 * H), 79)
    requeue, restart = T + 3 * H + 2 * M, T + 3 * H + 30 * M
    slurm.serve(sacct_run(500, "RUNNING", requeue, restart, 90 * M, restarts=1))
    pull.pull(slurm, now=at(T + 5 * H))
    assert runs(slurm) == [("REQUEUED", at(T - M), at(T), at(requeue), None),
                           ("RUNNING", at(requeue), at(restart), None, 1)]
    counts, examples = quality(slurm)
    assert counts["job_requeue_inferred"] == 1 and "job_runs_missing" not in counts
    assert examples["job_requeue_inferred"] == ["500: run started 2026-09-21 14:13 ended at the requeue, "
                                                "2026-09-21 17:15"]

    now = at(T + 5 * H)
    assert record_interruptions(at(T), now, now=now) == {"interruptions": 1, "infrastructure": 1, "deleted": 0}
    found = Interruption.objects.get()
    assert (found.state, found.cause, found.reason, found.ended_at) == ("REQUEUED", "infrastructure", "xid_79",
                                                                        at(requeue))
    assert found.lost_run_gpu_hours == pytest.approx(8 * 2 / 60)
    assert found.lost_gpu_hours == pytest.approx(4.0)
    (team,) = queries.goodput_by("team", "24h", now=now)
    assert team["allocated_gpu_hours"] == pytest.approx(8 * 182 / 60 + 12, abs=0.01)
    assert team["interruptions"] == 1 and team["lost_gpu_hours"] == 4.0


def test_sacct_duplicates_lists_every_run_and_nothing_is_inferred(slurm):
    """``sacct --duplicates``: run 1 NODE_FAIL at T + 1 h (Slurm wrote its end), run 2 completed T + 1 h 10 min
    → T + 3 h. Both stored as Slurm said: 8 GPU-h + 8 × 110 min = 14.667 GPU-h; 1 NODE_FAIL interruption."""
    slurm.serve(sacct_run(500, "NODE_FAIL", T - M, T, H, end=T + H, restarts=0),
                sacct_run(500, "COMPLETED", T + H, T + H + 10 * M, 110 * M, end=T + 3 * H, restarts=1))
    now = at(T + 4 * H)
    pull.pull(slurm, now=now)
    assert runs(slurm) == [("NODE_FAIL", at(T - M), at(T), at(T + H), 0),
                           ("COMPLETED", at(T + H), at(T + H + 10 * M), at(T + 3 * H), 1)]
    assert quality(slurm)[0] == {}
    record_interruptions(at(T), now, now=now)
    assert list(Interruption.objects.values_list("reason", "ended_at")) == [("node_fail", at(T + H))]
    (team,) = queries.goodput_by("team", "24h", now=now)
    assert team["allocated_gpu_hours"] == pytest.approx(8 + 8 * 110 / 60, abs=0.01)


def test_runs_never_seen_are_flagged_and_a_pending_run_replaced_is_dropped(slurm):
    """Pull 1 sees job 500 pending; pull 2 sees it running with a later submit time and restart count 2: the
    pending run held nothing and goes; the two runs before it were never seen, which the pull's data-quality
    panel says (their GPU-hours and interruptions are missing)."""
    slurm.serve(sacct_run(500, "PENDING", T, 0, 0))
    pull.pull(slurm, now=at(T + M))
    slurm.serve(sacct_run(500, "RUNNING", T + H, T + H, 30 * M, restarts=2))
    pull.pull(slurm, now=at(T + 2 * H))
    assert runs(slurm) == [("RUNNING", at(T + H), at(T + H), None, 2)]
    counts, examples = quality(slurm)
    assert counts == {"job_runs_missing": 1}
    assert examples["job_runs_missing"] == ["500: restarted 2 times, 0 earlier runs on record"]


def test_a_second_pull_of_the_same_run_updates_it_in_place(slurm):
    slurm.serve(sacct_run(500, "RUNNING", T - M, T, H))
    pull.pull(slurm, now=at(T + H))
    slurm.serve(sacct_run(500, "COMPLETED", T - M, T, 2 * H, end=T + 2 * H))
    pull.pull(slurm, now=at(T + 3 * H))
    assert runs(slurm) == [("COMPLETED", at(T - M), at(T), at(T + 2 * H), None)]
    assert quality(slurm)[0] == {}
