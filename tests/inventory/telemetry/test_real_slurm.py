"""Against a real one-machine Slurm 22.05 (the ``slurm_cluster`` fixture, tests/helpers/slurmcluster.py; skipped
where Debian's slurm-wlm, slurmdbd, munge and mariadb-server are missing): the association limits issue 36's
allocations will write hold and release GPU jobs with Slurm's own reasons, and the real ``sacct --json`` of those
jobs reads through the portal's Slurm parser.

The last test reads a saved copy of such a document (tests/fixtures/slurm/sacct_22.05.8_debian12_testcluster.json,
written by the first test when ``SLURM_SAVE_FIXTURE=1``) and runs everywhere.
"""

import json
import os
import time

import pytest

from inventory.telemetry.slurm import parse_jobs
from tests.helpers.paths import FIXTURES

SAVED = FIXTURES / "slurm" / "sacct_22.05.8_debian12_testcluster.json"


def add_account(cluster, account, *limits):
    cluster.sacctmgr("add", "account", account, "Description=portal test team", "Organization=portal")
    cluster.sacctmgr("add", "user", "root", f"Account={account}")  # the tests submit as root
    if limits:
        cluster.sacctmgr("modify", "account", account, "set", *limits)


def wait_for_reason(cluster, job, reason, timeout=30):
    """Wait until the pending job shows ``reason`` (the scheduler sets it at its first pass over the job)."""
    deadline, seen = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        seen = (cluster.squeue_field(job, "%T"), cluster.squeue_field(job, "%r"))
        if seen == ("PENDING", reason):
            return
        time.sleep(0.25)
    pytest.fail(f"job {job} is {seen}, not pending for {reason}")


def parse_one(document, job):
    warnings = []
    records = parse_jobs(document, warnings)
    assert warnings == []
    assert [record.job_id for record in records] == [str(job)]
    return records[0]


@pytest.mark.slurm
def test_gpu_minutes_budget_holds_the_job_until_raised_then_sacct_reads_back(slurm_cluster):
    cluster = slurm_cluster
    add_account(cluster, "physics", "GrpTRESMins=gres/gpu=1")
    # With AccountingStorageEnforce=safe, a job starts only if its whole time limit fits the budget left:
    # 2 GPUs x 1 minute is over 1 GPU-minute, so it waits with Slurm's reason.
    job = cluster.sbatch("--account=physics", "--gres=gpu:2", "--time=1", "--job-name=budget", wrap="sleep 3")
    wait_for_reason(cluster, job, "AssocGrpGRESMinutes")

    cluster.sacctmgr("modify", "account", "physics", "set", "GrpTRESMins=gres/gpu=1000")
    assert cluster.wait_for_job(job) == "COMPLETED"

    document = cluster.run(["sacct", "--json", "-j", job])  # as sacct prints it: the parser reads the text
    if os.environ.get("SLURM_SAVE_FIXTURE") == "1":  # write the saved copy below again
        SAVED.write_text(document)
    record = parse_one(document, job)
    assert (record.gpus, record.account, record.partition, record.nodes, record.node_count, record.state) == (
        2, "physics", "gpu", cluster.node, 1, "COMPLETED")
    assert (record.cluster, record.user, record.name) == (cluster.cluster, "root", "budget")
    assert record.submit_time <= record.start_time < record.end_time
    assert (record.end_time - record.start_time).total_seconds() >= 3


@pytest.mark.slurm
def test_concurrent_gpu_limit_queues_the_second_job(slurm_cluster):
    cluster = slurm_cluster
    add_account(cluster, "chemistry", "GrpTRES=gres/gpu=2")
    first = cluster.sbatch("--account=chemistry", "--gres=gpu:2", "--time=1", wrap="sleep 4")
    second = cluster.sbatch("--account=chemistry", "--gres=gpu:1", "--time=1", wrap="sleep 1")
    wait_for_reason(cluster, second, "AssocGrpGRES")
    assert cluster.squeue_field(first, "%T") == "RUNNING"

    assert cluster.wait_for_job(second) == "COMPLETED"  # it starts once the first has given its GPUs back
    records = {r.job_id: r for r in parse_jobs(cluster.sacct_json("-j", f"{first},{second}"))}
    assert {job: (r.gpus, r.state) for job, r in records.items()} == {
        str(first): (2, "COMPLETED"), str(second): (1, "COMPLETED")}
    assert records[str(second)].start_time >= records[str(first)].end_time


def test_saved_test_cluster_answer_reads_as_a_2_gpu_completed_job():
    document = json.loads(SAVED.read_text())
    assert document["meta"]["Slurm"]["release"].startswith("22.05")
    record = parse_one(document, document["jobs"][0]["job_id"])
    assert (record.gpus, record.account, record.partition, record.node_count, record.state, record.cluster) == (
        2, "physics", "gpu", 1, "COMPLETED", "portaltest")
    assert record.nodes == document["jobs"][0]["nodes"]
    assert record.end_time > record.start_time >= record.submit_time
