"""An allocation's use (``inventory.allocations.usage``) on a small fleet, figures worked out by hand before the code
ran: the same GPU-hours as the allocation figures, per partition and GPU model, running GPUs, the burn rate, the day
of exhaustion and the burn-down."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.test import override_settings

from inventory.allocations import usage
from inventory.models import SlurmSync, Team, TeamAllocation, TelemetrySource
from inventory.telemetry import allocation_rollup
from tests.factories import make_gpu, make_gpu_model, make_node
from tests.helpers.goodput import add_job

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)


def at(day, hour=0):
    return datetime(2026, 11, day, hour, tzinfo=UTC)


@pytest.fixture
def fleet(db):
    """vision's jobs in November (GPU-hours by hand): 4 GPUs on n1 (model A) Nov 10 00-10h: 40 (train); 2 GPUs on
    n3 (model B) Nov 12 00-05h: 10 (train); 1 GPU on n1 from Oct 31 20h to Nov 1 02h: 2 in November (debug); 4 GPUs
    on n1 running since Nov 20 10h: 8 until NOW (train). speech: 8 GPUs on n1 Nov 15 00-10h: 80 (not vision's)."""
    model_a, model_b = make_gpu_model(name="A100 test"), make_gpu_model(name="H100 test")
    n1, n3 = make_node(hostname="n1"), make_node(hostname="n3")
    for slot in range(8):
        make_gpu(node=n1, slot=slot, gpu_model=model_a)
        make_gpu(node=n3, slot=slot, gpu_model=model_b)
    n1.gpu_model, n3.gpu_model = model_a, model_b  # the node's model, as the inventory keeps it
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/")
    add_job(source, "1", n1, 4, at(9), at(10), at(10, 10), "COMPLETED")
    add_job(source, "2", n3, 2, at(11), at(12), at(12, 5), "COMPLETED")
    add_job(source, "3", n1, 1, at(1) - 6 * H, at(1) - 4 * H, at(1, 2), "COMPLETED", partition="debug")
    add_job(source, "4", n1, 4, at(20, 9), at(20, 10), None, "RUNNING")
    add_job(source, "5", n1, 8, at(14), at(15), at(15, 10), "COMPLETED", account="speech")
    return {"team": Team.objects.create(name="vision"), "a": model_a, "b": model_b}


def allocate(fleet, **terms):
    values = {"start": date(2026, 11, 1), "end": date(2026, 11, 30), "gpu_hours": 100.0, **terms}
    return TeamAllocation.objects.create(team=fleet["team"], **values)


def test_use_per_scope_by_hand(fleet):
    whole = allocate(fleet)
    train = allocate(fleet, partition="train")
    model_a = allocate(fleet, gpu_model=fleet["a"])
    model_b_train = allocate(fleet, gpu_model=fleet["b"], partition="train", gpu_hours=10.0)
    found = usage.figures([whole, train, model_a, model_b_train], NOW)
    assert found[whole.pk].used == 60.0  # 40 + 10 + 2 + 8
    assert found[train.pk].used == 58.0  # without the debug job's 2
    assert found[model_a.pk].used == 50.0  # 40 + 2 + 8: on n1 only
    assert found[model_b_train.pk].used == 10.0
    assert [found[a.pk].running for a in (whole, train, model_a, model_b_train)] == [4, 4, 4, 0]
    row = found[whole.pk]
    assert (row.left, row.percent, row.level, row.state) == (40.0, 60.0, None, "active")
    # The last 7 days (Nov 13 12h to NOW) burned the running job's 8: 8/7 a day; 40 left last 35 days: past Nov 30.
    assert row.burn_rate == pytest.approx(8 / 7, abs=0.01) and row.exhausted_on is None
    spent = found[model_b_train.pk]
    assert (spent.left, spent.level, spent.exhausted_on) == (0.0, 100, date(2026, 11, 20))


def test_use_is_the_allocation_figure(fleet):
    """The team's use is what ``allocation_rollup.allocated`` gives for its account over the period."""
    whole = allocate(fleet)
    start, end = usage.period(whole)
    expected = allocation_rollup.allocated(start, NOW, NOW, "account", account="vision")["vision"]["gpu_hours"]
    assert usage.figures([whole], NOW)[whole.pk].used == pytest.approx(expected)


@override_settings(ALLOCATION_BURN_RATE_DAYS=3)
def test_exhaustion_day_and_burn_down(fleet):
    small = allocate(fleet, gpu_hours=65.0)
    row = usage.figures([small], NOW)[small.pk]
    # The last 3 days burned 8: 8/3 a day; 5 left last 1.875 days from NOW: Nov 22 09h.
    assert row.burn_rate == pytest.approx(2.67, abs=0.01) and row.exhausted_on == date(2026, 11, 22)
    drawn = usage.burn_down(small, NOW)
    assert drawn["days"][0] == date(2026, 11, 1) and len(drawn["days"]) == 30
    used = dict(zip(drawn["days"], drawn["used"], strict=True))
    assert (used[date(2026, 11, 1)], used[date(2026, 11, 9)], used[date(2026, 11, 10)]) == (2.0, 2.0, 42.0)
    assert used[date(2026, 11, 12)] == 52.0 and used[date(2026, 11, 20)] == 60.0 and used[date(2026, 11, 21)] is None
    projected = dict(zip(drawn["days"], drawn["projected"], strict=True))
    assert projected[date(2026, 11, 19)] is None
    assert projected[date(2026, 11, 20)] == pytest.approx(60 + 8 / 3 * 0.5, abs=0.01)  # to the end of today
    assert projected[date(2026, 11, 22)] == pytest.approx(60 + 8 / 3 * 2.5, abs=0.01)


def test_upcoming_and_ended(fleet):
    later = allocate(fleet, start=date(2026, 12, 1), end=date(2026, 12, 31))
    earlier = allocate(fleet, start=date(2026, 10, 1), end=date(2026, 10, 31))
    found = usage.figures([later, earlier], NOW)
    assert (found[later.pk].state, found[later.pk].used) == ("upcoming", 0.0)
    assert (found[earlier.pk].state, found[earlier.pk].used) == ("ended", 4.0)  # job 3, Oct 31 20-24h


def test_use_in_slurms_billing_units(fleet):
    """With the TRESBillingWeights a look at Slurm read: train weighs a GPU 2.0, debug 0.5. vision's 58 GPU-hours in
    train and 2 in debug are 58 × 2 + 2 × 0.5 = 117 units; without a weight for a partition used: unknown."""
    whole, train = allocate(fleet), allocate(fleet, partition="train")
    assert usage.figures([whole], NOW)[whole.pk].billing is None  # no look at Slurm yet
    SlurmSync.objects.create(cluster="c", billing_weights={"train": {"cpu": 1.0, "gres/gpu": 2.0},
                                                           "debug": {"gres/gpu": 0.5}})
    found = usage.figures([whole, train], NOW)
    assert (found[whole.pk].billing, found[train.pk].billing) == (117.0, 116.0)
    SlurmSync.objects.create(cluster="c", billing_weights={"train": {"gres/gpu": 2.0}, "debug": {"cpu": 1.0}})
    found = usage.figures([whole, train], NOW)
    assert (found[whole.pk].billing, found[train.pk].billing) == (None, 116.0)
