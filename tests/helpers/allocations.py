"""Rows of the allocations' models for the generic tests (``tests/portal/test_battery.py``'s makers)."""

from datetime import date

from inventory.models import AllocationRequest, SlurmSync, TeamAllocation
from tests import factories as f


def make_allocations(n):
    user = f.UserFactory()
    rows = []
    for _ in range(n):
        team = f.TeamFactory()
        allocation = TeamAllocation.objects.create(team=team, start=date(2026, 1, 1), end=date(2026, 12, 31),
                                                   gpu_hours=1000, max_gpus=8)
        AllocationRequest.objects.create(team=team, allocation=allocation, start=allocation.start,
                                         end=allocation.end, gpu_hours=1000, reason="battery", requested_by=user,
                                         status=AllocationRequest.Status.APPROVED)
        rows.append(allocation)
    return rows


def make_allocation_requests(n):
    user = f.UserFactory()
    return [AllocationRequest.objects.create(team=f.TeamFactory(), start=date(2027, 1, 1), end=date(2027, 3, 31),
                                             gpu_hours=500, reason="battery", requested_by=user) for _ in range(n)]


def make_slurm_syncs(n):
    change = {"action": "set_limit", "cluster": "c", "account": "vision", "target": "account", "name": "vision",
              "field": "GrpTRES", "tres": "gres/gpu", "before": None, "after": 8, "details": {},
              "overrides_drift": False}
    return [SlurmSync.objects.create(cluster="c", changes=[change]) for _ in range(n)]
