"""The expert scenario library (issue 34), part one: healthy fleets and the partition rules (capacity, scheduling,
storage, network, memory). Part two (``test_expert_scenarios_under_used.py``): idle nodes, teams, ageing,
reliability and stuck nodes.

Each case builds a small fleet (``tests.helpers.expert_fleet``) whose telemetry and Slurm jobs go through the real
pull path, runs the whole analysis and compares what it wrote with the answer an expert wrote down first: the
findings exactly (nothing more, nothing less) and for some the key figure, worked out by hand in the case's
docstring. Every case runs on three seeds (``EXPERT_SEEDS``, default 1,2,3): the noise must not change the answer.

Hand sizing of the capacity cases: jobs of 12 h back to back on each node start at hours 0, 12, …, 156; the first on
each node was submitted before the window, so 13 per node count towards the GPUs waiting: Σ GPUs × wait / 168 h.
Capacity for (GPUs × utilization + GPUs waiting) at 80 %, less the GPUs in service, in nodes of 8.
"""

import os

import pytest

from inventory.models import LifecycleState
from tests.helpers.expert_fleet import WINDOW, Case, verify

pytestmark = pytest.mark.django_db
SEEDS = [int(seed) for seed in os.environ.get("EXPERT_SEEDS", "1,2,3").split(",")]
S = LifecycleState
CAP, SCHED, STORAGE, NET, MEM = "capacity_bound", "scheduling_bound", "storage_bound", "network_bound", "memory_bound"
UNDER = "under_used"


# --- healthy fleets: nothing to raise ------------------------------------------------------------------------


def healthy_training(f):
    """4 × 8 H100 kept 70 % busy by 12 h jobs that wait 20 min: a well-sized training partition."""
    f.fill(f.partition("train"), util=70, wait=0.3)


def steady_inference(f):
    """2 × 8 H100 serving at a steady 60 %: one long-running server job per node, started before the window."""
    for n in f.partition("infer"):
        f.job([n], -24, WINDOW + 48, util=60, mem=0.6, account="serving")


def mixed_fleet(f):
    """Training at 75 % (waits 30 min), inference on L40S at 55 %, research on A100 with 2 h gaps between 6 h jobs
    (about 38 % busy, short waits): each partition within its normal range."""
    f.fill(f.partition("train", nodes=3), util=75, wait=0.5)
    for n in f.partition("infer", nodes=2, gpus=4, gpu="L40S", site="Lyon"):
        f.job([n], -12, WINDOW + 24, util=55, mem=0.6, account="serving")
    research = f.partition("research", nodes=2, gpus=4, gpu="A100", site="Lyon")
    f.load(research, 0)
    for k, n in enumerate(research):
        for start in range(2 * k, WINDOW - 6, 8):
            f.job([n], start, 6, util=50, wait=0.3, account="research")


def new_fleet(f):
    """2 × 8 H100 that reported only the last 36 hours, 85 % busy, 3 jobs that waited 3 h: too little history to
    size anything (capacity needs ≥ 5 started jobs; an idle day needs ≥ 12 hours of readings)."""
    nodes = f.partition("new")
    for k, start in enumerate((132, 144, 156)):
        f.job([nodes[k % 2]], start, 12, util=85, wait=3)
    f.load([nodes[1]], 85, hours=(132, 144))
    f.load([nodes[0]], 85, hours=(144, 156))


def busy_but_no_queue(f):
    """4 × 8 H100 at 92 % whose jobs start within 10 minutes: busy and well-sized, nothing to buy."""
    f.fill(f.partition("train"), util=92, wait=0.15)


def nonblocking_fabric(f):
    """As ``network_bound`` but on a non-blocking 1:1 fabric with 400 Gb/s per GPU: a 33 % fall with width is the
    model's scaling or NCCL's settings, not hardware."""
    multi_and_single(f, f.partition("ib", gpus=4), oversubscription=1.0)


# --- capacity ------------------------------------------------------------------------------------------------


def capacity_bound(f):
    """4 × 8 H100 at 92 %, waits 3 h. GPUs waiting 52 × 8 × 3 / 168 = 7.43; capacity (29.44 + 7.43) / 0.8 = 46.09:
    14.09 more GPUs, 2 nodes."""
    f.fill(f.partition("train"), util=92, wait=3)


def capacity_out_of_service(f):
    """As ``capacity_bound`` with waits of 6 h, and 2 more nodes of the partition (16 GPUs) degraded and in repair.
    GPUs waiting 52 × 8 × 6 / 168 = 14.86; (29.44 + 14.86) / 0.8 − 32 = 23.37 more GPUs (3 nodes); return the 16
    first: 7.37 left, 1 node."""
    f.fill(f.partition("train"), util=92, wait=6)
    f.partition("train", nodes=1, first=5, state=S.DEGRADED)
    f.partition("train", nodes=1, first=6, state=S.IN_REPAIR)


def hot_and_idle_same_model(f):
    """Train as ``capacity_bound`` with waits of 1.5 h: (29.44 + 3.71) / 0.8 − 32 = 9.44 more GPUs (2 nodes of 8).
    Partition spare: 4 × 4 H100 (the same GPU model) at 1 %: keep one GPU for its busiest hours, 3 whole nodes
    (12 GPUs) move to train: buy nothing. Spare's own nodes were idle this week and the 3 before: reclaim them (the
    same move)."""
    f.fill(f.partition("train"), util=92, wait=1.5)
    f.load(f.partition("spare", gpus=4), 1, hours=(-3 * WINDOW, WINDOW))


def hot_and_idle_other_model(f):
    """As ``hot_and_idle_same_model`` but the idle partition has A100s: jobs sized for H100 do not move, so train
    still needs its 2 nodes; the A100 nodes are reclaimed on their own."""
    f.fill(f.partition("train"), util=92, wait=1.5)
    f.load(f.partition("spare", gpus=4, gpu="A100"), 1, hours=(-3 * WINDOW, WINDOW))


# --- scheduling, storage ---------------------------------------------------------------------------------------


def scheduling_bound(f):
    """4 × 8 H100: 10 h jobs that waited 3 h, then 6 h with nothing on the node: 37.5 % of the GPU-hours run no job
    while jobs wait (utilization 0.625 × 85 = 53 %): the queue policy, not capacity."""
    nodes = f.partition("queue")
    f.load(nodes, 0)
    for k, n in enumerate(nodes):
        for start in range(4 * k, WINDOW - 10, 16):
            f.job([n], start, 10, util=85, wait=3, account="queue")


def storage_bound(f):
    """4 × 8 A100 held all week by jobs whose GPUs run in bursts: 45 % mean, 95 % peaks (stall 1 − 45 / 95 = 53 %)."""
    f.fill(f.partition("data", gpu="A100"), util=45, peak=95, mem=0.6)


# --- network -----------------------------------------------------------------------------------------------------


def multi_and_single(f, nodes, oversubscription, wide_util=60, single_util=90):
    """12 h cycles: a job on all the nodes for 6 h, then single-node jobs for 6 h on each."""
    f.fabric(nodes, oversubscription=oversubscription, gbps_per_gpu=400)
    for start in range(0, WINDOW, 12):
        f.job(nodes, start, 6, util=wide_util, account="llm")
        for n in nodes:
            f.job([n], start + 6, 6, util=single_util, account="llm")


def network_bound(f):
    """4 × 4 H100 on a 2:1 oversubscribed leaf: 4-node jobs at 60 % per GPU against 90 % on one node (33 % lower,
    14 jobs of 96 GPU-hours against 56 of 24): network-bound, high (multi-node jobs carry half the GPU-hours)."""
    multi_and_single(f, f.partition("ib", gpus=4), oversubscription=2.0)


def network_like_for_like(f):
    """One partition of 2 A100 and 2 H100 nodes. Multi-node jobs ran on the A100s (2:1 leaf, 200 Gb/s per GPU) at
    55 %, and so did the A100s' single-node jobs; single-node jobs on the H100s ran at 90 %. Like for like (A100
    against A100) utilization does not fall with width: not network-bound."""
    a100 = f.partition("mixed", nodes=2, gpu="A100", prefix="mixed-a")
    h100 = f.partition("mixed", nodes=2, prefix="mixed-h")
    f.fabric(a100, oversubscription=2.0, gbps_per_gpu=200)
    for start in range(0, WINDOW, 12):
        f.job(a100, start, 6, util=55, account="llm")
        for n in a100:
            f.job([n], start + 6, 6, util=55, account="llm")
    f.fill(h100, hours=6, util=90, account="vision")


# --- memory ------------------------------------------------------------------------------------------------------


def memory_bound(f):
    """4 × 8 H100 training with 96 % of the frame buffer used and 4 jobs ended OUT_OF_MEMORY: larger GPUs."""
    nodes = f.partition("big")
    f.fill(nodes, util=85, mem=0.96)
    for k in range(len(nodes)):  # replace each node's second job by an OOM one
        f.jobs[14 * k + 1]["state"]["current"] = ["OUT_OF_MEMORY"]


def inference_preallocated(f):
    """2 × 8 H100 inference servers preallocating 90 % of the frame buffer (vLLM's default), at 55 %, restarted
    every 12 h; 4 of 28 runs FAILED (a bad deploy), none out of memory: no memory pressure."""
    nodes = f.partition("serve")
    f.fill(nodes, util=55, mem=0.9, account="serving")
    for k in (1, 3, 15, 17):
        f.jobs[k]["state"]["current"] = ["FAILED"]


CASES = [
    Case("healthy_training", healthy_training, set()),
    Case("steady_inference_60", steady_inference, set()),
    Case("healthy_mixed_fleet", mixed_fleet, set()),
    Case("new_fleet_little_history", new_fleet, set()),
    Case("busy_but_no_queue", busy_but_no_queue, set()),
    Case("capacity_bound", capacity_bound, {(CAP, "partition=train")},
         figures={(CAP, "partition=train"): {"node_count": 2, "ruled_out": {"out_of_service"}}}),
    Case("capacity_out_of_service_first", capacity_out_of_service, {(CAP, "partition=train")},
         figures={(CAP, "partition=train"): {"node_count": 1, "ruled_out": {"out_of_service"},
                                             "measured": {"returned_gpus": 16, "gpus_out_of_service": 16}}}),
    Case("capacity_rebalance_same_model", hot_and_idle_same_model,
         {(CAP, "partition=train"), (UNDER, "idle:partition=spare")},
         figures={(CAP, "partition=train"): {"node_count": 0, "ruled_out": {"idle_same_model"}}},
         built="helper C (rebalance)"),
    Case("capacity_idle_other_model_not_counted", hot_and_idle_other_model,
         {(CAP, "partition=train"), (UNDER, "idle:partition=spare")},
         figures={(CAP, "partition=train"): {"node_count": 2, "ruled_out": {"idle_same_model"}}},
         built="helper C (rebalance)"),
    Case("scheduling_bound", scheduling_bound, {(SCHED, "partition=queue")}),
    Case("storage_bound", storage_bound, {(STORAGE, "partition=data")}),
    Case("network_bound_oversubscribed", network_bound, {(NET, "partition=ib")}),
    Case("network_nonblocking_not_raised", nonblocking_fabric, set()),
    Case("network_like_for_like", network_like_for_like, set(), built="helper A (like for like)"),
    Case("memory_bound_oom", memory_bound, {(MEM, "partition=big")}),
    Case("memory_inference_preallocated", inference_preallocated, set(), built="helper A (OOM evidence)"),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_expert_case(case, seed, settings):
    verify(case, seed, settings)
