"""The demo's allocations (``inventory.demo.seed_demo``, after the Slurm job history): each team an allocation of
this quarter, written through approved requests as in production, with budgets sized from what the simulator's
jobs used so far so that the burn-downs differ (one team past 80 %); a change request waiting for a manager; and the
simulated Slurm (``SLURM_SYNC_BACKEND=simulator``) holding the teams' accounts with older limits, looked at once,
so the sync page has a diff to approve."""

from datetime import date, timedelta

from django.conf import settings
from django.utils import timezone

from inventory.models import GPUModel, Team

from ..teams import slurm_simulator
from . import sync, usage, workflow
from .models import AllocationRequest, SlurmSync, TeamAllocation

SEEDS = "allocations, a change request, the simulated Slurm accounts and a sync to approve"
# team: (partition, GPU model name or None, concurrent GPUs, fair share, the share of its budget used so far)
PLANS = {
    "llm-pretrain": ("", None, 160, 40, 0.86),  # past 80 %: warned, and runs out before the quarter ends
    "vision": ("train-h100", "H100 SXM 80GB", 40, 20, 0.45),
    "speech": ("", None, 48, 15, 0.3),
    "platform": ("inference", None, 32, 10, 0.2),
}


def quarter(today):
    start = date(today.year, 3 * ((today.month - 1) // 3) + 1, 1)
    end = date(start.year + (start.month == 10), (start.month + 3 - 1) % 12 + 1, 1) - timedelta(days=1)
    return start, end


def seed(seeder, users):
    """``users``: the demo's accounts by username, the other apps' included (support's researcher manages
    llm-pretrain and asks for its allocation; managers ask for the others)."""
    manager, admin = users["manager"], users["admin"]
    today = timezone.localdate()
    start, end = quarter(today)
    if not TeamAllocation.objects.filter(start=start).exists():
        for name, (partition, model, gpus, share, used_share) in PLANS.items():
            team = Team.objects.filter(name=name).first()
            if team is None:
                continue
            lead = users.get("researcher") if name == "llm-pretrain" else None
            requester = lead if lead is not None and lead.has_perm("inventory.request_allocation", team) else manager
            budget = budget_for(team, partition, model, start, end, used_share)
            if requester == manager:  # two managers other than the requester approve a big one; the demo has two
                budget = min(budget, settings.ALLOCATION_SECOND_APPROVAL_GPU_HOURS - 100)
            pending = workflow.request(requester, team, "The quarter's training plan (demo).", start=start, end=end,
                                       partition=partition, gpu_model=GPUModel.objects.filter(name=model).first(),
                                       gpu_hours=budget, max_gpus=gpus, fairshare=share)
            for decider in (admin, manager):
                if decider.has_perm("inventory.decide_allocation_request", pending):
                    pending = workflow.approve(pending, decider, "Fits the quarter's capacity plan.")
        vision = TeamAllocation.objects.filter(team__name="vision", start=start).first()
        if vision is not None and vision.gpu_hours:
            workflow.request(manager, None, "A new multimodal model needs 25 % more H100 time this quarter (demo).",
                             kind=AllocationRequest.Kind.CHANGE, allocation=vision,
                             gpu_hours=min(round(vision.gpu_hours * 1.25),
                                           settings.ALLOCATION_SECOND_APPROVAL_GPU_HOURS - 100))
    seed_slurm()


def budget_for(team, partition, model, start, end, share):
    """A budget of which the team's use so far is ``share`` (whole hundreds, at least 100)."""
    probe = TeamAllocation(team=team, partition=partition, start=start, end=end,
                           gpu_model=GPUModel.objects.filter(name=model).first(), gpu_hours=1, pk=0)
    return max(100, round(usage.figures([probe])[0].used / share, -2))


def seed_slurm():
    """The simulated cluster holds the teams' accounts as someone set them up before the portal (older limits, one
    member missing): the first look proposes the changes."""
    if settings.SLURM_SYNC_BACKEND != "simulator" or SlurmSync.objects.exists():
        return  # a second run keeps the cluster as the demo left it
    slurm_simulator.seed(settings.SLURM_CLUSTER, {
        "llm-pretrain": {"users": ["jkowalski"], "share": 30, "grptres": "gres/gpu=128"},
        "vision": {"users": [], "share": 20},
        "speech": {"users": [], "share": 10, "grptres": "gres/gpu=32", "grptresmins": "gres/gpu=600000"},
        "platform": {"users": ["svc-inference"], "share": 10},
    }, {
        "train-h100": {"AllowQos": "ALL", "TRESBillingWeights": "CPU=0.1,Mem=0.02G,GRES/gpu=2.0"},
        "train-h200": {"AllowQos": "ALL", "TRESBillingWeights": "CPU=0.1,Mem=0.02G,GRES/gpu=2.5"},
        "a100-legacy": {"AllowQos": "ALL", "TRESBillingWeights": "CPU=0.1,Mem=0.02G,GRES/gpu=1.0"},
        "inference": {"AllowQos": "ALL", "TRESBillingWeights": "CPU=0.1,Mem=0.02G,GRES/gpu=1.5"},
    })
    sync.propose(None)
