"""Network-bound, memory-bound and ageing as a domain expert would judge them, each answer written down before the
rule ran.

- Network: multi-node jobs are compared with single-node jobs on nodes of the same GPU model and fast fabric only;
  an A100's multi-node jobs are no evidence against an H100's single-node ones.
- Memory: a full frame buffer is no pressure (vLLM and TGI reserve ~90 % at start); jobs ending OUT_OF_MEMORY are
  (two at least); generic FAILED jobs are not.
- Ageing: a fault concentrated on one or a few nodes of a model under warranty is a repair (open an RMA), not
  ageing, and never becomes a plan to buy nodes; faults spread over the model's nodes, or out of warranty, are."""

from dataclasses import replace
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import LifecycleState, Node
from inventory.telemetry.models import SlurmJob
from planning.models import PlanItem, Recommendation
from planning.plans import needs
from planning.recommendations import gather, rules
from planning.recommendations import store as rec_store
from tests.factories import make_attachment, make_gpu_model, make_node_model, make_site
from tests.planning.test_recommendations import END, TODAY, add_partition, degraded_on
from tests.planning.test_recommendations_by_hand import DAY, hand_fleet, hours_of, job, memory_jobs

pytestmark = pytest.mark.django_db
H100, A100, IB, ROCE = "H100 SXM", "A100 SXM", "ib-a", "roce-b"
LOOSE = replace(rules.THRESHOLDS, network_min_jobs=1, network_min_gpu_hours=4.0)  # a few hand-written jobs count


def by_figure(entry):
    return {f["label"]: f["value"] for f in entry["figures"]}


def entry(finding, kind):
    return next(e for e in finding.ruled_out if e["kind"] == kind)


# --- Network-bound: hand-made cases ----------------------------------------------------------------------------


def width(low, high, model, fabric, util, jobs=10, gpu_hours=200.0, **fabric_figures):
    return rules.Width(low, high, jobs=jobs, gpu_hours=gpu_hours, util_sum=util * gpu_hours, gpu_model=model,
                       fabric=fabric, **fabric_figures)


def mixed(*widths, **kw):
    """A partition on a 2:1 oversubscribed leaf switch (the fabric is weak: only the comparison decides)."""
    values = dict(oversubscription=2.0, oversubscribed_switches={"leaf-1": 2.0}, fabrics=[IB],
                  fabric_gbps_per_gpu=400.0, multi_node_share=0.6)
    return rules.PartitionStats(partition="mixed", gpus=96, gpu_hours=96 * 168.0, widths=list(widths),
                                **{**values, **kw})


def test_multi_node_a100_jobs_are_not_compared_with_single_node_h100_jobs():
    # The old rule: 90 % on one node against 60 % on 5–8 nodes, a 33 % fall → "network-bound". But the single-node
    # jobs ran on H100s and the multi-node ones on A100s: nothing like for like, nothing to say about the network.
    p = mixed(width(1, 1, H100, IB, 90.0), width(5, 8, A100, IB, 60.0))
    assert rules.network_bound(p) is None


def test_same_model_multi_node_jobs_as_fast_as_its_single_node_jobs_are_no_finding():
    # The A100s' own single-node jobs run at 62 %: 5–8 nodes at 60 % is a 3 % fall, healthy scaling.
    p = mixed(width(1, 1, A100, IB, 62.0), width(1, 1, H100, IB, 90.0), width(5, 8, A100, IB, 60.0))
    assert rules.network_bound(p) is None


def test_like_for_like_fall_is_raised_and_the_other_model_named_in_the_differential():
    # H100: 90 % on one node, 63 % on 5–8 nodes (30 % lower) on the oversubscribed fabric → network-bound.
    # The A100 groups (single-node 60 %) are left out and named, with their figures.
    p = mixed(width(1, 1, A100, IB, 60.0, jobs=40), width(1, 1, H100, IB, 90.0), width(2, 2, H100, IB, 80.0),
              width(5, 8, H100, IB, 63.0, jobs=6))
    finding = rules.network_bound(p)
    assert finding is not None and finding.severity == "high"
    figures = {f["label"]: f["value"] for f in finding.figures}
    assert figures["Per-GPU utilization lost on 5–8 nodes"] == 30.0
    assert figures["Per-GPU utilization on 1 node"] == 90.0  # the H100s', not the A100s' 60 %
    assert "90 % on one node, 63 % on 5–8 nodes" in finding.summary and f"on {H100} on {IB}" in finding.summary
    assert finding.chart["data"]["labels"] == ["1 node", "2 nodes", "5–8 nodes"]
    (like,) = finding.ruled_out
    assert like["kind"] == "like_for_like" and like["label"] == "Like for like (same GPU model and fabric)"
    assert f"5–8 nodes against 1 node, both on {H100} on {IB}" in like["why"] and f"{A100} on {IB}" in like["why"]
    assert by_figure(like) == {
        f"Per-GPU utilization on 1 node ({H100} on {IB})": 90.0,
        f"Per-GPU utilization on 5–8 nodes ({H100} on {IB})": 63.0,
        f"Jobs on 1 node ({A100} on {IB})": 40,
        f"Per-GPU utilization on 1 node ({A100} on {IB})": 60.0,
    }


def test_same_gpu_model_on_another_fabric_is_not_like_for_like():
    # H100 single-node jobs on InfiniBand, H100 multi-node jobs on RoCE: not the same hardware between the nodes.
    p = mixed(width(1, 1, H100, IB, 90.0), width(5, 8, H100, ROCE, 55.0))
    assert rules.network_bound(p) is None


def test_the_compared_groups_own_fabric_decides_not_the_partitions():
    # The partition has an oversubscribed switch (under its A100s); the H100s' multi-node jobs ran on a
    # non-blocking 400 Gb/s-per-GPU fabric: their fall is NCCL or the model, not hardware → nothing.
    blocking_free = dict(node_ids={1, 2}, fabrics=[IB], oversubscription=1.0, fabric_gbps_per_gpu=400.0)
    p = mixed(width(1, 1, H100, IB, 90.0), width(5, 8, H100, IB, 60.0, **blocking_free))
    assert rules.network_bound(p) is None
    # The same group under a 2:1 leaf switch: raised, naming that switch.
    weak = dict(blocking_free, oversubscription=2.0, oversubscribed_switches={"h100-leaf": 2.0})
    finding = rules.network_bound(mixed(width(1, 1, H100, IB, 90.0), width(5, 8, H100, IB, 60.0, **weak)))
    assert "h100-leaf (2.00:1)" in finding.action and "leaf-1" not in finding.action


def test_of_several_like_for_like_pairs_the_widest_is_compared():
    p = mixed(width(1, 1, A100, IB, 60.0), width(2, 2, A100, IB, 58.0),
              width(1, 1, H100, IB, 90.0), width(5, 8, H100, IB, 60.0))
    finding = rules.network_bound(p)
    assert finding is not None and "on 5–8 nodes" in finding.summary
    assert f"Jobs on 2 nodes ({A100} on {IB})" in by_figure(finding.ruled_out[0])


def test_single_model_partition_says_nothing_was_left_out():
    finding = rules.network_bound(mixed(width(1, 1, H100, IB, 90.0), width(5, 8, H100, IB, 60.0)))
    (like,) = finding.ruled_out
    assert like["why"].startswith(f"Every job measured ran on {H100} on {IB} nodes")


# --- Network-bound: end to end, rows written as the pull writes them --------------------------------------------


def a100_nodes(site, fabric, switch):
    """Four 2-GPU A100 nodes (hna-001…004) in partition ``hand``, on the same fabric and switch as hand_fleet's."""
    nodes = add_partition(site, "hna", "hand", 4, make_node_model(name="2-GPU A100 node", gpu_slots=2),
                          make_gpu_model(name=A100))
    for node in nodes:
        make_attachment(node=node, fabric=fabric, switch=switch, ports=2, speed_gbps=400)
    return nodes


def run_jobs(source, nodes_by_job, utils, first_hour=0):
    """One job per entry, each on its host list for two full hours from DAY + ``first_hour`` + 2k, its nodes'
    GPUs at ``utils`` (one per job) in those hours."""
    for k, (hosts, util) in enumerate(zip(nodes_by_job, utils, strict=True)):
        start = DAY + timedelta(hours=first_hour + 2 * k)
        names = hosts.split(",")
        hours_of([Node.objects.get(hostname=name) for name in names], start, {0: (util, util), 1: (util, util)})
        job(source, f"j{first_hour}-{k}", hosts, start, start + timedelta(hours=2))


def test_mixed_partition_end_to_end(db):
    h100_nodes, source = hand_fleet()  # hnd-001…004: 2-GPU "hand GPU" nodes under hand-leaf-01 (1.5:1)
    site = h100_nodes[0].site
    switch = h100_nodes[0].fabric_attachments.get().switch
    a100_nodes(site, switch.fabric, switch)
    # H100s: 3 single-node jobs at 90 %. A100s: 3 two-node jobs at 50 %. One job over an H100 and an A100 node.
    run_jobs(source, ["hnd-001", "hnd-002", "hnd-001"], [90, 90, 90])
    run_jobs(source, ["hna-001,hna-002", "hna-003,hna-004", "hna-001,hna-002"], [50, 50, 50], first_hour=8)
    run_jobs(source, ["hnd-003,hna-003"], [20], first_hour=16)
    (p,) = gather.gather(END)[0]
    assert [(w.group, w.label, w.jobs, w.util) for w in p.widths] == [
        ((A100, "hand-ib"), "2 nodes", 3, 50.0), (("hand GPU", "hand-ib"), "1 node", 3, 90.0)]  # not the mixed job
    assert p.widths[0].oversubscription == 1.5 and p.widths[0].node_ids
    # The old comparison (90 % → 50 %, 44 % lower, on a 1.5:1 switch) would say network-bound: not like for like.
    assert rules.network_bound(p, LOOSE) is None
    # H100 two-node jobs at 60 %: now a like-for-like fall of a third.
    run_jobs(source, ["hnd-001,hnd-002", "hnd-003,hnd-004"], [60, 60], first_hour=24)
    (p,) = gather.gather(END)[0]
    finding = rules.network_bound(p, LOOSE)
    assert finding is not None and "hand-leaf-01 (1.50:1)" in finding.action
    like = by_figure(finding.ruled_out[0])
    assert like[f"Per-GPU utilization on 2 nodes ({A100} on hand-ib)"] == 50.0
    assert like["Per-GPU utilization on 2 nodes (hand GPU on hand-ib)"] == 60.0
    rec_store.write([finding], END)
    assert [e["kind"] for e in Recommendation.objects.get().evidence["ruled_out"]] == ["like_for_like"]


# --- Memory-bound: hand-made cases -----------------------------------------------------------------------------


def partition(memory_share, oom=0, failed=0, ended=100, users=0):
    return rules.PartitionStats(partition="serve", gpus=16, gpu_hours=16 * 168.0, memory_share=memory_share,
                                oom_jobs=oom, failed_jobs=failed + oom, ended_jobs=ended, oom_users=users)


@pytest.mark.parametrize(("memory_share", "oom", "failed", "ended", "expected"), [
    (0.92, 0, 0, 200, None),  # vLLM/TGI reserve ~90 % at start, nothing runs out of memory: preallocation
    (0.92, 0, 8, 100, None),  # + 8 % generic FAILED jobs: failures are no memory evidence (the old rule fired)
    (0.92, 1, 0, 100, None),  # one OOM job: one run's batch size
    (0.92, 2, 0, 100, "medium"),  # two, 2 % of the jobs ended
    (0.92, 3, 2, 40, "high"),  # three of 40 ended (7.5 %)
    (0.70, 10, 0, 100, None),  # room in the frame buffer: the OOMs are not the GPUs' memory
    (0.85, 2, 0, 100, "medium"),  # exactly at the frame-buffer threshold
])
def test_memory_bound_needs_out_of_memory_jobs(memory_share, oom, failed, ended, expected):
    finding = rules.memory_bound(partition(memory_share, oom, failed, ended))
    assert (finding.severity if finding else None) == expected


def test_memory_bound_differential_says_preallocation_was_ruled_out():
    finding = rules.memory_bound(partition(0.92, oom=3, failed=5, ended=40, users=2))
    pre, failed = finding.ruled_out
    assert pre["kind"] == "preallocation" and pre["why"].startswith("Ruled out: 3 jobs of 2 users ended out of memory")
    assert by_figure(pre) == {"Out-of-memory jobs": 3, "Users whose jobs ran out of memory": 2,
                              "Out-of-memory share of the jobs ended": 7.5}
    assert failed["kind"] == "failed_jobs" and "Not counted: 5 jobs ended FAILED" in failed["why"]
    assert by_figure(failed) == {"Jobs ended FAILED (not out of memory)": 5, "Jobs ended": 40}
    assert "host-memory limit (--mem)" in finding.action  # Slurm's OUT_OF_MEMORY may be the host's


# --- Memory-bound: end to end -----------------------------------------------------------------------------------


def test_inference_servers_full_frame_buffer_is_not_memory_bound_until_jobs_run_out_of_memory(db):
    nodes, source = hand_fleet()
    # A serving job per hour on each of two nodes holding 72 of 80 GB (90 %), none running out of memory.
    memory_jobs(source, nodes[:2], 60, 72, oom=False)
    (p,) = gather.gather(END)[0]
    assert p.memory_share == pytest.approx(0.9) and (p.oom_jobs, p.oom_users) == (0, 0)
    assert rules.memory_bound(p) is None
    # A generic failure does not change it.
    SlurmJob.objects.filter(job_id="hnd-001-3").update(state="FAILED")
    (p,) = gather.gather(END)[0]
    assert p.failed_jobs == 1 and rules.memory_bound(p) is None
    # Two runs of two users end OUT_OF_MEMORY: pressure, 2 of 20 ended jobs (10 %) → high.
    SlurmJob.objects.filter(job_id="hnd-001-5").update(state="OUT_OF_MEMORY", user="ana")
    SlurmJob.objects.filter(job_id="hnd-002-5").update(state="OUT_OF_MEMORY", user="ben")
    (p,) = gather.gather(END)[0]
    assert (p.oom_jobs, p.oom_users, p.ended_jobs) == (2, 2, 20)
    finding = rules.memory_bound(p)
    assert finding.severity == "high" and "2 of the 20 jobs that ended ran out of memory (10 %)" in finding.summary
    rec_store.write([finding], END)
    stored = Recommendation.objects.get().evidence["ruled_out"]
    assert [e["kind"] for e in stored] == ["preallocation", "failed_jobs"]
    assert by_figure(stored[1])["Jobs ended FAILED (not out of memory)"] == 1


# --- Ageing: hand-made cases -----------------------------------------------------------------------------------

UNDER = date(2027, 6, 30)  # the fleet's warranty: bought two years ago, three years of cover
EXPIRED = date(2024, 12, 31)


def node(i, fault_days=0, warranty_end=UNDER, fleet=12, model=(1, "DGX H100"), xid_days=0, site=(1, "Zurich")):
    return rules.NodeHealth(i, f"zrh-{i:03d}", site[0], site[1], model[0], model[1], Decimal("400000"),
                            warranty_end=warranty_end, fault_days=fault_days, xid_days=xid_days, fleet_nodes=fleet)


def test_one_faulting_node_of_a_healthy_fleet_under_warranty_is_an_rma_not_ageing():
    # zrh-007 faulted on 3 days; the 11 other DGX H100s of Zurich run clean; warranty until mid-2027. The old rule
    # said "1 ageing node — replace". An expert: open an RMA. No finding: nothing to buy at Zurich.
    assert rules.ageing([node(7, fault_days=3)], TODAY) == []
    assert rules.ageing([node(7, xid_days=5)], TODAY) == []  # XID errors on 5 days: the same


def test_the_rma_node_is_named_in_the_differential_of_the_sites_ageing_finding():
    old = node(20, warranty_end=EXPIRED, model=(2, "DGX A100"), fleet=4)  # out of warranty: replace
    (finding,) = rules.ageing([node(7, fault_days=3), old], TODAY)
    assert (finding.title, finding.node_count, finding.node_model_id) == ("1 ageing node at Zurich", 1, 2)
    rows = next(f["rows"] for f in finding.figures if "rows" in f)
    assert [row["hostname"] for row in rows] == ["zrh-020"]  # what an accepted plan replaces
    assert "zrh-007" not in finding.action and "zrh-007" not in finding.summary
    (repair,) = finding.ruled_out
    assert repair["kind"] == "warranty_repair" and repair["label"] == "Repair under warranty (RMA)"
    assert "zrh-007" in repair["why"] and "open an RMA" in repair["why"] and "nothing to buy" in repair["why"]
    assert by_figure(repair) == {
        "DGX H100 nodes at Zurich with repeated faults": 1, "DGX H100 nodes at Zurich": 12,
        "zrh-007: warranty end": "2027-06-30", "zrh-007: days with faults": 3, "zrh-007: days with XID errors": 0}
    figures = {f["label"]: f["value"] for f in finding.figures if "rows" not in f}
    assert figures["Nodes left out as repairs under warranty (RMA)"] == 1


@pytest.mark.parametrize(("faulting", "fleet", "expected"), [
    (1, 12, "repair"),  # one of twelve
    (2, 2, "repair"),  # both nodes of a pair: still two units, the vendor's to repair
    (2, 5, "repair"),  # 40 %, but two nodes
    (3, 16, "repair"),  # three, but 19 % of the fleet: concentrated
    (3, 15, "ageing"),  # three and 20 %: spread, wear or a bad batch
    (4, 12, "ageing"),
])
def test_faults_under_warranty_concentrated_or_spread(faulting, fleet, expected):
    findings = rules.ageing([node(i, fault_days=2, fleet=fleet) for i in range(1, faulting + 1)], TODAY)
    assert ("ageing" if findings else "repair") == expected
    if findings:
        (finding,) = findings
        assert finding.node_count == faulting and finding.severity == "high"
        assert "have the vendor repair" in finding.action and "under warranty meanwhile" in finding.action
        (repair,) = finding.ruled_out
        assert repair["why"].startswith("No repair under warranty among the nodes to replace")
        assert by_figure(repair)["DGX H100 nodes at Zurich with repeated faults"] == faulting


def test_out_of_warranty_or_unrecorded_warranty_faults_stay_ageing():
    expired = rules.ageing([node(7, fault_days=3, warranty_end=EXPIRED)], TODAY)
    assert [f.node_count for f in expired] == [1] and "out of warranty" in expired[0].summary
    (unknown,) = rules.ageing([node(7, fault_days=3, warranty_end=None)], TODAY)
    assert "Record the warranty of zrh-007: if it is still covered, open an RMA" in unknown.ruled_out[0]["why"]


def test_warranty_ending_today_still_covers_the_repair():
    assert rules.ageing([node(7, fault_days=3, warranty_end=TODAY)], TODAY) == []
    assert len(rules.ageing([node(7, fault_days=3, warranty_end=TODAY - timedelta(days=1))], TODAY)) == 1


def test_faults_are_weighed_per_site_and_model():
    # Three faulting DGX H100s, but at two sites (2 + 1 of 12 each): concentrated at both → repairs.
    geneva = (2, "Geneva")
    nodes = [node(1, fault_days=2), node(2, fault_days=2), node(3, fault_days=2, site=geneva)]
    assert rules.ageing(nodes, TODAY) == []
    # Three of the same site but two models (2 H100 + 1 A100 of 12 each): concentrated per model → repairs.
    nodes = [node(1, fault_days=2), node(2, fault_days=2), node(3, fault_days=2, model=(2, "DGX A100"))]
    assert rules.ageing(nodes, TODAY) == []


# --- Ageing: end to end, through the ORM, and accepting it -------------------------------------------------------


def test_rma_node_end_to_end_never_becomes_a_plan_to_buy(db, manager):
    site = make_site(name="Zurich")
    dgx = make_node_model(name="DGX H100 e2e", gpu_slots=2, list_price=Decimal("400000.00"))
    fleet = add_partition(site, "zrh", "train", 12, dgx, make_gpu_model(name="H100 e2e"), warranty_end=UNDER)
    retired = add_partition(site, "zrr", "", 3, dgx, make_gpu_model(name="H100 old"), warranty_end=UNDER)
    Node.objects.filter(pk__in=[n.pk for n in retired]).update(state=LifecycleState.RETIRED)  # not the fleet
    degraded_on(fleet[6], date(2026, 4, 2), date(2026, 9, 14))  # zrh-007: two days degraded this year
    _, health = gather.gather(END)
    (suspect,) = health
    assert (suspect.hostname, suspect.fault_days, suspect.fleet_nodes) == ("zrh-007", 2, 12)
    assert rules.ageing(health, TODAY) == []  # an RMA, not ageing
    # An old A100 node out of warranty at the same site: the site's ageing finding replaces it alone.
    old = add_partition(site, "zra", "legacy", 1, make_node_model(name="DGX A100 e2e", gpu_slots=2),
                        make_gpu_model(name="A100 e2e"), warranty_end=EXPIRED)[0]
    _, health = gather.gather(END)
    (finding,) = rules.ageing(health, TODAY)
    assert finding.node_count == 1 and "zrh-007" in finding.ruled_out[0]["why"]
    rec_store.write([finding], END)
    rec = Recommendation.objects.get()
    assert [row["hostname"] for row in rec_store.ageing_rows(rec)] == [old.hostname]
    assert [row["hostname"] for row in needs.evidence_rows(rec.evidence)] == [old.hostname]  # what leaves a plan
    plan = rec_store.accept(rec, manager).plan
    assert plan.node_model_id == old.node_model_id  # the A100 is replaced…
    assert not PlanItem.objects.filter(plan=plan, node_model=dgx).exists()  # …and no H100 bought for zrh-007


def test_a_fleet_with_spread_faults_is_ageing_end_to_end(db):
    site = make_site(name="Zurich")
    fleet = add_partition(site, "zrh", "train", 10, make_node_model(name="DGX e2e", gpu_slots=2),
                          make_gpu_model(name="H100 e2e"), warranty_end=UNDER)
    for n in fleet[:3]:  # 3 of 10 (30 %) faulting: the model's fleet wears out
        degraded_on(n, date(2026, 4, 2), date(2026, 9, 14))
    _, health = gather.gather(END)
    assert {h.fleet_nodes for h in health} == {10}
    (finding,) = rules.ageing(health, TODAY)
    assert finding.node_count == 3 and finding.ruled_out[0]["kind"] == "warranty_repair"


def test_node_health_reads_the_same_queries_for_a_larger_fleet(db, django_assert_max_num_queries):
    site = make_site(name="Zurich")
    model, gpu = make_node_model(name="DGX q", gpu_slots=2), make_gpu_model(name="H100 q")
    small = add_partition(site, "zrs", "q", 2, model, gpu, warranty_end=EXPIRED)
    degraded_on(small[0], date(2026, 4, 2), date(2026, 9, 14))
    with CaptureQueriesContext(connection) as few:
        gather.node_health(END)
    large = add_partition(site, "zrl", "q", 40, model, gpu, warranty_end=EXPIRED)
    for n in large[:10]:
        degraded_on(n, date(2026, 4, 2))
    with django_assert_max_num_queries(len(few)):
        assert len(gather.node_health(END)) == 42

