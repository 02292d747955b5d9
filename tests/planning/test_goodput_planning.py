"""Planning's side of goodput (issue 20): the checkpoint interval of a plan's workload in the estimate of what an
interruption lost, ... (hand-built fleet of ``tests.helpers.goodput``)."""

import pytest

from inventory.goodput import recording
from inventory.goodput.models import Interruption
from planning.plans.models import CapacityPlan
from tests.factories import CapacityPlanFactory, PlanWorkloadFactory
from tests.helpers.goodput import MIN, H, make_goodput_fleet
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


@pytest.fixture
def fleet(now):
    return make_goodput_fleet(now)


def planned(account, status, checkpoint_hours=None, **extra):
    inputs = {"params_billion": 70, "tokens_billion": 2000}
    if checkpoint_hours is not None:
        inputs["checkpoint_interval_hours"] = checkpoint_hours
    return PlanWorkloadFactory(plan=CapacityPlanFactory(status=status), slurm_account=account, inputs=inputs,
                               **extra)


def lost(now):
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    return {row.job.job_id: row for row in Interruption.objects.select_related("job")}


def test_an_interruption_of_a_planned_account_uses_the_plans_checkpoint_interval(fleet, now):
    planned("vision", CapacityPlan.Status.APPROVED, checkpoint_hours=0.5)
    planned("vision", CapacityPlan.Status.DRAFT, checkpoint_hours=3)  # a draft is no decided run: ignored
    rows = lost(now)
    # J1 ran 4.5 h: a checkpoint every 30 min, so no work lost, only the 1 h wait × 8 GPUs. J2 ran 4.25 h: 15 min
    # since the last checkpoint × 8 GPUs = 2, + 8 of wait.
    assert (rows["1"].checkpoint_minutes, rows["1"].lost_run_gpu_hours, rows["1"].lost_gpu_hours) == (30, 0.0, 8.0)
    assert (rows["2"].checkpoint_minutes, rows["2"].lost_run_gpu_hours, rows["2"].lost_gpu_hours) == (30, 2.0, 10.0)


def test_an_unplanned_account_or_a_plan_without_the_input_gets_the_defaults(fleet, now, settings):
    settings.GOODPUT_CHECKPOINT_MINUTES = 45
    planned("vision", CapacityPlan.Status.REJECTED, checkpoint_hours=0.5)
    assert lost(now)["1"].checkpoint_minutes == 45  # no approved plan: the portal's default
    Interruption.objects.all().delete()
    planned("vision", CapacityPlan.Status.APPROVED)  # no interval given: sizing's default, 1 h
    assert lost(now)["1"].checkpoint_minutes == 60
