"""Against a real one-machine Slurm 22.05 (the ``slurm_cluster`` fixture, tests/helpers/slurmcluster.py; skipped
where Debian's slurm-wlm, slurmdbd, munge and mariadb-server are missing): the association limits issue 36's
allocations will write hold and release GPU jobs with Slurm's own reasons, and the real ``sacct --json`` of those
jobs reads through the portal's Slurm parser, as does slurmrestd's /slurmdb/ jobs answer (skipped without Debian's
slurmrestd and slurm-wlm-jwt-plugin), also through the portal's Slurm source (``slurm.collect``).

The last test reads a saved copy of such a document (tests/fixtures/slurm/sacct_22.05.8_debian12_testcluster.json,
written by the first test when ``SLURM_SAVE_FIXTURE=1``) and runs everywhere.
"""

import json
import os
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
import requests

from inventory.telemetry import slurm
from inventory.telemetry.slurm import parse_jobs
from tests.helpers.paths import FIXTURES
from tests.helpers.slurmcluster import slurmrestd_missing

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


def read_back(cluster, job, timeout=30):
    """``sacct --json`` of a finished job as sacct prints it (the parser reads the text) and its record, once the
    record has its partition: accounting can show a job held at submit COMPLETED a moment before its record has every
    field (seen once, on a machine running the whole suite: the partition still empty)."""
    deadline = time.monotonic() + timeout
    while True:
        document = cluster.run(["sacct", "--json", "-j", job])
        record = parse_one(document, job)
        if record.partition or time.monotonic() > deadline:
            return document, record
        time.sleep(0.5)


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

    document, record = read_back(cluster, job)
    if os.environ.get("SLURM_SAVE_FIXTURE") == "1":  # write the saved copy below again
        SAVED.write_text(document)
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


def rest_api(cluster):
    if slurmrestd_missing():
        pytest.skip(f"no slurmrestd: missing Debian packages {', '.join(slurmrestd_missing())}")
    return cluster.slurmrestd()


def an_hour_ago():
    """A Slurm time string: 22.05's slurmdb endpoints refuse epoch seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))


@pytest.mark.slurm
def test_slurmrestd_slurmdb_jobs_read_through_the_parser(slurm_cluster):
    cluster = slurm_cluster
    url, headers = rest_api(cluster)
    add_account(cluster, "biology")
    job = cluster.sbatch("--account=biology", "--gres=gpu:4", "--time=1", wrap="true")
    assert cluster.wait_for_job(job) == "COMPLETED"

    # A job appears in time-window queries once slurmctld has sent slurmdbd its eligible time (sacct -j finds it
    # before): up to a few seconds after it ended.
    jobs, deadline, records = f"{url}/slurmdb/v0.0.38/jobs", time.monotonic() + 30, {}
    while str(job) not in records and time.monotonic() < deadline:
        answer = requests.get(jobs, headers=headers, params={"start_time": an_hour_ago(), "end_time": "now"},
                              timeout=30)
        assert answer.status_code == 200, answer.text[:500]
        records = {record.job_id: record for record in parse_jobs(answer.content)}
        time.sleep(0.5)
    assert (records[str(job)].gpus, records[str(job)].account, records[str(job)].state) == (4, "biology", "COMPLETED")

    # Why the portal's Slurm source sends the user name and ``uts``-prefixed times (next test).
    token_only = {"X-SLURM-USER-TOKEN": headers["X-SLURM-USER-TOKEN"]}
    assert requests.get(jobs, headers=token_only, timeout=30).status_code == 401
    epoch = {"start_time": int(time.time()) - 3600, "end_time": int(time.time())}
    assert requests.get(jobs, headers=headers, params=epoch, timeout=30).status_code == 500


@pytest.mark.slurm
def test_the_portal_slurm_source_reads_a_real_22_05_slurmrestd(slurm_cluster):
    cluster = slurm_cluster
    url, headers = rest_api(cluster)
    add_account(cluster, "geology")
    job = cluster.sbatch("--account=geology", "--gres=gpu:3", "--time=1", wrap="true")
    assert cluster.wait_for_job(job) == "COMPLETED"
    source = SimpleNamespace(name="real slurmrestd", url=f"{url}/slurmdb/v0.0.38/jobs", timeout_seconds=30,
                             auth_token=headers["X-SLURM-USER-TOKEN"], user_name=headers["X-SLURM-USER-NAME"])
    end = datetime.now(UTC) + timedelta(minutes=1)
    # The job shows in a time window a few seconds after it ended (see the test above).
    deadline, records = time.monotonic() + 30, {}
    while str(job) not in records and time.monotonic() < deadline:
        records = {record.job_id: record for record in slurm.collect(source, end - timedelta(hours=1), end).jobs}
        time.sleep(0.5)
    assert (records[str(job)].gpus, records[str(job)].account, records[str(job)].state) == (3, "geology", "COMPLETED")


def test_saved_test_cluster_answer_reads_as_a_2_gpu_completed_job():
    document = json.loads(SAVED.read_text())
    assert document["meta"]["Slurm"]["release"].startswith("22.05")
    record = parse_one(document, document["jobs"][0]["job_id"])
    assert (record.gpus, record.account, record.partition, record.node_count, record.state, record.cluster) == (
        2, "physics", "gpu", 1, "COMPLETED", "portaltest")
    assert record.nodes == document["jobs"][0]["nodes"]
    assert record.end_time > record.start_time >= record.submit_time


def test_saved_answer_keeps_slurms_state_reason():
    """The saved job waited for its team's budget before it ran: 22.05 keeps that reason in accounting
    (``state.reason``), stored as the job's ``reason``; Slurm's "None" is no reason."""
    document = json.loads(SAVED.read_text())
    assert parse_one(document, document["jobs"][0]["job_id"]).reason == "AssocGrpGRESMinutes"
    document["jobs"][0]["state"]["reason"] = "None"
    assert parse_one(document, document["jobs"][0]["job_id"]).reason == ""
