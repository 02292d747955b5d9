"""The sync against a real one-machine Slurm 22.05 (the ``slurm_cluster`` fixture, tests/helpers/slurmcluster.py;
skipped where Debian's slurm-wlm, slurmdbd, munge and mariadb-server are missing): accounts, users and limits
created through ``slurm_sync``, read back equal, a second diff empty; a hand edit shown as drift and a stale change
refused; jobs over a team's budget held with Slurm's reason, which the portal says in words; the configuration
checks on the cluster's real configuration. Each test has its own accounts (the cluster lives for the session)."""

import functools
import subprocess
import time

import pytest

from inventory.teams import sacctmgr, slurm_checks, slurm_sync
from inventory.teams.slurm_sync import (
    REMOVE_USER,
    SET_LIMIT,
    STALE,
    VERIFIED,
    Allocation,
    Change,
    Desired,
    TeamAccount,
    apply,
    apply_all,
    diff,
    drift,
    read_state,
    wanted,
)

pytestmark = pytest.mark.slurm


def client(cluster):
    """Slurm's clients with the test cluster's SLURM_CONF: the ``runner`` every function here takes."""
    return functools.partial(subprocess.run, env=cluster.env)


def sync(cluster, desired, last_applied=None):
    """What the portal does once a manager approves: diff, apply each change, all verified."""
    runner = client(cluster)
    want = wanted(desired)
    accounts = [team.account for team in desired.accounts]
    changes = diff(want, read_state(cluster.cluster, accounts, runner=runner), last_applied)
    results = apply_all([Change.from_dict(change.as_dict()) for change in changes], runner)  # as stored
    assert [(r.change.describe(), r.status, r.output if not r.ok else "") for r in results] == [
        (change.describe(), VERIFIED, "") for change in changes]
    return want, changes


def test_the_sync_creates_accounts_users_and_limits_and_a_second_diff_is_empty(slurm_cluster):
    cluster, runner = slurm_cluster, client(slurm_cluster)
    desired = Desired(cluster.cluster, [TeamAccount(
        "sync-astro", ["nobody", "daemon"], description="astronomy team", organization="portal", fairshare=20,
        allocations=[Allocation(gpus=4, gpu_hours=100), Allocation(gpus=2, gpu_hours=10, partition="gpu")])])
    want, changes = sync(cluster, desired)
    assert len(changes) == 10  # account, 2 users, fair share, 2 limits, QOS, its 2 limits, the grant

    # Read back with sacctmgr itself, not through the sync's reader.
    line = cluster.sacctmgr("show", "assoc", "-P", "--noheader", "where", "account=sync-astro", "user=",
                            "format=account,parentname,share,grptres,grptresmins,qos").strip()
    assert line == "sync-astro|root|20|gres/gpu=4|gres/gpu=6000|normal,sync-astro-gpu"
    users = cluster.sacctmgr("show", "assoc", "-P", "--noheader", "where", "account=sync-astro", "format=user")
    assert sorted(users.split()) == ["daemon", "nobody"]
    qos = cluster.sacctmgr("show", "qos", "-P", "--noheader", "where", "name=sync-astro-gpu",
                           "format=name,flags,grptres,grptresmins").strip()
    assert qos == "sync-astro-gpu|NoDecay|gres/gpu=2|gres/gpu=600"
    description = cluster.sacctmgr("show", "account", "-P", "--noheader", "sync-astro", "format=description,org")
    assert description.strip() == "astronomy team|portal"

    actual = read_state(cluster.cluster, ["sync-astro"], runner=runner)
    assert diff(want, actual, want) == [] and drift(want, actual) == []

    # A user the portal added leaves when the team no longer has them; the account's other fields stay.
    desired.accounts[0].users = ["nobody"]
    _, changes = sync(cluster, desired, last_applied=want)
    assert [(c.action, c.name) for c in changes] == [(REMOVE_USER, "daemon")]
    users = cluster.sacctmgr("show", "assoc", "-P", "--noheader", "where", "account=sync-astro", "format=user")
    assert users.split() == ["nobody"]


def test_a_limit_changed_by_hand_is_drift_and_a_stale_change_refuses(slurm_cluster):
    cluster, runner = slurm_cluster, client(slurm_cluster)
    desired = Desired(cluster.cluster, [TeamAccount("sync-drift", ["nobody"], allocations=[
        Allocation(gpus=4, gpu_hours=50)])])
    applied, _ = sync(cluster, desired)
    # The portal's next diff, made before the hand edit: 50 → 80 GPU-hours.
    desired.accounts[0].allocations = [Allocation(gpus=4, gpu_hours=80)]
    pending = diff(wanted(desired), read_state(cluster.cluster, ["sync-drift"], runner=runner), applied)
    assert [(c.describe(), c.overrides_drift) for c in pending] == [
        ("set GrpTRESMins gres/gpu of account sync-drift from 3000 to 4800", False)]

    cluster.sacctmgr("modify", "account", "sync-drift", "set", "GrpTRESMins=gres/gpu=9000", "GrpTRES=gres/gpu=6")
    actual = read_state(cluster.cluster, ["sync-drift"], runner=runner)
    assert [(d.field, d.tres, d.applied, d.actual) for d in drift(applied, actual)] == [
        ("GrpTRES", "gres/gpu", 4, 6), ("GrpTRESMins", "gres/gpu", 3000, 9000)]

    result = apply(pending[0], runner)  # approved before the hand edit: Slurm no longer holds its "before"
    assert (result.status, result.read) == (STALE, 9000)
    assert "9000" in cluster.sacctmgr("show", "assoc", "-P", "--noheader", "where", "account=sync-drift", "user=",
                                      "format=grptresmins")  # not overwritten
    # Computed again, the diff shows both hand edits as what it would undo.
    again = diff(wanted(desired), actual, applied)
    assert [(c.field, c.before, c.after, c.overrides_drift) for c in again] == [
        ("GrpTRES", 6, 4, True), ("GrpTRESMins", 9000, 4800, True)]


def wait_for_reason(cluster, job, reason, timeout=30):
    deadline, seen = time.monotonic() + timeout, ()
    while time.monotonic() < deadline:
        seen = (cluster.squeue_field(job, "%T"), cluster.squeue_field(job, "%r"))
        if seen == ("PENDING", reason):
            return
        time.sleep(0.25)
    pytest.fail(f"job {job} is {seen}, not pending for {reason}")


def test_a_team_over_its_budget_waits_with_slurms_reason_in_words(slurm_cluster):
    cluster = slurm_cluster
    # 1 GPU-minute on the cluster, 1 in partition gpu (its QOS); the tests submit as root.
    desired = Desired(cluster.cluster, [TeamAccount("sync-budget", ["root"], allocations=[
        Allocation(gpu_hours=1 / 60), Allocation(gpu_hours=1 / 60, partition="gpu")])])
    sync(cluster, desired)
    jobs = []
    try:
        # Enforce=safe: 2 GPUs x 1 minute does not fit 1 GPU-minute, so the job waits.
        jobs.append(cluster.sbatch("--account=sync-budget", "--gres=gpu:2", "--time=1", wrap="sleep 1"))
        wait_for_reason(cluster, jobs[-1], "AssocGrpGRESMinutes")
        assert slurm_checks.explain_reason(cluster.squeue_field(jobs[-1], "%r")) == (
            "the team's GPU-hour budget in Slurm is used up")
        # The partition budget holds a job that asks for the team's partition QOS, whatever the account has left.
        sync(cluster, Desired(cluster.cluster, [TeamAccount("sync-budget", ["root"], allocations=[
            Allocation(gpu_hours=100), Allocation(gpu_hours=1 / 60, partition="gpu")])]))
        jobs.append(cluster.sbatch("--account=sync-budget", "--qos=sync-budget-gpu", "--partition=gpu",
                                   "--gres=gpu:2", "--time=1", wrap="sleep 1"))
        wait_for_reason(cluster, jobs[-1], "QOSGrpGRESMinutes")
        assert slurm_checks.explain_reason("QOSGrpGRESMinutes").startswith(
            "the GPU-hour budget of the team's partition allocation")
    finally:
        if jobs:
            cluster.run(["scancel", *jobs], check=False)


def test_config_checks_on_the_real_configuration(slurm_cluster):
    cluster, runner = slurm_cluster, client(slurm_cluster)
    sync(cluster, Desired(cluster.cluster, [TeamAccount("sync-checks", ["nobody"], allocations=[
        Allocation(gpu_hours=10), Allocation(gpu_hours=5, partition="gpu")])]))
    warnings = slurm_checks.read_and_check(cluster.cluster, ["gres/gpu"], runner=runner)
    found = {(w.code, w.subject) for w in warnings}
    # The test cluster tracks GPUs and enforces limits (safe), but decays usage over 7 days and lets any QOS
    # into partition gpu.
    expected = {("budget_decays", "sync-checks"), ("partition_allows_any_qos", "gpu"), ("qos_usage_kept", "NoDecay")}
    assert expected <= found
    assert not {code for code, _ in found} & {"gpu_not_tracked", "limits_not_enforced", "qos_not_enforced"}
    # What qos_usage_kept asks for each month: Slurm takes it (it refuses any RawUsage but 0).
    for target in ({"qos": "sync-checks-gpu"}, {"account": "sync-checks"}):
        sacctmgr.write(sacctmgr.reset_usage_args(cluster.cluster, **target), runner=runner)

    config = sacctmgr.read_config(runner)
    config["AccountingStorageTRES"] = ",".join(
        tres for tres in config["AccountingStorageTRES"].split(",") if tres != "gres/gpu")
    altered = slurm_checks.check(config, [], [], {}, ["gres/gpu", "gres/gpu:a100"])
    assert [w.code for w in altered] == ["gpu_not_tracked", "gpu_type_not_tracked"]
    assert slurm_checks.read_billing_weights(runner) == {"gpu": {}}


def test_a_typed_gpu_limit_is_refused_where_slurm_does_not_track_the_model(slurm_cluster):
    cluster, runner = slurm_cluster, client(slurm_cluster)
    desired = Desired(cluster.cluster, [TeamAccount("sync-typed", ["nobody"], allocations=[
        Allocation(gpus=2, gpu_type="a100")])])
    changes = diff(wanted(desired), read_state(cluster.cluster, ["sync-typed"], runner=runner))
    results = apply_all(changes, runner)
    assert [r.status for r in results] == [VERIFIED, VERIFIED, "error"]  # account, user, then the typed limit
    assert results[-1].change.action == SET_LIMIT and "gres/gpu:a100" in results[-1].output
    assert slurm_sync.read_state(cluster.cluster, ["sync-typed"], runner=runner).get(
        "account", "sync-typed").grp_tres == {}
