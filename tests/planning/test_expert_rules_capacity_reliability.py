"""Expert rules (issue 34): a capacity-bound partition moves idle nodes of the same GPU model from other partitions
before buying; the reliability share is the goodput ratio's lost work, the restart wait shown apart.

The expected answers are written down before the rules run.

Capacity, by hand. The hot partition "train": 64 H100 GPUs in service, 95 % busy, 20 GPUs' worth of jobs waiting,
nodes of 8, an 80 % target: capacity for (64 × 0.95 + 20) / 0.8 = 101 GPUs, 37 more (5 nodes to buy, naively).
A partition gives whole nodes beyond what its busiest hours (95th percentile of its hourly utilization) and its own
queue need at the 80 % target, when its mean utilization is < 50 % and its jobs do not wait long:
- "spare" (8 nodes, 64 H100, idle at 1 %, busiest hours 3 %): keeps ceil(64 × 0.03 / 0.8) = 3 GPUs, so 7 whole
  nodes are spare; 5 of them (40 GPUs) cover the 37: buy nothing;
- "small" (3 nodes, 24 H100, 1 %, busiest 2 %): keeps ceil(0.6) = 1 GPU, 2 whole nodes spare (16 GPUs): buy
  ceil((37 − 16) / 8) = 3 nodes; with 16 GPUs of train out of service as well: 37 − 16 − 16 = 5, buy 1 node;
- "legacy" (A100, idle at 1 %): another GPU model, not counted: buy 5 nodes, and the differential says why;
- "inference" (H100, 40 % on average but 95 % in its busiest hours): keeps ceil(16 × 0.95 / 0.8) = 19 > 16 GPUs:
  nothing spare; "batch" (H100, 60 %): in use; "queued" (H100, 10 %, its jobs wait 6 h p95): its own queue.
"""

import math
from dataclasses import replace
from decimal import Decimal

import pytest
from django.test.utils import override_settings

from inventory.goodput import recording
from inventory.models import GPU, TelemetrySource
from inventory.telemetry import simulator
from planning.recommendations import gather, rules
from planning.recommendations.rules import PartitionStats, Peer
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.goodput import MIN, H, add_job
from tests.helpers.telemetry import freeze_now
from tests.planning.test_recommendations import END, add_partition, backfill

H100, A100 = 1, 2


def hot(out_of_service=0, *peers):
    return PartitionStats(partition="train", gpus=64, gpu_hours=64 * 168.0, util_mean=95.0, gpus_waiting=20.0,
                          jobs_started=200, wait_p50_hours=3.0, wait_p95_hours=12.0, gpu_slots=8,
                          node_model_name="HGX H100", node_price=Decimal("300000"), allocated_gpu_hours=64 * 160.0,
                          gpus_out_of_service=out_of_service, gpu_model_id=H100, gpu_model_name="H100",
                          peers=list(peers))


def peer(name, nodes, util, peak, model=H100, **kw):
    return Peer(name, model, {H100: "H100", A100: "A100"}[model], nodes, nodes * 8, nodes * 8, util, peak, **kw)


SPARE, SMALL = peer("spare", 8, 1.0, 3.0), peer("small", 3, 1.0, 2.0)
LEGACY = peer("legacy", 4, 1.0, 2.0, model=A100)
INFERENCE, BATCH = peer("inference", 2, 40.0, 95.0), peer("batch", 4, 60.0, 70.0)
QUEUED = peer("queued", 4, 10.0, 20.0, jobs_started=50, wait_p50_hours=0.5, wait_p95_hours=6.0)


def capacity(*args):
    return rules.capacity_bound(hot(*args), rules.THRESHOLDS)


def entry(finding, kind="idle_same_model"):
    return next(e for e in finding.evidence["ruled_out"] if e["kind"] == kind)


def test_an_identical_idle_partition_is_moved_first_and_nothing_is_bought(settings):
    settings.COST_CURRENCY = "USD"
    finding = capacity(0, SPARE)
    assert finding.node_count == 0
    assert finding.action == ("Move 5 nodes of partition spare (40 GPUs, same GPU model H100, idle at 1 %) to "
                              "partition train first: they cover the 37 GPUs needed, so buy nothing yet.")
    measured = finding.evidence["measured"]
    assert (measured["extra_gpus"], measured["returned_gpus"], measured["rebalance_gpus"]) == (37.0, 0, 40)
    assert (measured["rebalance_from"], measured["rebalance_nodes"]) == ({"spare": 40}, {"spare": 5})
    figures = {f["label"]: f["value"] for f in finding.figures}
    assert figures["GPUs moved from idle partitions of the same GPU model"] == 40 and figures["Suggested nodes"] == 0
    checked = entry(finding)
    assert checked["label"] == "Idle GPUs of the same model in other partitions"
    assert checked["why"].startswith("Taken first: 40 GPUs of the same model (H100) sit idle in other partitions")
    assert [(f["label"], f["value"], f["rule"]) for f in checked["figures"]] == [
        ("Partition spare (H100) utilization", 1.0, "busiest hours 3 %; moved first: 5 of its 8 nodes (40 GPUs)")]


def test_a_small_idle_partition_moves_what_it_can_then_the_rest_is_bought(settings):
    settings.COST_CURRENCY = "USD"
    finding = capacity(0, SMALL)
    assert finding.node_count == 3
    assert finding.action == (
        "Move 2 nodes of partition small (16 GPUs, same GPU model H100, idle at 1 %) to partition train first; then "
        "add 3 × HGX H100 at 300,000 USD each to partition train, or rent burst capacity for about 21 GPUs until "
        "they arrive.")
    assert finding.evidence["measured"]["rebalance_from"] == {"small": 16}
    after_returns = capacity(16, SMALL)  # out of service first, then the move, then 37 − 16 − 16 = 5 bought
    assert after_returns.node_count == 1
    assert after_returns.action.startswith(
        "Return the 16 GPUs of partition train out of service (degraded or in repair) to service first; then move 2 "
        "nodes of partition small (16 GPUs, same GPU model H100, idle at 1 %) to partition train; then add 1 × HGX "
        "H100 at 300,000 USD each to partition train, or rent burst capacity for about 5 GPUs")
    measured = after_returns.evidence["measured"]
    assert (measured["returned_gpus"], measured["rebalance_gpus"], after_returns.node_count) == (16, 16, 1)
    suggested = next(f for f in after_returns.figures if f["label"] == "Suggested nodes")
    assert suggested["rule"].endswith("after the 16 GPUs returned to service and the 16 GPUs moved from idle "
                                      "partitions of the same GPU model")


def test_an_idle_partition_of_another_gpu_model_is_not_counted():
    finding = capacity(0, LEGACY)
    assert finding.node_count == 5 and finding.evidence["measured"]["rebalance_gpus"] == 0
    assert "Move" not in finding.action
    checked = entry(finding)
    assert checked["why"] == ("No other partition has H100 GPUs in service: nothing of the same model to move before "
                              "buying. Idle partitions of other GPU models are not counted: jobs sized for H100 do "
                              "not run the same on another GPU (memory, speed, builds).")
    assert [(f["label"], f["value"], f["rule"]) for f in checked["figures"]] == [
        ("Partition legacy (A100) utilization", 1.0, "another GPU model than H100: not counted")]


def test_partitions_of_the_same_model_in_use_are_ruled_out_with_their_reason():
    finding = capacity(0, BATCH, INFERENCE, QUEUED, LEGACY)
    assert finding.node_count == 5 and finding.evidence["measured"]["rebalance_from"] == {}
    checked = entry(finding)
    assert checked["why"].startswith("Ruled out: every other partition of H100 is in use, has its own queue")
    assert [(f["label"], f["rule"]) for f in checked["figures"]] == [  # the most idle first
        ("Partition queued (H100) utilization", "busiest hours 20 %; its own jobs wait long: nothing to give"),
        ("Partition inference (H100) utilization",
         "busiest hours 95 %; no whole node beyond its busiest hours (95 %) at the 80 % target"),
        ("Partition batch (H100) utilization", "busiest hours 70 %; in use: ≥ 50 %"),
        ("Partition legacy (A100) utilization", "another GPU model than H100: not counted"),
    ]


def test_the_most_idle_partition_gives_first_and_no_more_than_needed():
    finding = capacity(0, SMALL, replace(SPARE, util_mean=0.5))
    # spare (0.5 %) first: 5 nodes cover the 37; small is not needed.
    assert finding.evidence["measured"]["rebalance_from"] == {"spare": 40}
    assert [f["rule"].split("; ")[1] for f in entry(finding)["figures"]] == [
        "moved first: 5 of its 8 nodes (40 GPUs)", "2 nodes spare, not needed"]


def test_without_a_gpu_model_on_record_the_check_says_so():
    finding = rules.capacity_bound(PartitionStats(
        partition="p", gpus=8, util_mean=95.0, gpus_waiting=4.0, jobs_started=10, wait_p50_hours=2.0,
        wait_p95_hours=5.0, peers=[SPARE]), rules.THRESHOLDS)
    assert entry(finding)["why"] == "Not checked: the partition's GPU model is not recorded."
    assert finding.evidence["measured"]["rebalance_gpus"] == 0


# --- End to end: rows as the pulls write them (the simulator's week), through gather ------------------------


def two_partitions():
    """train-h200 (4 nodes of sim H200, the simulator's saturated scenario) and spare (4 nodes of the same GPU
    model whose GPUs idle all week: the simulator's idle nodes), a week of telemetry and jobs, gathered."""
    site, dgx200 = make_site(name="Zurich"), make_node_model(name="sim DGX H200", list_price=Decimal("450000.00"))
    h200 = make_gpu_model(name="sim H200", memory_gb=141)
    add_partition(site, "zrh-h200", "train-h200", 4, dgx200, h200)
    add_partition(site, "zrh-spare", "spare", 4, make_node_model(name="sim DGX spare"), h200)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulator, "IDLE_NODES", {f"zrh-spare-{i:03d}" for i in range(1, 5)})
        backfill()
    partitions, _ = gather.gather(END)
    return {p.partition: p for p in partitions}


@pytest.mark.django_db
def test_an_idle_partition_of_the_same_gpu_model_through_gather_and_then_of_another_model(db):
    """train-h200 is the simulator's saturated scenario; spare's 4 nodes of the same GPU model idle all week
    (< 1 %, busiest hours < 1 %). Written down first: spare keeps ceil(32 × peak / 0.8) = 1 GPU, so 31 are spare:
    3 whole nodes (24 GPUs) move, and of the ~30 GPUs train-h200 needs only ~6 are bought (1 node instead of 4).
    Then spare's GPUs are another model (sim H100): nothing moves, 4 nodes are bought, the differential says why."""
    stats = two_partitions()
    train, spare = stats["train-h200"], stats["spare"]
    assert (train.gpu_model_name, spare.gpu_model_name) == ("sim H200", "sim H200")
    assert spare.util_mean < 1 and [(q.partition, q.nodes, q.gpus) for q in train.peers] == [("spare", 4, 32)]
    assert train.peers[0].util_peak < 1.25  # keeps ceil(32 × < 0.0125 / 0.8) = 1 GPU: 3 whole nodes spare
    extra = (train.gpus * train.util_mean / 100 + train.gpus_waiting) / 0.8 - train.gpus
    assert 24 < extra <= 32  # the saturated scenario: more than 3 nodes' worth, at most 4
    finding = rules.capacity_bound(train)
    measured = finding.evidence["measured"]
    assert (measured["rebalance_gpus"], measured["rebalance_from"], measured["returned_gpus"]) == (24, {"spare": 24}, 0)
    assert finding.node_count == math.ceil((extra - 24) / 8) == 1
    assert finding.action.startswith("Move 3 nodes of partition spare (24 GPUs, same GPU model sim H200, idle at 0 %) "
                                     "to partition train-h200 first; then add 1 × sim DGX H200")
    GPU.objects.filter(node__partition="spare").update(gpu_model=make_gpu_model(name="sim H100", memory_gb=80))
    partitions, _ = gather.gather(END)
    other = rules.capacity_bound(next(p for p in partitions if p.partition == "train-h200"))
    assert other.node_count == math.ceil(extra / 8) == 4 and other.evidence["measured"]["rebalance_gpus"] == 0
    checked = entry(other)
    assert checked["why"].startswith("No other partition has sim H200 GPUs in service")
    assert [(f["label"], f["rule"]) for f in checked["figures"]] == [
        ("Partition spare (sim H100) utilization", "another GPU model than sim H200: not counted")]


# --- Reliability: the lost work is the goodput ratio's; the restart wait is shown apart ---------------------
#
# Partition train over the last week, by hand (hours from this hour h; now is h + 30 min; a checkpoint every 60 min,
# the restart wait capped at 24 h):
# - J1 vision on n1, 8 GPUs, −30 → −20.5, NODE_FAIL: 9.5 h run, 0.5 h since its last checkpoint × 8 = 4 GPU-h of
#   work lost; vision's next job (J2) started at −2.5: 18 h × 8 = 144 GPU-h of restart wait;
# - J2 vision on n1, 8 GPUs, −2.5 → −0.5 completed (16 GPU-h); J3 speech on n2, 8 GPUs, −40 → −12 completed (224).
# Allocated 76 + 16 + 224 = 316 GPU-hours. Lost share 4 / 316 = 1.3 %; goodput ratio (316 − 4) / 316 = 0.9873
# = 1 − the share (98.7 % on the goodput page). Work and wait together would be 148 / 316 = 46.8 %: the naive
# figure an expert overrules, since 144 of it is GPUs idle while a team waited, not work done again.


@pytest.fixture
def long_wait(monkeypatch, db, settings):
    settings.GOODPUT_CHECKPOINT_MINUTES, settings.GOODPUT_RESTART_WAIT_CAP_HOURS = 60, 24
    now = freeze_now(monkeypatch)
    h = now - 30 * MIN
    model, node_model, site = make_gpu_model(name="M1"), make_node_model(), make_site(name="alpha")
    nodes = [make_node(site=site, node_model=node_model, hostname=name, state="in_service") for name in ("n1", "n2")]
    for node in nodes:
        for _ in range(8):
            make_gpu(node=node, gpu_model=model)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    add_job(source, "1", nodes[0], 8, h - 30 * H, h - 30 * H, h - 20.5 * H, "NODE_FAIL")
    add_job(source, "2", nodes[0], 8, h - 3 * H, h - 2.5 * H, h - 0.5 * H, "COMPLETED")
    add_job(source, "3", nodes[1], 8, h - 40 * H, h - 40 * H, h - 12 * H, "COMPLETED", account="speech")
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    return now


def reliability_findings(now, **thresholds):
    t = rules.Thresholds(**thresholds)
    return [f for r in gather.reliability(now, t) if (f := rules.reliability_bound(r, t))]


def test_a_long_restart_wait_is_not_lost_work(long_wait):
    # 1.3 % of work lost ≤ 5 %: healthy, though work and wait together are 46.8 %.
    assert reliability_findings(long_wait) == []


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_the_share_is_the_goodput_pages_and_the_wait_is_shown_apart(long_wait, viewer_api, viewer_client):
    [found] = reliability_findings(long_wait, reliability_lost_share=0.01)
    figures = {f["label"]: f["value"] for f in found.evidence["figures"]}
    assert figures["Lost work (since the last checkpoint, estimate)"] == 4.0
    assert figures["Restart wait (not in the lost share)"] == 144.0
    assert figures["Allocated GPU-hours"] == 316.0
    assert figures["Lost share of the allocated GPU-hours"] == 1.3 and figures["Goodput ratio"] == 98.7
    assert figures["Cost of the lost work and the restart wait"] == 296.0  # 148 GPU-h at the default 2.0
    assert found.title == "Infrastructure failures cost partition train 1.3 % of its GPU-hours"
    assert found.severity == "medium"  # 1.3 % < twice the 1 % limit
    measured = found.evidence["measured"]
    assert (measured["lost_run_gpu_hours"], measured["lost_wait_gpu_hours"], measured["lost_share"]) == (
        4.0, 144.0, 0.0127)
    wait = entry(found, "restart_wait")
    assert wait["why"].startswith("Not counted as lost work") and "Capacity idle, not work redone" in wait["why"]
    assert [(f["value"], f["unit"]) for f in wait["figures"]] == [(144.0, "GPU-h"), (46.8, "%")]
    # The goodput API and page, same partition and range: 1 − the finding's share.
    range_key = gather.goodput_range()
    api = viewer_api.get("/api/inventory/goodput/", {"group_by": "partition", "range": range_key}).json()
    train = next(g for g in api["groups"] if g["name"] == "train")
    assert train["goodput_ratio"] == 0.9873 == pytest.approx(1 - 4 / 316, abs=5e-5)
    assert train["goodput_ratio"] == pytest.approx(1 - measured["lost_share"], abs=1e-4)
    assert (train["lost_run_gpu_hours"], train["lost_wait_gpu_hours"]) == (4.0, 144.0)
    page = viewer_client.get("/inventory/goodput/", {"group_by": "partition", "range": range_key}).content.decode()
    assert "98.7 %" in page
