"""The portal's Slurm sync against a real one-machine Slurm 22.05 (the ``slurm_cluster`` fixture; skipped where its
Debian packages are missing): an approved allocation becomes an account with its members and limits once a manager
applies the look's changes, read back with sacctmgr itself; the next look has nothing to change; a limit changed by
hand shows as drift and the change that would undo it is marked; a stale look cannot be applied; a team over its
budget sees its next job held with Slurm's reason, in words, on the allocation's page."""

import time
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.test import Client, override_settings
from django.utils import timezone
from django.utils.html import escape

from inventory.allocations import sync
from inventory.models import SlurmJob, SlurmSync, Team, TeamAllocation, TeamMember, TelemetrySource
from inventory.teams import slurm_checks
from inventory.telemetry import pull, slurm
from inventory.telemetry.records import Quality
from portal.roles import MANAGER, RESEARCHER
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.slurm


@pytest.fixture
def on_cluster(slurm_cluster, db):
    with override_settings(SLURM_CLUSTER=slurm_cluster.cluster, SLURM_CONF=slurm_cluster.env["SLURM_CONF"],
                           SLURM_SYNC_BACKEND="sacctmgr"):
        yield slurm_cluster


def association(cluster, account):
    line = cluster.sacctmgr("show", "assoc", "-P", "--noheader", "where", f"account={account}", "user=",
                            "format=account,share,grptres,grptresmins").strip().splitlines()
    return line[0].split("|") if line else None


def test_an_approved_allocation_reaches_slurm_and_a_hand_edit_shows_as_drift(on_cluster):
    today = timezone.localdate()
    team = Team.objects.create(name="portal-vision", description="Vision lab")
    TeamMember.objects.create(team=team, user=make_user("nobody", RESEARCHER))  # a Slurm user of the machine
    TeamAllocation.objects.create(team=team, start=today - timedelta(days=1), end=today + timedelta(days=30),
                                  gpu_hours=100, max_gpus=4, fairshare=30)
    ann = make_user("ann", MANAGER)
    look = sync.propose(ann)
    assert look.error == "" and look.status == SlurmSync.Status.PROPOSED, look.error
    described = [change["action"] for change in look.changes]
    assert described[:2] == ["add_account", "add_user"] and described.count("set_limit") == 3
    done = sync.apply(look, ann)
    assert done.status == SlurmSync.Status.APPLIED
    assert [row.status for row in done.applied.all()] == ["verified"] * len(look.changes)
    assert association(on_cluster, "portal-vision") == ["portal-vision", "30", "gres/gpu=4", "gres/gpu=6000"]
    again = sync.propose(ann)
    assert again.status == SlurmSync.Status.IN_SYNC and again.changes == [] and again.drift == []

    on_cluster.sacctmgr("-i", "modify", "account", "portal-vision", "set", "GrpTRESMins=gres/gpu=9000")
    edited = sync.propose(ann)
    assert [(d["field"], d["applied"], d["actual"]) for d in edited.drift] == [("GrpTRESMins", 6000, 9000)]
    assert [(c["before"], c["after"], c["overrides_drift"]) for c in edited.changes] == [(9000, 6000, True)]
    newer = sync.propose(ann)
    with pytest.raises(ValidationError, match="superseded"):
        sync.apply(edited, ann)
    sync.apply(newer, ann)
    assert association(on_cluster, "portal-vision")[3] == "gres/gpu=6000"


def test_a_team_over_its_budget_sees_its_job_held_and_why(on_cluster):
    """An allocation of 1 GPU-hour (GrpTRESMins=gres/gpu=60) synced; a job asking 8 GPUs for 10 minutes (80
    GPU-minutes) pends with AssocGrpGRESMinutes; the real ``sacct --json`` read through the Slurm source's parser and
    stored (pending: accounting has its reason only once it starts); the allocation's page, which reads the queue,
    shows the job held and says why."""
    today = timezone.localdate()
    team = Team.objects.create(name="portal-held")
    TeamMember.objects.create(team=team, user=make_user("rooty", RESEARCHER), slurm_user="root")  # jobs run as root
    allocation = TeamAllocation.objects.create(team=team, start=today - timedelta(days=1),
                                               end=today + timedelta(days=30), gpu_hours=1)
    ann = make_user("ann", MANAGER)
    assert sync.apply(sync.propose(ann), ann).status == SlurmSync.Status.APPLIED
    job = on_cluster.sbatch("-A", "portal-held", "-p", "gpu", "--gres=gpu:8", "--time=10", wrap="sleep 1")
    deadline = time.monotonic() + 30
    while on_cluster.squeue_field(str(job), "%r") != "AssocGrpGRESMinutes" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert on_cluster.squeue_field(str(job), "%r") == "AssocGrpGRESMinutes"

    source = TelemetrySource.objects.create(name="real sacct", kind="slurm", url="http://slurm.example/")
    deadline = time.monotonic() + 30
    while not (records := slurm.parse_jobs(on_cluster.sacct_json("-j", str(job)))) and time.monotonic() < deadline:
        time.sleep(0.5)  # slurmctld sends a pending job to slurmdbd in its own time
    assert records
    pull.save_jobs(source, records, timezone.now(), Quality())
    stored = SlurmJob.objects.get(job_id=str(job))
    assert (stored.state, stored.account) == ("PENDING", "portal-held")
    client = Client()
    client.force_login(ann)
    page = client.get(allocation.get_absolute_url()).content.decode()  # the queue read live: sacct has no reason yet
    assert f"<td>{job}</td>" in page and "<td>AssocGrpGRESMinutes</td>" in page
    assert escape(slurm_checks.explain_reason("AssocGrpGRESMinutes")) in page
    on_cluster.run(["scancel", str(job)])
