"""``make demo``'s allocations: every demo team has this quarter's allocation (written by approved requests), one is
past 80 % of its budget with a burn-down, a change request waits for a manager, and the simulated Slurm has a diff to
approve, which applies and reads back; a second seed changes nothing."""

from io import StringIO

import pytest
from django.core.management import call_command

from inventory.allocations import sync, usage
from inventory.models import AllocationRequest, SlurmSync, TeamAllocation
from inventory.teams import sacctmgr, slurm_simulator

pytestmark = pytest.mark.django_db


def test_the_demo_has_allocations_a_warning_and_a_sync_to_approve(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.VAR_DIR, settings.SLURM_SYNC_BACKEND, settings.SLURM_CLUSTER = tmp_path, "simulator", "demo"
    call_command("seed_demo", stdout=StringIO())
    allocations = list(TeamAllocation.objects.select_related("team", "gpu_model"))
    assert sorted(a.team.name for a in allocations) == ["llm-pretrain", "platform", "speech", "vision"]
    assert all(a.requests.filter(status="approved", kind="new").exists() for a in allocations)
    figures = usage.figures(allocations)
    levels = {a.team.name: figures[a.pk].level for a in allocations}
    assert levels["llm-pretrain"] == 80 and levels["speech"] is None, levels
    waiting = AllocationRequest.objects.get(status="pending")
    assert waiting.kind == "change" and waiting.team.name == "vision"
    look = SlurmSync.objects.get()
    assert look.status == "proposed" and look.error == "" and len(look.changes) >= 8
    applied = sync.apply(look, waiting.requested_by)
    assert applied.status == "applied", [(row.description, row.output) for row in applied.applied.all()]
    accounts = {a.account: a for a in sacctmgr.read_associations("demo", runner=slurm_simulator.runner())
                if not a.user}
    assert accounts["vision"].share == 20 and accounts["llm-pretrain"].grp_tres == {"gres/gpu": 160}

    call_command("seed_demo", stdout=StringIO())
    assert TeamAllocation.objects.count() == 4 and SlurmSync.objects.count() == 1
