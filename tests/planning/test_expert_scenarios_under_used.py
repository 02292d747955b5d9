"""The expert scenario library (issue 34), part two: teams, idle nodes, ageing, reliability and stuck nodes (part
one, with the harness's description: ``test_expert_scenarios.py``). Same rules: the answer written first, the whole
chain run, three seeds."""

from datetime import date

import pytest

from inventory.models import GPU, LifecycleState
from tests.helpers.expert_fleet import WINDOW, Case, verify
from tests.planning.test_expert_scenarios import SEEDS, STORAGE, UNDER

pytestmark = pytest.mark.django_db
S = LifecycleState
AGEING, RELIABILITY, REPAIR = "ageing", "reliability_bound", "repair"
HISTORY = (-4 * WINDOW, 0)  # the four weeks before the window, as the idle rule reads a node's own history


# --- teams -------------------------------------------------------------------------------------------------------


def team_starved_by_storage(f):
    """Team vision holds 2 × 8 A100 all week; its GPUs run in bursts (22 % mean, 95 % peaks) with 70 % of the frame
    buffer held: processes run, starved of data. Storage-bound; not 'ask for fewer GPUs' (no GPU-hour is unused)."""
    f.fill(f.partition("data", nodes=2, gpu="A100"), util=22, peak=95, mem=0.7, account="vision")


def team_holding_idle_gpus(f):
    """Partition shared, 4 × 8 H100. Team nlp keeps two nodes 70 % busy. Team vision holds the other two whole with
    12 h jobs that compute for 4 h (80 %) and then hold the GPUs with no process for 8 h (0 %, empty frame buffer):
    2/3 of its held GPU-hours unused, 27 % used: the team finding (its nodes' days average 27 %: not idle nodes)."""
    nodes = f.partition("shared")
    f.fill(nodes[:2], util=70, account="nlp")
    for n in nodes[2:]:
        for start in range(0, WINDOW, 12):
            f.job([n], start, 12, util=80, account="vision")
            f.load([n], 0, hours=(start + 4, start + 12))


# --- idle nodes --------------------------------------------------------------------------------------------------


def holiday_dip(f):
    """Train (3 × 2 GPUs) at 65 % and infer (2 × 2) at 55 % for four weeks; then the whole fleet at 1.5 % for six
    days (a holiday week) and back on the last day. The dip is the fleet's, against its own history: reclaim nothing."""
    train, infer = f.partition("train", nodes=3, gpus=2), f.partition("infer", nodes=2, gpus=2)
    f.load(train, 65, hours=(HISTORY[0], 0))
    f.load(infer, 55, hours=(HISTORY[0], 0))
    f.load(train + infer, 1.5, hours=(0, 144))
    f.load(train, 65, hours=(144, WINDOW))
    f.load(infer, 55, hours=(144, WINDOW))


def idle_five_weeks(f):
    """Train, 3 × 2 GPUs: two nodes 60 % busy for five weeks, train-003 at 1 % all five: reclaim train-003."""
    nodes = f.partition("train", nodes=3, gpus=2)
    f.load(nodes[:2], 60, hours=(HISTORY[0], WINDOW))
    f.load(nodes[2:], 1, hours=(HISTORY[0], WINDOW))


# --- ageing ------------------------------------------------------------------------------------------------------


def fault_prone_under_warranty(f):
    """4 × 8 H100 bought two years ago, warranty to the end of 2027, 65 % busy. prod-002 alone faults: moved to
    degraded on 3 days this year, hardware XID 79 on 3 days of the window. One node under warranty: RMA or repair,
    not 'ageing, replace' (no node to buy)."""
    nodes = f.partition("prod", warranty_end=date(2027, 12, 31))
    f.fill(nodes, util=65)
    for days_ago in (200, 90, 20):
        f.move(nodes[1], S.DEGRADED, days_ago)
    f.xid(nodes[1], (10, 40, 70))


def out_of_warranty_faulting(f):
    """Lyon, 4 × 8 A100 out of warranty since mid-2025, 60 % busy; three of them moved to degraded on 2 days each
    this year (a GPU, then the node): ageing, replace the 4."""
    nodes = f.partition("old", gpu="A100", site="Lyon", warranty_end=date(2025, 6, 30))
    f.fill(nodes, util=60)
    for n in nodes[:3]:
        f.move(GPU.objects.filter(node=n).first(), S.DEGRADED, 150)
        f.move(n, S.DEGRADED, 40)


# --- reliability -------------------------------------------------------------------------------------------------


def restart_wait_apart(f):
    """llm, 2 × 8 H100. Team ft keeps llm-002 busy (12 h jobs). Team pretrain's jobs on llm-001 run 10.9 h and end
    NODE_FAIL; the team resubmits the next one 16 h later (starting at once). Six interruptions lose 6 × 0.9 h × 8 =
    43 GPU-hours of work since the last hourly checkpoint, 2.3 % of the ≈ 1,870 allocated (goodput ≈ 97.7 %): below
    the 5 % limit. The 16 h restart waits (768 GPU-hours) are the team's, shown apart: never '40 % lost'."""
    pretrain, ft = f.partition("llm", nodes=2)
    f.fill([ft], util=80, account="ft")
    f.load([pretrain], 0)
    start = 0.0
    while start + 10.9 <= WINDOW:
        f.job([pretrain], start, 10.9, util=90, state="NODE_FAIL", account="pretrain", wait=0.1)
        start += 10.9 + 16


def unreliable_partition(f):
    """rel, 2 × 8 H100: every 11.9 h job ends NODE_FAIL and the next starts 6 min later. 28 interruptions lose
    28 × 0.9 h × 8 = 202 GPU-hours of work of 28 × 11.9 × 8 = 2,666 allocated: 7.6 % > 5 %, the two nodes repeat
    offenders. Reliability-bound."""
    nodes = f.partition("rel", nodes=2)
    f.load(nodes, 0)
    for n in nodes:
        for start in range(0, WINDOW, 12):
            f.job([n], start, 11.9, util=88, state="NODE_FAIL", account="pretrain", wait=0.1)


# --- stuck nodes -------------------------------------------------------------------------------------------------


def stuck_in_burn_in(f):
    """Zurich: train 2 × 8 H100 at 65 %; two new nodes in burn-in for 20 days (> 14): chase the vendor."""
    f.fill(f.partition("train", nodes=2), util=65)
    f.set_state(f.partition("new", nodes=2), S.BURN_IN, 20)


def recent_delivery(f):
    """As ``stuck_in_burn_in`` but the new nodes were delivered 5 days ago: nothing to chase yet."""
    f.fill(f.partition("train", nodes=2), util=65)
    f.set_state(f.partition("new", nodes=2), S.DELIVERED, 5)


CASES = [
    Case("team_starved_by_storage", team_starved_by_storage, {(STORAGE, "partition=data")},
         built="helper B (unused = no process)"),
    Case("team_holding_idle_gpus", team_holding_idle_gpus, {(UNDER, "team=vision")}),
    Case("idle_holiday_dip", holiday_dip, set(), built="helper B (own history)"),
    Case("idle_five_weeks", idle_five_weeks, {(UNDER, "idle:partition=train")},
         figures={(UNDER, "idle:partition=train"): {"node_count": 1}}),
    Case("ageing_single_node_under_warranty", fault_prone_under_warranty, {(REPAIR, "site=Zurich")},
         figures={(REPAIR, "site=Zurich"): {"node_count": 0, "ruled_out": ("fleet_ageing",)}},
         built="helper A (RMA under warranty)"),
    Case("ageing_out_of_warranty", out_of_warranty_faulting, {(AGEING, "site=Lyon")},
         figures={(AGEING, "site=Lyon"): {"node_count": 4}}),
    Case("reliability_restart_wait_apart", restart_wait_apart, set(), built="helper C (lost work, wait apart)"),
    Case("reliability_bound", unreliable_partition, {(RELIABILITY, "partition=rel")},
         figures={(RELIABILITY, "partition=rel"): {"node_count": 2}}),
    Case("stuck_burn_in_20_days", stuck_in_burn_in, {(UNDER, "stuck:site=Zurich")},
         figures={(UNDER, "stuck:site=Zurich"): {"node_count": 2}}),
    Case("recent_delivery_not_stuck", recent_delivery, set()),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_expert_case(case, seed, settings):
    verify(case, seed, settings)
