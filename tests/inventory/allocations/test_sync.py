"""The Slurm sync on the demo's simulated cluster (``inventory.teams.slurm_simulator``), which runs everywhere: the
simulator answers as the real 22.05 does (the saved real answers read back the same through it), a look proposes
the changes, a manager applies them and they read back; the next look has nothing to change; a hand edit is drift;
who may look and apply; a stale look refused; Slurm unreadable is an error on the page, not a 500."""

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from inventory.allocations import sync
from inventory.models import SlurmSync, Team, TeamAllocation, TeamMember
from inventory.teams import sacctmgr, slurm_simulator
from portal.roles import MANAGER, RESEARCHER, VIEWER
from tests.helpers.accounts import make_user
from tests.helpers.paths import FIXTURES

REAL = FIXTURES / "slurm" / "sacctmgr_22.05.8"


@pytest.fixture
def simulated(tmp_path, db):
    with override_settings(VAR_DIR=tmp_path, SLURM_SYNC_BACKEND="simulator", SLURM_CLUSTER="demo"):
        slurm_simulator.seed("demo", {"vision": {"users": ["alice"], "share": 10, "grptres": "gres/gpu=16"}},
                             {"gpu": {"AllowQos": "ALL", "TRESBillingWeights": "CPU=1.0,GRES/gpu=2.0"}})
        yield


def rows(text, fields):
    return [dict(zip(fields, line.split("|"), strict=True)) for line in text.splitlines() if line.strip()]


def test_the_simulator_answers_as_the_real_slurm(tmp_path):
    with override_settings(VAR_DIR=tmp_path):
        slurm_simulator.save({"associations": rows((REAL / "assoc.txt").read_text(), sacctmgr.ASSOC_FIELDS),
                              "qos": rows((REAL / "qos.txt").read_text(), sacctmgr.QOS_FIELDS),
                              "config": sacctmgr.parse_config((REAL / "config.txt").read_text()),
                              "partitions": sacctmgr.parse_partitions((REAL / "partitions.txt").read_text())})
        run = slurm_simulator.runner()
        assert sacctmgr.read_associations("portaltest", runner=run) == sacctmgr.parse_associations(
            (REAL / "assoc.txt").read_text())
        assert sacctmgr.read_qos(runner=run) == sacctmgr.parse_qos((REAL / "qos.txt").read_text())
        assert sacctmgr.read_config(runner=run) == sacctmgr.parse_config((REAL / "config.txt").read_text())
        assert sacctmgr.read_partitions(runner=run) == sacctmgr.parse_partitions(
            (REAL / "partitions.txt").read_text())
        with pytest.raises(sacctmgr.SlurmCommandError, match="Nothing new added"):
            sacctmgr.write(sacctmgr.add_account_args("portaltest", "physics"), runner=run)


def team_with_allocation():
    today = timezone.localdate()
    team = Team.objects.create(name="vision")
    TeamMember.objects.create(team=team, user=make_user("alice", RESEARCHER))
    TeamMember.objects.create(team=team, user=make_user("bert", RESEARCHER), slurm_user="bsmith")
    TeamAllocation.objects.create(team=team, start=today, end=today + timedelta(days=30), gpu_hours=500, max_gpus=8,
                                  fairshare=20)
    TeamAllocation.objects.create(team=team, partition="gpu", start=today, end=today + timedelta(days=30),
                                  gpu_hours=100)
    return team


def test_look_apply_and_look_again(simulated):
    team_with_allocation()
    ann = make_user("ann", MANAGER)
    look = sync.propose(ann)
    assert look.error == "" and look.status == SlurmSync.Status.PROPOSED
    said = [sync_change["action"] for sync_change in look.changes]
    assert said.count("add_user") == 1 and "add_qos" in said and "grant_qos" in said  # bsmith; the gpu QOS
    limits = {(c["field"], c["before"], c["after"]) for c in look.changes if c["action"] == "set_limit"}
    assert ("GrpTRES", 16, 8) in limits and ("GrpTRESMins", None, 30000) in limits and ("Fairshare", 10, 20) in limits
    assert look.billing_weights == {"gpu": {"cpu": 1.0, "gres/gpu": 2.0}}  # the simulated partition's
    done = sync.apply(look, ann)
    assert done.status == SlurmSync.Status.APPLIED and {row.status for row in done.applied.all()} == {"verified"}
    again = sync.propose(ann)
    assert again.status == SlurmSync.Status.IN_SYNC and again.drift == []
    slurm_simulator.run(["sacctmgr", "-i", *sacctmgr.modify_account_args("demo", "vision", {"GrpTRES": {
        "gres/gpu": 64}})])
    edited = sync.propose(ann)
    assert [(d["field"], d["applied"], d["actual"]) for d in edited.drift] == [("GrpTRES", 8, 64)]
    assert [c["overrides_drift"] for c in edited.changes] == [True]


def test_who_looks_and_applies_and_what_they_see(simulated):
    team_with_allocation()
    ann, viewer, researcher = make_user("ann", MANAGER), make_user("vic", VIEWER), make_user("rex", RESEARCHER)
    page = Client()
    page.force_login(viewer)
    assert b"No look at Slurm yet" in page.get(reverse("inventory:slurmsync_latest")).content
    assert page.post(reverse("inventory:slurmsync_latest"), {"action": "look"}).status_code == 403
    assert not SlurmSync.objects.exists()  # a viewer reads; a manager looks
    page.force_login(researcher)
    assert page.get(reverse("inventory:slurmsync_latest")).status_code == 403
    page.force_login(ann)
    looked = page.post(reverse("inventory:slurmsync_latest"), {"action": "look"}, follow=True)
    assert b"sacctmgr -i modify account where name=vision cluster=demo set GrpTRES=gres/gpu=8" in looked.content
    assert b"PriorityDecayHalfLife=7-00:00:00" in looked.content  # the budget to approve would decay: warned now
    first = SlurmSync.objects.get()
    sync.propose(ann)  # a newer look: the first is stale
    refused = page.post(reverse("inventory:slurmsync_detail", args=[first.pk]), {"action": "apply"}, follow=True)
    assert b"superseded" in refused.content
    latest = SlurmSync.objects.latest()
    applied = page.post(reverse("inventory:slurmsync_detail", args=[latest.pk]), {"action": "apply"}, follow=True)
    assert b"changes applied and verified" in applied.content and b"state-verified" in applied.content
    again = page.post(reverse("inventory:slurmsync_latest"), {"action": "look"}, follow=True)
    assert b"Nothing to change" in again.content
    assert b"PriorityDecayHalfLife=7-00:00:00" in again.content  # the simulated cluster's budgets decay: warned


def test_slurm_that_cannot_be_read_is_said(simulated):
    team_with_allocation()
    with override_settings(SLURM_SYNC_BACKEND="sacctmgr", SLURM_SACCTMGR="/nonexistent/sacctmgr"):
        look = sync.propose(make_user("ann", MANAGER))
    assert look.changes == [] and "could not run" in look.error and look.status == SlurmSync.Status.IN_SYNC


def test_beats_daily_look(simulated):
    from inventory.allocations.tasks import look_at_slurm

    assert look_at_slurm() is None and not SlurmSync.objects.exists()  # no allocation in force: nothing to look at
    team_with_allocation()
    look = SlurmSync.objects.get(pk=look_at_slurm())
    assert look.created_by is None and look.status == SlurmSync.Status.PROPOSED and look.changes


def test_the_sync_over_the_api(simulated):
    from tests.helpers.accounts import token_client

    team_with_allocation()
    manager, viewer = token_client(make_user("ann", MANAGER)), token_client(make_user("vic", VIEWER))
    researcher = token_client(make_user("rex", RESEARCHER))
    assert viewer.post("/api/inventory/slurm-syncs/").status_code == 403
    looked = manager.post("/api/inventory/slurm-syncs/")
    assert looked.status_code == 201 and looked.json()["status"] == "proposed"
    commands = [change["command"] for change in looked.json()["changes"]]
    assert "sacctmgr -i modify account where name=vision cluster=demo set GrpTRES=gres/gpu=8" in commands
    first = looked.json()["id"]
    newer = manager.post("/api/inventory/slurm-syncs/").json()["id"]
    stale = manager.post(f"/api/inventory/slurm-syncs/{first}/apply/")
    assert stale.status_code == 400 and "superseded" in str(stale.json())
    assert viewer.post(f"/api/inventory/slurm-syncs/{newer}/apply/").status_code == 403
    applied = manager.post(f"/api/inventory/slurm-syncs/{newer}/apply/")
    assert applied.status_code == 200 and {row["status"] for row in applied.json()["applied"]} == {"verified"}
    assert viewer.get(f"/api/inventory/slurm-syncs/{newer}/").json()["status"] == "applied"
    assert researcher.get("/api/inventory/slurm-syncs/").json()["count"] == 0
