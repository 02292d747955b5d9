"""Slurm accounting figures a manager can trust (issue 14): a running job in a saved answer counts up to the
moment of the answer, never up to whenever it is read; a job that ended without an end counts its elapsed
time, or nothing; allocated GPU-hours of a node, site or partition never exceed its GPUs × hours, with the
offending jobs on the source's data-quality panel. Every figure is worked out by hand in the test."""

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils.html import escape

from inventory.models import PullReport, SlurmJob, SlurmJobNode, TelemetrySource
from inventory.telemetry import allocation, jobstats, pull
from inventory.telemetry.records import JobRecord, Quality
from tests.factories import make_gpu, make_node, make_site
from tests.helpers.httpstub import stub_server
from tests.helpers.paths import FIXTURES

H = timedelta(hours=1)
T = 1_764_547_200  # 2025-12-01 00:00 UTC, epoch seconds
T0 = datetime.fromtimestamp(T, tz=UTC)

pytestmark = pytest.mark.django_db


def number(value):
    return {"set": True, "infinite": False, "number": value}


def sacct_job(job_id, state, start, end=0, elapsed=0, gpus=1, nodes="gpu-001", account="llm", partition="h100",
              node_count=1):
    """One job as ``sacct --json`` 23.11+ (data_parser v0.0.40) writes it; times in epoch seconds."""
    return {
        "job_id": job_id, "account": account, "partition": partition, "cluster": "c1", "name": f"job{job_id}",
        "user": "ada", "nodes": nodes, "allocation_nodes": node_count,
        "state": {"current": [state], "reason": "None"},
        "time": {"submission": start - 60, "start": start, "end": end, "elapsed": elapsed, "eligible": start - 60},
        "array": {"job_id": 0, "task_id": number(0) | {"set": False}}, "het": {"job_id": 0},
        "tres": {"allocated": [{"type": "cpu", "count": 8}, {"type": "gres", "name": "gpu", "count": gpus}]},
    }


@pytest.fixture
def slurm(db):
    with stub_server() as stub:
        source = TelemetrySource.objects.create(name="saved sacct", kind="slurm", url=stub.url("/sacct.json"),
                                                timeout_seconds=2, backfill_hours=48)

        def serve(document):
            stub.route("/sacct.json", (200, "application/json", json.dumps(document)))

        source.serve = serve
        yield source


def allocated(source, start, end, now, by="account"):
    return {row[by]: round(row["gpu_hours"], 3)
            for row in jobstats.allocated_gpu_hours(SlurmJob.objects.filter(source=source), start, end, by, now)}


def report(source):
    return PullReport.objects.filter(source=source).first()


# --- Running jobs in a saved answer -------------------------------------------------------------------------


def test_saved_answer_gives_the_same_totals_whenever_it_is_read(slurm):
    """sacct ran at T + 3 h: job 1 had run 3 h on 4 GPUs (elapsed 10,800 s), job 2 ended after 1 h on 2 GPUs.
    Read at T + 4 h and again a day later: 12 + 2 = 14 GPU-hours both times (not 12 + 24 × 4 more)."""
    slurm.serve({"jobs": [sacct_job(1, "RUNNING", T, elapsed=10_800, gpus=4),
                          sacct_job(2, "COMPLETED", T, end=T + 3600, elapsed=3600, gpus=2, account="bio")]})
    pull.pull(slurm, now=T0 + 4 * H)
    first = allocated(slurm, T0 - H, T0 + 4 * H, now=T0 + 4 * H)
    slurm.synced_until = None  # read the whole file again, as a new pull would
    pull.pull(slurm, now=T0 + 28 * H)
    later = allocated(slurm, T0 - H, T0 + 28 * H, now=T0 + 28 * H)
    assert first == later == {"llm": 12.0, "bio": 2.0}
    assert SlurmJob.objects.get(job_id="1").running_until == T0 + 3 * H


def test_live_source_moves_a_running_job_on_at_the_next_pull(slurm):
    slurm.serve({"jobs": [sacct_job(1, "RUNNING", T, elapsed=3600, gpus=8)]})
    pull.pull(slurm, now=T0 + H)
    slurm.serve({"jobs": [sacct_job(1, "RUNNING", T, elapsed=7200, gpus=8)]})
    pull.pull(slurm, now=T0 + 2 * H)
    assert allocated(slurm, T0, T0 + 2 * H, now=T0 + 2 * H) == {"llm": 16.0}


def test_controller_answer_counts_running_jobs_up_to_its_last_update(slurm):
    """The /slurm/ endpoint has no elapsed time; its ``last_update`` is the answer's own time (T + 2 h): 2 h × 2.
    Without it the job counts up to the pull, and the data-quality panel says so."""
    job = {"job_id": 7, "job_state": ["RUNNING"], "account": "llm", "partition": "h100", "nodes": "gpu-001",
           "submit_time": number(T - 60), "start_time": number(T), "end_time": number(T + 86_400),
           "tres_alloc_str": "cpu=8,gres/gpu=2"}
    slurm.serve({"jobs": [job], "last_update": number(T + 7200)})
    pull.pull(slurm, now=T0 + 5 * H)
    assert allocated(slurm, T0, T0 + 5 * H, now=T0 + 5 * H) == {"llm": 4.0}
    assert "job_running_at_pull" not in report(slurm).quality

    slurm.serve({"jobs": [job]})
    pull.pull(slurm, now=T0 + 5 * H)
    assert allocated(slurm, T0, T0 + 5 * H, now=T0 + 5 * H) == {"llm": 10.0}
    assert report(slurm).quality["job_running_at_pull"] == 1
    assert report(slurm).examples["job_running_at_pull"] == ["7 RUNNING"]


def test_running_job_ahead_of_the_portals_clock_counts_up_to_the_pull(slurm):
    slurm.serve({"jobs": [sacct_job(1, "RUNNING", T, elapsed=10 * 3600, gpus=1)]})  # Slurm's clock is 8 h ahead
    pull.pull(slurm, now=T0 + 2 * H)
    assert allocated(slurm, T0, T0 + 2 * H, now=T0 + 2 * H) == {"llm": 2.0}
    assert report(slurm).quality["job_clock_skew"] == 1


# --- Terminal states without an end ----------------------------------------------------------------------


def test_ended_jobs_without_an_end_count_their_elapsed_time_or_nothing(slurm):
    """NODE_FAIL with end 0 after 20,520 s (5.7 h) on 1 GPU: 5.7 GPU-hours, not 'running forever' (a day later
    that would be 29.7). CANCELLED with end 0 and no elapsed: 0, listed as skipped. REQUEUED, end 0, 1 h on 8
    GPUs: 8."""
    slurm.serve({"jobs": [sacct_job(11, "NODE_FAIL", T, elapsed=20_520, gpus=1),
                          sacct_job(12, "CANCELLED", T, gpus=4, account="bio"),
                          sacct_job(13, "REQUEUED", T, elapsed=3600, gpus=8, account="cv")]})
    pull.pull(slurm, now=T0 + 30 * H)
    assert allocated(slurm, T0, T0 + 30 * H, now=T0 + 30 * H) == {"cv": 8.0, "llm": 5.7}  # bio: nothing
    assert SlurmJob.objects.get(job_id="11").end_time == T0 + timedelta(seconds=20_520)
    quality = report(slurm)
    assert quality.quality == {"job_end_inferred": 2, "job_skipped": 1, "job_unknown_host": 3}
    assert quality.examples["job_skipped"] == ["12 CANCELLED: no end and no elapsed time"]
    assert quality.examples["job_end_inferred"] == ["11 NODE_FAIL: ended at start + elapsed (20520 s)",
                                                    "13 REQUEUED: ended at start + elapsed (3600 s)"]


# --- Clipped to the nodes' GPUs ----------------------------------------------------------------------------


@pytest.fixture
def fleet(db):
    """Site A: gpu-001 and gpu-002, 8 GPUs each, held in the inventory by their FQDNs."""
    site = make_site(name="A")
    nodes = {}
    for name in ("gpu-001", "gpu-002"):
        nodes[name] = make_node(site=site, hostname=f"{name}.a.example.org")
        for _ in range(8):
            make_gpu(node=nodes[name])
    return nodes


def test_jobs_match_nodes_by_short_name_and_spread_their_gpus(slurm, fleet):
    slurm.serve({"jobs": [sacct_job(1, "COMPLETED", T, end=T + 3600, elapsed=3600, gpus=10,
                                    nodes="GPU-[001-002]", node_count=2)]})
    pull.pull(slurm, now=T0 + 2 * H)
    rows = {row.host: (row.node_id, row.gpus) for row in SlurmJobNode.objects.all()}
    assert rows == {"GPU-001": (fleet["gpu-001"].pk, 5), "GPU-002": (fleet["gpu-002"].pk, 5)}
    assert allocation.spread(10, 3) == [4, 3, 3]


def test_overbooked_node_is_clipped_and_its_jobs_listed(slurm, fleet):
    """gpu-001 (8 GPUs) from T to T + 2 h: job 1 holds 8 GPUs, job 2 (a duplicate after a requeue, say) 8 more.
    Slurm says 32 GPU-hours; the node could give 16. gpu-002 runs job 3 (4 GPUs, 2 h: 8) and job 4 on a host the
    inventory does not know (2 GPUs, 2 h: 4, counted as reported)."""
    slurm.serve({"jobs": [
        sacct_job(1, "COMPLETED", T, end=T + 7200, elapsed=7200, gpus=8, account="llm"),
        sacct_job(2, "COMPLETED", T, end=T + 7200, elapsed=7200, gpus=8, account="bio"),
        sacct_job(3, "COMPLETED", T, end=T + 7200, elapsed=7200, gpus=4, nodes="gpu-002", account="cv",
                  partition="a100"),
        sacct_job(4, "COMPLETED", T, end=T + 7200, elapsed=7200, gpus=2, nodes="cloud-17", account="cv",
                  partition="a100"),
    ]})
    pull.pull(slurm, now=T0 + 3 * H)
    window = (T0, T0 + 3 * H)
    assert allocated(slurm, *window, now=T0 + 3 * H) == {"llm": 8.0, "bio": 8.0, "cv": 12.0}
    assert allocated(slurm, *window, now=T0 + 3 * H, by="partition") == {"h100": 16.0, "a100": 12.0}
    by_node = allocation.clipped_gpu_time(SlurmJob.objects.all(), *window, T0 + 3 * H, "node")
    assert {key: value["gpu_hours"] for key, value in by_node.items()} == {
        fleet["gpu-001"].pk: 16.0, fleet["gpu-002"].pk: 8.0, None: 4.0}
    # Over the first hour alone the node could give 8: each job gets half of it.
    assert allocated(slurm, T0, T0 + H, now=T0 + 3 * H, by="partition") == {"h100": 8.0, "a100": 6.0}

    quality = report(slurm)
    assert quality.quality == {"job_overbooked": 2, "job_unknown_host": 1}
    assert sorted(quality.examples["job_overbooked"]) == [
        "1 on gpu-001: jobs held 16 GPUs, the node has 8", "2 on gpu-001: jobs held 16 GPUs, the node has 8"]
    assert quality.examples["job_unknown_host"] == ["4: cloud-17"]


def test_back_to_back_jobs_are_not_overbooked(slurm, fleet):
    slurm.serve({"jobs": [sacct_job(1, "COMPLETED", T, end=T + 3600, elapsed=3600, gpus=8),
                          sacct_job(2, "COMPLETED", T + 3600, end=T + 7200, elapsed=3600, gpus=8)]})
    pull.pull(slurm, now=T0 + 3 * H)
    assert report(slurm).quality == {}
    assert allocated(slurm, T0, T0 + 3 * H, now=T0 + 3 * H) == {"llm": 16.0}


def test_the_source_page_shows_the_data_quality_panel(slurm, fleet, viewer_client):
    slurm.serve({"jobs": [sacct_job(1, "COMPLETED", T, end=T + 7200, elapsed=7200, gpus=8),
                          sacct_job(2, "COMPLETED", T, end=T + 7200, elapsed=7200, gpus=8),
                          sacct_job(3, "NODE_FAIL", T, elapsed=60, gpus=1, nodes="gpu-002")]})
    pull.pull(slurm, now=T0 + 3 * H)
    page = viewer_client.get(slurm.get_absolute_url()).content.decode()
    assert "Data quality" in page
    assert escape(Quality.KINDS["job_overbooked"]) in page and "1 on gpu-001: jobs held 16 GPUs, the node has 8" in page
    assert Quality.KINDS["job_end_inferred"] in page and "3 NODE_FAIL: ended at start + elapsed (60 s)" in page
    assert "3 jobs," in page and "0 XID events" in page and "xid_events" not in page  # the counts in words


def test_save_jobs_from_records_twice_is_idempotent(slurm, fleet):
    records = [JobRecord(job_id="1", submit_time=T0, start_time=T0, end_time=T0 + H, nodes="gpu-[001-002]",
                         node_count=2, gpus=16, state="COMPLETED", account="llm")]
    for _ in range(2):
        pull.save_jobs(slurm, records, T0 + 2 * H, Quality())
    assert SlurmJobNode.objects.count() == 2
    assert allocated(slurm, T0, T0 + 2 * H, now=T0 + 2 * H) == {"llm": 16.0}


# --- The invariant, on random job sets ------------------------------------------------------------------------

NODES = {"n1": 4, "n2": 8}  # short host name in Slurm → GPUs; the inventory holds n2 by its FQDN
HOSTS = ["n1", "N2", "n2.b.example.org", "ghost"]  # ghost: a host the inventory does not know
MINUTE = timedelta(minutes=1)


def job_sets():
    from hypothesis import strategies as st

    job = st.fixed_dictionaries({
        "kind": st.sampled_from(["plain", "array", "het"]),
        "start": st.integers(0, 48 * 60), "minutes": st.integers(-30, 24 * 60),  # < 0: ends before it starts
        "submit_after": st.integers(-60, 60),  # > 0: clock skew, submitted "after" it started
        "running": st.booleans(), "gpus": st.integers(0, 12),
        "hosts": st.lists(st.sampled_from(HOSTS), min_size=1, max_size=2, unique_by=lambda h: h.lower()[:2]),
        "account": st.sampled_from(["llm", "bio"]), "partition": st.sampled_from(["p1", "p2"]),
    })
    # A second pull re-reads some jobs with other times (a requeued job's new run, a running job moving on).
    return st.tuples(st.lists(job, min_size=1, max_size=12), st.lists(st.tuples(st.integers(0, 11), job), max_size=4),
                     st.integers(0, 60 * 60), st.integers(1, 72 * 60))


def records(specs):
    made = {}
    for number, spec in specs:
        key = {"plain": f"{number}", "array": f"90_{number}", "het": f"80+{number}"}[spec["kind"]]
        start = T0 + spec["start"] * MINUTE
        finish = start + spec["minutes"] * MINUTE
        made[key] = JobRecord(
            job_id=key, submit_time=start + spec["submit_after"] * MINUTE, start_time=start,
            end_time=None if spec["running"] else finish, running_until=finish if spec["running"] else None,
            nodes=",".join(spec["hosts"]), node_count=len(spec["hosts"]), gpus=spec["gpus"],
            account=spec["account"], partition=spec["partition"], state="RUNNING" if spec["running"] else "COMPLETED")
    return list(made.values())


def requeue_truth(first, later):
    """By hand, the runs stored after two pulls: one per (job id, submit time), the second pull's replacing the
    first's; a run still open whose job comes back with a later submit time was requeued then (it ends at that
    submit time, or at its start when it started after it)."""
    runs = {(job.job_id, job.submit_time): job for job in [*first, *later]}
    for (job_id, submit), run in list(runs.items()):
        newer = [job.submit_time for job in later if job.job_id == job_id and job.submit_time > submit]
        if newer and run.end_time is None:
            runs[job_id, submit] = dataclasses.replace(run, state="REQUEUED", end_time=max(min(newer), run.start_time))
    return runs


def node_truth(jobs, window, now):
    """By hand, per inventory node: ∫ min(GPUs the node's jobs held, the node's GPUs) over the window, minute by
    minute (every time in the test is a whole minute)."""
    held = {name: {} for name in NODES}
    for job in jobs:
        hosts = job.nodes.split(",")
        for host, gpus in zip(hosts, allocation.spread(job.gpus, len(hosts)), strict=True):
            name = host.lower().split(".")[0]
            if name not in NODES:
                continue
            finish = min(job.end_time or job.running_until, now)
            moment = max(job.start_time, window[0])
            while moment < min(finish, window[1]):
                held[name][moment] = held[name].get(moment, 0) + gpus
                moment += MINUTE
    return {name: sum(min(value, NODES[name]) for value in minutes.values()) / 60 for name, minutes in held.items()}


def test_allocated_gpu_hours_never_exceed_the_gpus_on_random_job_sets(slurm):
    from hypothesis import HealthCheck, given, settings

    site = make_site(name="B")
    nodes = {}
    for name, gpus in NODES.items():
        nodes[name] = make_node(site=site, hostname=f"{name}.b.example.org" if name == "n2" else name)
        for _ in range(gpus):
            make_gpu(node=nodes[name])

    @settings(max_examples=60, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(job_sets())
    def check(case):
        first, again, window_start, window_minutes = case
        SlurmJob.objects.all().delete()
        now = T0 + 80 * H
        jobs = records(enumerate(first))
        pull.save_jobs(slurm, jobs, now, Quality())
        later = records((number % len(first), spec) for number, spec in again)
        if later:
            pull.save_jobs(slurm, later, now, Quality())
        final = requeue_truth(jobs, later)
        window = (T0 + window_start * MINUTE, T0 + (window_start + window_minutes) * MINUTE)
        hours_ = window_minutes / 60
        queryset = SlurmJob.objects.filter(source=slurm)

        by_node = allocation.clipped_gpu_time(queryset, *window, now, "node")
        truth = node_truth(final.values(), window, now)
        for name, node in nodes.items():
            figure = by_node.get(node.pk, {"gpu_hours": 0.0})["gpu_hours"]
            assert figure <= NODES[name] * hours_ + 1e-6
            assert figure == pytest.approx(truth[name], abs=1e-6)
        by_site = allocation.clipped_gpu_time(queryset, *window, now, "site")
        assert by_site.get(site.pk, {"gpu_hours": 0.0})["gpu_hours"] <= sum(NODES.values()) * hours_ + 1e-6
        # Every grouping adds up to the same total, and multi-node GPU-hours are part of it.
        totals = [sum(row["gpu_hours"] for row in allocation.clipped_gpu_time(queryset, *window, now, by).values())
                  for by in ("account", "partition", "node")]
        assert totals == [pytest.approx(totals[2], abs=1e-6)] * 3
        for row in jobstats.multi_node_share(queryset, *window, now=now):
            assert row["multi_node_gpu_hours"] <= row["gpu_hours"] + 1e-6

    check()


def test_without_overbooking_the_totals_are_gpus_times_overlap(slurm):
    """Jobs on a host the inventory does not know are not clipped: each team's total is Σ GPUs × overlap."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(st.integers(0, 600), st.integers(0, 600), st.integers(0, 8),
                              st.sampled_from(["llm", "bio"])), min_size=1, max_size=10),
           st.integers(0, 300), st.integers(1, 900))
    def check(jobs, window_start, window_minutes):
        SlurmJob.objects.all().delete()
        made = [JobRecord(job_id=str(n), submit_time=T0, start_time=T0 + start * MINUTE,
                          end_time=T0 + (start + minutes) * MINUTE, nodes=f"cloud-{n}", node_count=1, gpus=gpus,
                          account=account, state="COMPLETED")
                for n, (start, minutes, gpus, account) in enumerate(jobs)]
        pull.save_jobs(slurm, made, T0 + 24 * H, Quality())
        window = (T0 + window_start * MINUTE, T0 + (window_start + window_minutes) * MINUTE)
        expected = {}
        for job in made:
            overlap = min(job.end_time, window[1]) - max(job.start_time, window[0])
            if job.gpus and overlap > timedelta(0):
                expected[job.account] = expected.get(job.account, 0) + job.gpus * overlap.total_seconds() / 3600
        figures = allocated(slurm, *window, now=T0 + 24 * H)
        assert {k: v for k, v in figures.items() if v} == pytest.approx(
            {k: round(v, 3) for k, v in expected.items() if v}, abs=1e-3)

    check()


# --- Real public sacct --json / slurmrestd answers (tests/fixtures/slurm/real/SOURCES.md) ----------------------

REAL = FIXTURES / "slurm" / "real"


def epoch(seconds):
    return datetime.fromtimestamp(seconds, tz=UTC)


@pytest.mark.parametrize("name, job_id, state, gpus, nodes, start, counted_until, gpu_hours", [
    # 21.08, REQUEUED, 1 GPU: from start 1673275023 to Slurm's end 1673369386 = 94,363 s → 26.212 GPU-hours.
    ("sarc_sacct_21.08.8_cedar_requeued_gpu.json", "55978384", "REQUEUED", 1, 1, 1673275023, 1673369386, 26.212),
    # 22.05, array task 100 of 20247445, FAILED, 16 GPUs on 4 nodes: 124,403 s × 16 = 552.902 GPU-hours.
    ("sarc_sacct_22.05.9_narval_failed_array_16gpu.json", "20247445_100", "FAILED", 16, 4, 1693740641, 1693865044,
     552.902),
    # 23.02, RUNNING with end 0, 2 GPUs, elapsed 83,853,331 s when sacct answered: 2 × 23,292.592 h = 46,585.184.
    ("sarc_sacct_23.02.6_mila_running_end0_2gpu.json", "4", "RUNNING", 2, 1, 1613725209, 1697578540, 46585.184),
    # 23.11 (v0.0.40), the same job later: elapsed 102,228,976 s → 2 × 28,396.938 h = 56,793.876.
    ("sarc_sacct_23.11.5_mila_running_end0_2gpu.json", "4", "RUNNING", 2, 1, 1613725209, 1715954185, 56793.876),
    # 24.05 slurmdb, TIMEOUT after 622 s on 87 nodes, no GPUs: 0 GPU-hours.
    ("slurmweb_slurmdb_24.05.3_job_timeout_87nodes.json", "599930", "TIMEOUT", 0, 87, 1732195249, 1732195871, 0),
    # 24.11 slurmdb, RUNNING with end 0 for 314 s, no GPUs.
    ("slurmweb_slurmdb_24.11.0rc2_job_running_end0.json", "49", "RUNNING", 0, 1, 1732026951, 1732027265, 0),
])
def test_real_answers_give_the_totals_worked_out_by_hand(slurm, name, job_id, state, gpus, nodes, start,
                                                         counted_until, gpu_hours):
    slurm.serve(json.loads((REAL / name).read_bytes()))
    window = (epoch(start) - H, epoch(counted_until) + H)
    totals = []
    for read_at in (epoch(counted_until) + H, epoch(counted_until) + timedelta(days=365)):  # now, and a year on
        slurm.synced_until = None
        pull.pull(slurm, now=read_at)
        job = SlurmJob.objects.get(source=slurm)
        assert (job.job_id, job.state, job.gpus, job.node_count) == (job_id, state, gpus, nodes)
        assert job.start_time == epoch(start) and job.counted_until(read_at) == epoch(counted_until)
        totals.append(sum(allocated(slurm, *window, now=read_at).values()))
    assert totals == [pytest.approx(gpu_hours, abs=1e-3)] * 2
    assert SlurmJobNode.objects.filter(job__source=slurm).count() == nodes
