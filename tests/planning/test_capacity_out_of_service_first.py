"""Capacity out of service first (issue 34): a capacity-bound partition whose own GPUs sit degraded or in repair is
told to return them to service before buying, and its finding says what else was checked (the differential).

The expected answers were written down before the rule ran. The partition: 64 GPUs in service, 95 % busy, 20 GPUs'
worth of jobs waiting, nodes of 8 GPUs, an 80 % target: capacity for (64 × 0.95 + 20) / 0.8 = 101 GPUs, 37 more.
- none out of service: add ceil(37 / 8) = 5 nodes;
- 16 out of service: return them first, then add ceil(21 / 8) = 3 nodes (not 5: "add 6 nodes while 16 GPUs sit
  degraded" is the advice an expert overrules);
- 40 out of service: returning 37 of them covers the need: buy nothing.
"""

from decimal import Decimal

import pytest

from inventory.models import GPU, LifecycleState
from planning.recommendations import gather, rules
from planning.recommendations.rules import PartitionStats
from tests.factories import RecommendationFactory, build_gpu, build_node, make_gpu_model, make_node_model, make_site

L = LifecycleState


def busy_partition(out_of_service=0, allocated=0.97):
    return PartitionStats(partition="train", gpus=64, gpu_hours=64 * 168.0, util_mean=95.0, gpus_waiting=20.0,
                          jobs_started=200, wait_p50_hours=3.0, wait_p95_hours=12.0, gpu_slots=8,
                          node_model_name="HGX H100", node_price=Decimal("300000"),
                          allocated_gpu_hours=64 * 168.0 * allocated, gpus_out_of_service=out_of_service)


@pytest.mark.parametrize(("out", "nodes", "action"), [
    (0, 5, "Add 5 × HGX H100 at 300,000 USD each to partition train, or rent burst capacity for about 37 GPUs"),
    (16, 3, "Return the 16 GPUs of partition train out of service (degraded or in repair) to service first; then "
            "add 3 × HGX H100 at 300,000 USD each to partition train, or rent burst capacity for about 21 GPUs"),
    (40, 0, "Return the 40 GPUs of partition train out of service (degraded or in repair) to service first: they "
            "cover the 37 GPUs needed, so buy nothing yet."),
])
def test_gpus_out_of_service_are_returned_before_anything_is_bought(settings, out, nodes, action):
    settings.COST_CURRENCY = "USD"
    finding = rules.capacity_bound(busy_partition(out), rules.THRESHOLDS)
    assert finding.node_count == nodes
    assert finding.action.startswith(action)
    figures = {f["label"]: f["value"] for f in finding.figures}
    assert figures["GPUs out of service (degraded or in repair)"] == out and figures["Suggested nodes"] == nodes
    assert finding.evidence["measured"]["returned_gpus"] == min(out, 37)


def test_the_differential_says_what_was_checked_and_why_it_was_ruled_out():
    none_out = rules.capacity_bound(busy_partition(0), rules.THRESHOLDS).evidence["ruled_out"]
    assert [(e["kind"], e["why"][:40]) for e in none_out] == [
        ("out_of_service", "No GPU of the partition is degraded or i"),
        ("idle_same_model", "Not checked: the partition's GPU model i"),  # no model recorded on this hand-made one
        ("scheduling_bound", "The queue does not hold work back: nearl"),
    ]
    assert none_out[2]["figures"][0]["value"] == 3.0  # % of the GPU-hours not allocated: 100 − 97
    some_out = rules.capacity_bound(busy_partition(16, allocated=0.7), rules.THRESHOLDS).evidence["ruled_out"]
    assert some_out[0]["why"].startswith("Taken first: returning the GPUs out of service covers 16 of the GPUs")
    assert some_out[2]["why"].startswith("Not ruled out: part of the GPU-hours ran no job")


@pytest.mark.django_db
def test_gather_counts_the_partitions_gpus_out_of_service_with_the_capacity_model():
    site, node_model, gpu_model = make_site(), make_node_model(), make_gpu_model()
    for state in (L.IN_SERVICE, L.IN_SERVICE, L.DEGRADED, L.IN_REPAIR, L.RETIRED):
        node = build_node(site, node_model, state=state, partition="train")
        node.save()
        GPU.objects.bulk_create(build_gpu(gpu_model, node=node, slot=i, state=L.IN_SERVICE) for i in range(8))
    stats = {"train": PartitionStats("train")}
    gather.add_nodes(stats)
    assert (stats["train"].nodes, stats["train"].gpus_out_of_service) == (2, 16)


@pytest.mark.django_db
def test_the_page_and_the_api_show_the_differential(manager_client, manager_api):
    finding = rules.capacity_bound(busy_partition(16), rules.THRESHOLDS)
    rec = RecommendationFactory(partition="train", evidence=finding.evidence, action=finding.action)
    page = manager_client.get(f"/planning/recommendations/{rec.pk}/").content.decode()
    assert 'id="differential"' in page and "Capacity out of service" in page
    assert "Taken first: returning the GPUs out of service covers 16 of the GPUs needed" in page
    answer = manager_api.get(f"/api/planning/recommendations/{rec.pk}/").json()
    assert [e["kind"] for e in answer["ruled_out"]] == ["out_of_service", "idle_same_model", "scheduling_bound"]
    assert answer["ruled_out"] == answer["evidence"]["ruled_out"]
