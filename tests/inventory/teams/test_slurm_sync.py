"""inventory/teams/slurm_sync.py without a cluster: the desired state, the diff against the saved real
associations of Slurm 22.05.8 (tests/fixtures/slurm/sacctmgr_22.05.8: physics with GrpTRES gres/gpu=8,
GrpTRESMins gres/gpu=6000, Fairshare 10, QOS physics-gpu; chemistry with gres/gpu=2), drift, and compare-and-set
with a stand-in for sacctmgr. tests/inventory/teams/test_slurm_sync_real.py does the same against real Slurm."""

import json
from types import SimpleNamespace

import pytest

from inventory.teams import sacctmgr
from inventory.teams.slurm_sync import (
    ADD_ACCOUNT,
    ADD_QOS,
    ADD_USER,
    ERROR,
    GRANT_QOS,
    REMOVE_USER,
    SET_LIMIT,
    STALE,
    VERIFIED,
    Allocation,
    ApplyResult,
    Change,
    Desired,
    State,
    TeamAccount,
    apply,
    diff,
    drift,
    observed,
    wanted,
    wanted_tres,
)
from tests.helpers.paths import FIXTURES

SAVED = FIXTURES / "slurm" / "sacctmgr_22.05.8"


def saved_state():
    return observed("portaltest", sacctmgr.parse_associations((SAVED / "assoc.txt").read_text()),
                    sacctmgr.parse_qos((SAVED / "qos.txt").read_text()))


def physics(**overrides):
    team = {"account": "physics", "users": ["root"], "description": "physics team", "organization": "portal",
            "fairshare": 10, "allocations": [Allocation(gpus=8, gpu_hours=100),
                                             Allocation(gpus=4, gpu_hours=10, partition="gpu")]}
    return TeamAccount(**{**team, **overrides})


def test_the_saved_cluster_as_a_state():
    state = saved_state()
    account = state.get("account", "physics")
    assert (account.exists, account.users, account.fairshare, account.grp_tres, account.grp_tres_mins) == (
        True, ["root"], 10, {"gres/gpu": 8}, {"gres/gpu": 6000})  # billing=100000 is not the portal's
    assert state.get("qos", "physics-gpu").grp_tres_mins == {"gres/gpu": 600}
    assert state.get("account", "chemistry").users == ["daemon", "nobody"]
    assert not state.get("account", "biology").exists


def test_hours_become_minutes_partitions_become_qos_and_models_typed_tres():
    desired = Desired("portaltest", [TeamAccount("vision", ["ana"], allocations=[
        Allocation(gpus=4, gpu_hours=1.5), Allocation(gpu_hours=10, gpu_type="A100"),
        Allocation(gpus=2, gpu_hours=20, partition="gpu"), Allocation(gpus=1, gpu_hours=5, partition="gpu")])])
    state = wanted(desired)
    account = state.get("account", "vision")
    assert (account.grp_tres, account.grp_tres_mins, account.qos) == (
        {"gres/gpu": 4}, {"gres/gpu": 90, "gres/gpu:a100": 600}, ["vision-gpu"])
    qos = state.get("qos", "vision-gpu")
    assert (qos.grp_tres, qos.grp_tres_mins, qos.flags) == ({"gres/gpu": 3}, {"gres/gpu": 1500}, ["NoDecay"])
    assert wanted_tres(desired) == ["gres/gpu", "gres/gpu:a100"]
    assert Desired.from_dict(json.loads(json.dumps(desired.as_dict()))) == desired


def test_the_saved_cluster_already_holds_physics_allocations():
    # 8 GPUs and 100 GPU-hours (6000 minutes) on the cluster, 4 GPUs and 10 GPU-hours in partition gpu (its QOS).
    assert diff(wanted(Desired("portaltest", [physics()])), saved_state()) == []
    changes = diff(wanted(Desired("portaltest", [physics(allocations=[
        Allocation(gpus=8, gpu_hours=100), Allocation(gpus=6, gpu_hours=10, partition="gpu")])])), saved_state())
    assert [(c.describe(), c.command()) for c in changes] == [
        ("set GrpTRES gres/gpu of qos physics-gpu from 4 to 6",
         "sacctmgr -i modify qos where name=physics-gpu set GrpTRES=gres/gpu=6")]


@pytest.mark.parametrize("team, said", [
    (TeamAccount("Physics"), "'Physics'"),  # Slurm would store physics: the next diff would never be empty
    (TeamAccount("physics", ["bob smith"]), "'bob smith'"),
    (TeamAccount("physics", allocations=[Allocation(gpu_hours=-1)]), "negative"),
    (TeamAccount("physics", allocations=[Allocation(gpus=1, gpu_type="a100;x")]), "'a100;x'"),
])
def test_what_slurm_would_refuse_or_misread_is_refused_first(team, said):
    with pytest.raises(ValueError, match=said):
        wanted(Desired("portaltest", [team]))


def test_two_teams_partitions_cannot_share_a_qos():
    teams = [TeamAccount("ml-a", allocations=[Allocation(gpus=1, partition="b")]),
             TeamAccount("ml", allocations=[Allocation(gpus=1, partition="a-b")])]
    with pytest.raises(ValueError, match="QOS ml-a-b would hold both"):
        wanted(Desired("portaltest", teams))


def test_a_new_team_is_created_step_by_step():
    team = TeamAccount("biology", ["nobody", "alice"], description="biology team", organization="portal",
                       allocations=[Allocation(gpus=2, gpu_hours=50, gpu_type="h100"),
                                    Allocation(gpu_hours=5, partition="gpu")])
    changes = diff(wanted(Desired("portaltest", [team])), saved_state())
    assert [c.command() for c in changes] == [
        "sacctmgr -i add account biology Cluster=portaltest Parent=root 'Description=biology team' "
        "Organization=portal",
        "sacctmgr -i add user alice Account=biology Cluster=portaltest",
        "sacctmgr -i add user nobody Account=biology Cluster=portaltest",
        "sacctmgr -i modify account where name=biology cluster=portaltest set GrpTRES=gres/gpu:h100=2",
        "sacctmgr -i modify account where name=biology cluster=portaltest set GrpTRESMins=gres/gpu:h100=3000",
        "sacctmgr -i add qos biology-gpu Flags=NoDecay",
        "sacctmgr -i modify qos where name=biology-gpu set GrpTRESMins=gres/gpu=300",
        "sacctmgr -i modify account where name=biology cluster=portaltest set QOS+=biology-gpu",
    ]
    assert [c.action for c in changes] == [ADD_ACCOUNT, ADD_USER, ADD_USER, SET_LIMIT, SET_LIMIT, ADD_QOS,
                                           SET_LIMIT, GRANT_QOS]
    assert not any(c.overrides_drift for c in changes)
    stored = json.loads(json.dumps([c.as_dict() for c in changes]))  # kept for approval, read back later
    assert [Change.from_dict(c) for c in stored] == changes


def test_limits_are_changed_and_cleared_and_only_users_the_portal_added_are_removed():
    applied = wanted(Desired("portaltest", [physics(users=["bob"])]))  # the portal added bob, not root
    want = wanted(Desired("portaltest", [physics(users=["carol"], fairshare=20, allocations=[
        Allocation(gpu_hours=200)])]))
    changes = diff(want, saved_state(), applied)
    assert [c.describe() for c in changes] == [
        "add user carol to account physics",
        "set Fairshare of account physics from 10 to 20",
        "clear GrpTRES gres/gpu of account physics (was 8)",
        "set GrpTRESMins gres/gpu of account physics from 6000 to 12000",
    ]  # root stays (the portal never added it); bob is not in Slurm; the QOS is left as it is
    assert changes[2].command() == (
        "sacctmgr -i modify account where name=physics cluster=portaltest set GrpTRES=gres/gpu=-1")
    applied = wanted(Desired("portaltest", [physics(users=["root"])]))
    changes = diff(wanted(Desired("portaltest", [physics(users=[])])), saved_state(), applied)
    assert [(c.action, c.name, c.command()) for c in changes] == [
        (REMOVE_USER, "root", "sacctmgr -i remove user where name=root account=physics cluster=portaltest")]


def test_drift_is_what_changed_by_hand_and_a_change_undoing_it_says_so():
    applied = wanted(Desired("portaltest", [physics(allocations=[Allocation(gpus=8, gpu_hours=50)])]))
    found = drift(applied, saved_state())
    assert [(d.kind, d.name, d.field, d.tres, d.applied, d.actual) for d in found] == [
        ("account", "physics", "GrpTRESMins", "gres/gpu", 3000, 6000)]
    assert found[0].describe() == (
        "GrpTRESMins gres/gpu of account physics is 6000 in Slurm; the portal applied 3000")
    changes = diff(applied, saved_state(), applied)
    assert [(c.describe(), c.overrides_drift) for c in changes] == [
        ("set GrpTRESMins gres/gpu of account physics from 6000 to 3000", True)]
    gone = drift(wanted(Desired("portaltest", [TeamAccount("biology", ["ana"])])), saved_state())
    assert [(d.field, d.applied, d.actual) for d in gone] == [("exists", True, False)]
    state = State.from_dict(json.loads(json.dumps(applied.as_dict())))
    assert state == applied and drift(state, saved_state()) == found


class FakeSacctmgr:
    """sacctmgr's readers answer the saved state; a write is recorded (and changes nothing)."""

    def __init__(self):
        self.writes = []

    def __call__(self, command, **kwargs):
        if command[1] == "show":
            text = (SAVED / ("assoc.txt" if command[2] == "assoc" else "qos.txt")).read_text()
            return SimpleNamespace(returncode=0, stdout=text, stderr="")
        self.writes.append(command)
        return SimpleNamespace(returncode=0, stdout=" Modified account associations...\n", stderr="")


def test_apply_refuses_a_stale_change_and_verifies_what_it_reads_back():
    runner = FakeSacctmgr()
    stale = Change(SET_LIMIT, "portaltest", "physics", name="physics", field="GrpTRESMins", tres="gres/gpu",
                   before=3000, after=1200)
    result = apply(stale, runner)
    assert (result.status, result.read, runner.writes) == (STALE, 6000, [])
    assert "compute the diff again" in result.output
    # Slurm already holds the value the change wants: running it verifies at once.
    done = Change(SET_LIMIT, "portaltest", "physics", name="physics", field="GrpTRES", tres="gres/gpu",
                  before=8, after=8)
    result = apply(done, runner)
    assert (result.status, result.read, result.ok) == (VERIFIED, 8, True)
    assert runner.writes == [["sacctmgr", "-i", "modify", "account", "where", "name=physics", "cluster=portaltest",
                              "set", "GrpTRES=gres/gpu=8"]]
    # The fake does not change anything: a change to another value reads back the old one.
    failed = apply(Change(SET_LIMIT, "portaltest", "physics", name="physics", field="GrpTRES", tres="gres/gpu",
                          before=8, after=16), runner)
    assert (failed.status, failed.read) == ("failed", 8)
    assert ApplyResult.from_dict(json.loads(json.dumps(failed.as_dict()))) == failed


def test_apply_reports_sacctmgr_refusing():
    def refusing(command, **kwargs):
        if command[1] == "show":
            return FakeSacctmgr()(command)
        return SimpleNamespace(returncode=1, stdout="", stderr="sacctmgr: error: Unknown option\n")

    result = apply(Change(ADD_QOS, "portaltest", "physics", target="qos", name="physics-cpu", before=False,
                          after=True), refusing)
    assert (result.status, result.read) == (ERROR, False) and "Unknown option" in result.output
