"""The allocated GPU-hours rollup (``allocation_rollup``) against its definition (``allocation.clipped_gpu_time``
over the jobs): equal for any window, grouping and scope, after pulls, retried pulls, requeues, overbooked nodes,
unknown hosts and rows edited one at a time; and the pages read it rather than the job history."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from inventory.models import AllocationDaily, AllocationHourly, SlurmJob, SlurmJobNode, TelemetrySource
from inventory.telemetry import allocation, allocation_rollup, pull
from inventory.telemetry.records import JobRecord, Quality
from tests.factories import make_gpu, make_node, make_site
from tests.helpers.races import in_process, waits_at_most

H = timedelta(hours=1)
NOW = datetime(2026, 11, 20, 15, 37, tzinfo=UTC)
GROUPS = ("account", "partition", "node", "site")


@pytest.fixture
def fleet(db):
    """Two sites; nodes n0, n1 with 8 GPUs, n2 with 2 (so jobs overbook it), and a Slurm source."""
    sites = [make_site(name="rollup-a"), make_site(name="rollup-b")]
    nodes = []
    for index, gpus in enumerate((8, 8, 2)):
        node = make_node(hostname=f"n{index}", site=sites[index % 2])
        for slot in range(gpus):
            make_gpu(node=node, slot=slot)
        nodes.append(node)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/")
    return source, nodes


job = st.fixed_dictionaries({
    "hosts": st.sampled_from(["n0", "n1", "n2", "n0,n1", "n1,n2", "ghost", "n0,ghost", ""]),
    "gpus": st.integers(0, 12),
    "start": st.integers(-60 * 50, 60 * 2),  # minutes from NOW
    "minutes": st.one_of(st.none(), st.integers(0, 60 * 30)),  # None: still running
    "account": st.sampled_from(["vision", "speech", ""]),
    "partition": st.sampled_from(["train", "infer"]),
})


def records(drawn):
    found = []
    for number, row in enumerate(drawn):
        start = NOW + timedelta(minutes=row["start"])
        end = None if row["minutes"] is None else start + timedelta(minutes=row["minutes"])
        hosts = row["hosts"].split(",") if row["hosts"] else []
        found.append(JobRecord(
            job_id=str(number), submit_time=start - H, start_time=start, end_time=end, account=row["account"],
            partition=row["partition"], state="RUNNING" if end is None else "COMPLETED", nodes=",".join(hosts),
            node_count=len(hosts), gpus=row["gpus"], running_until=None if end else min(NOW, start + 2 * H)))
    return found


def assert_rollup_is_the_definition(nodes, now, windows):
    """For each window, grouping and scope: the rollup's figures equal ``clipped_gpu_time`` over the jobs."""
    scopes = [{}, {"account": "vision"}, {"partition": "train"}, {"nodes": [nodes[0].pk, nodes[2].pk]}]
    for scope in scopes:  # many windows at once (months, a plan's runs): each its total
        jobs = SlurmJob.objects.filter(**{k: v for k, v in scope.items() if k != "nodes"})
        totals = allocation_rollup.allocated_in_windows(dict(enumerate(windows)), now, **scope)
        for index, (start, end) in enumerate(windows):
            expected = allocation.clipped_gpu_time(jobs, start, end, now, "account", scope.get("nodes"))
            assert totals[index] == pytest.approx(sum(row["gpu_hours"] for row in expected.values()), abs=1e-6)
    per_team = {(team, index): (team, start, end) for index, (start, end) in enumerate(windows)
                for team in ("vision", "speech")}
    for key, row in allocation_rollup.allocated_for_groups(per_team, now).items():
        team, start, end = per_team[key]
        jobs = SlurmJob.objects.filter(account=team)
        expected = allocation.clipped_gpu_time(jobs, start, end, now, "account")
        assert row["gpu_hours"] == pytest.approx(expected.get(team, {}).get("gpu_hours", 0.0), abs=1e-6)
        assert row["jobs"] == allocation.in_window(jobs, start, end).count()
    for start, end in windows:
        for by in GROUPS:
            for scope in scopes:
                jobs = SlurmJob.objects.filter(**{k: v for k, v in scope.items() if k != "nodes"})
                expected = allocation.clipped_gpu_time(jobs, start, end, now, by, scope.get("nodes"))
                found = allocation_rollup.allocated(start, end, now, by, **scope)
                keys = {k for k, row in {**expected, **found}.items() if row["gpu_hours"] > 1e-9}
                for key in keys:
                    for name in ("gpu_hours", "multi_node_gpu_hours"):
                        assert found.get(key, {}).get(name, 0.0) == pytest.approx(
                            expected.get(key, {}).get(name, 0.0), abs=1e-6), (start, end, by, scope, key, name)


def stored_rollup():
    return {(node or 0, hour, account, multi): value for node, hour, account, multi, value in
            AllocationHourly.objects.values_list("node_id", "hour", "account", "multi_node", "gpu_hours")}


WINDOWS = st.lists(st.tuples(st.integers(-60 * 80, 60 * 3), st.integers(0, 60 * 80)), min_size=1, max_size=3)


@settings(max_examples=15, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=st.lists(job, max_size=10), windows=WINDOWS)
def test_the_rollup_equals_the_jobs_for_any_window_grouping_and_scope(fleet, drawn, windows):
    source, nodes = fleet
    try:
        pull.save_jobs(source, records(drawn), NOW, Quality())
        pull.save_jobs(source, records(drawn), NOW, Quality())  # a retried pull replaces, never adds
        spans = [(NOW + timedelta(minutes=a), NOW + timedelta(minutes=a + b)) for a, b in windows]
        spans.append((NOW - 30 * 24 * H, NOW))  # the 30 days of a page: whole days from the daily rows
        assert_rollup_is_the_definition(nodes, NOW, spans)
        # Rebuilt from the jobs, the rollup is the one the pulls kept.
        kept = stored_rollup()
        allocation_rollup.rebuild(NOW - 60 * H, NOW + 40 * H)
        assert stored_rollup() == pytest.approx(kept)
    finally:
        SlurmJob.objects.all().delete()
        AllocationHourly.objects.all().delete()
        AllocationDaily.objects.all().delete()


def test_a_later_reader_counts_running_jobs_up_to_its_clock_and_unsettled_runs_from_the_jobs(fleet):
    source, nodes = fleet
    pull.save_jobs(source, [JobRecord(job_id="1", submit_time=NOW - 5 * H, start_time=NOW - 5 * H, account="vision",
                                      partition="train", nodes="n0", node_count=1, gpus=4, running_until=NOW)],
                   NOW, Quality())
    # A run written by hand without a running_until counts up to whoever reads it.
    SlurmJob.objects.create(source=source, job_id="2", submit_time=NOW - 3 * H, start_time=NOW - 3 * H,
                            account="vision", partition="train", gpus=2, node_count=1)
    later = NOW + 10 * H
    found = allocation_rollup.allocated(NOW - 24 * H, later, later, "account")
    assert found["vision"]["gpu_hours"] == pytest.approx(4 * 5 + 2 * 13)
    assert_rollup_is_the_definition(nodes, later, [(NOW - 24 * H, later), (NOW - 2.5 * H, NOW + 0.5 * H)])


def test_rows_edited_one_at_a_time_keep_the_rollup_in_step(fleet):
    source, nodes = fleet
    stored = SlurmJob.objects.create(source=source, job_id="7", submit_time=NOW - 9 * H, start_time=NOW - 8 * H,
                                     end_time=NOW - 2 * H, account="vision", partition="train", gpus=8, node_count=1)
    allocated = SlurmJobNode.objects.create(job=stored, host="n2", node=nodes[2], gpus=8)
    assert AllocationHourly.objects.filter(node=nodes[2]).count() == 7  # 07:37 to 13:37: parts of 7 hours
    stored.end_time = NOW - 6 * H  # shortened: the hours it no longer covers are gone
    stored.save()
    assert AllocationHourly.objects.filter(node=nodes[2]).count() == 3
    allocation.rebalance([nodes[2].pk], NOW - 9 * H, NOW)  # n2 has 2 GPUs: the excess, written in bulk
    allocation_rollup.refresh([nodes[2].pk], [source.pk], NOW - 9 * H, NOW)
    assert_rollup_is_the_definition(nodes, NOW, [(NOW - 24 * H, NOW)])
    assert allocation_rollup.allocated(NOW - 24 * H, NOW, NOW, "node")[nodes[2].pk]["gpu_hours"] == pytest.approx(4)
    allocated.delete()  # no per-node row: reported as is, on no node
    assert allocation_rollup.allocated(NOW - 24 * H, NOW, NOW, "node") == {None: pytest.approx(
        {"gpu_hours": 16.0, "multi_node_gpu_hours": 0.0})}
    stored.delete()
    assert not AllocationHourly.objects.exists() and not AllocationDaily.objects.exists()


def test_reading_thirty_days_reads_the_rollup_not_the_history(fleet, django_assert_max_num_queries):
    source, nodes = fleet
    history = [JobRecord(job_id=str(n), submit_time=NOW - (n + 2) * H * 6, start_time=NOW - (n + 2) * H * 6,
                         end_time=NOW - (n + 1) * H * 6, account="vision", partition="train", nodes="n0",
                         node_count=1, gpus=8) for n in range(100)]
    pull.save_jobs(source, history, NOW, Quality())
    with django_assert_max_num_queries(6):  # daily, hourly, any unsettled run, the open hour (3)
        found = allocation_rollup.allocated(NOW - 30 * 24 * H, NOW, NOW, "account")
    assert found["vision"]["gpu_hours"] == pytest.approx(100 * 6 * 8)


@pytest.mark.django_db(transaction=True)
def test_refreshes_of_other_nodes_run_at_once_and_of_one_node_take_turns(fleet):
    """A refresh holds its transaction open: one of other nodes (the nodeless rows of no source) finishes at once,
    one of a node it holds waits for it."""
    source, nodes = fleet
    holding, release = threading.Event(), threading.Event()

    def first():
        with transaction.atomic():
            allocation_rollup.refresh([nodes[0].pk], [], NOW - 5 * H, NOW)
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=in_process(first))
    holder.start()
    try:
        assert holding.wait(60)
        assert waits_at_most(5, lambda: allocation_rollup.refresh([nodes[1].pk], [], NOW - 5 * H, NOW)) is None
        waited = waits_at_most(1, lambda: allocation_rollup.refresh([nodes[0].pk], [], NOW - 5 * H, NOW))
        assert "lock timeout" in str(waited)
    finally:
        release.set()
        holder.join(60)
    assert waits_at_most(5, lambda: allocation_rollup.refresh([nodes[0].pk], [source.pk], NOW - 5 * H, NOW)) is None
