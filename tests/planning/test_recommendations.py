"""Expansion recommendations (``planning.recommendations``): each rule on the telemetry simulator's scenarios
that should and should not trigger it, the idempotent write, accepting into a draft plan and dismissing with a
reason, the pages, the API, the task and the home dashboard card."""

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Concat, Upper
from django.test.utils import CaptureQueriesContext

from inventory.models import GPU, LifecycleState, Node, StateTransition, TelemetrySource
from inventory.telemetry import simulator, slurm
from inventory.telemetry.models import GPUHourly, NodeHourly, SlurmJob, SlurmJobNode
from inventory.telemetry.pull import store
from inventory.telemetry.records import Collected
from planning.models import Recommendation
from planning.recommendations import gather, rules
from planning.recommendations import store as rec_store
from planning.recommendations.tasks import analyse_recommendations
from portal.db import analyze
from support.models import Ticket
from tests.factories import (
    build_gpu,
    build_node,
    make_attachment,
    make_fabric,
    make_gpu_model,
    make_node_model,
    make_site,
    make_switch,
    make_ticket,
)

END = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)  # a Monday morning: the week before it is the window
WEEK = timedelta(days=7)
S = LifecycleState


def add_partition(site, prefix, partition, count, node_model, gpu_model, **node_fields):
    """``count`` in-service nodes named like the demo's (the simulator shapes them by partition and name)."""
    nodes = Node.objects.bulk_create(
        build_node(site, node_model, hostname=f"{prefix}-{i:03d}", partition=partition, state=S.IN_SERVICE,
                   **node_fields) for i in range(1, count + 1))
    # UUIDs from the names, not the factories' counter: the simulator seeds each GPU's figures with its UUID, so
    # the scenarios must not depend on which tests ran before in the same process.
    GPU.objects.bulk_create(build_gpu(gpu_model, node=node, slot=slot, state=S.IN_SERVICE,
                                      uuid=f"GPU-{node.hostname}-{slot}")
                            for node in nodes for slot in range(node_model.gpu_slots))
    return nodes


def backfill(end=END, oom_partitions=()):
    """A week of the simulator's telemetry and Slurm jobs for the fleet in the database, written as pulls do.
    In ``oom_partitions`` the jobs that failed ran out of memory (Slurm's OUT_OF_MEMORY state)."""
    exporter = TelemetrySource.objects.create(name="dcgm", kind="exporter", url="http://sim:9400/metrics")
    jobs_source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://sim:9400/jobs")
    gpus = simulator.fleet()
    store(exporter, Collected(hours=simulator.hour_records(gpus, end - WEEK, end)), end)
    jobs = slurm.parse_jobs(simulator.jobs(simulator.nodes_of(gpus), end - WEEK, end))
    for job in jobs:
        if job.partition in oom_partitions and job.state == "FAILED":
            job.state = "OUT_OF_MEMORY"
    store(jobs_source, Collected(jobs=jobs), end)
    analyze(GPUHourly, NodeHourly, SlurmJob, SlurmJobNode, GPU, Node)  # fresh statistics, as autovacuum would give


def degraded_on(obj, *days):
    """Lifecycle records of ``obj`` moving to degraded on each of ``days``."""
    StateTransition.objects.bulk_create(
        StateTransition(content_type=ContentType.objects.get_for_model(obj), object_id=obj.pk,
                        from_state=S.IN_SERVICE, to_state=S.DEGRADED, username="ops", reason="XID 79",
                        created=datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=9))
        for day in days)


def scenario_fleet():
    """The simulator's scenarios, one partition each: saturated (train-h200, whose failed jobs ran out of
    memory), storage-starved (a100-legacy), network-bound (train-h100, on a 2:1 oversubscribed fabric),
    day-night serving (inference) and mixed single-node jobs (research). Ageing: two a100-legacy nodes out of
    warranty, a GPU of zrh-h100-003 degraded (the simulator gives it XID errors), lys-res-001 degraded on two
    days of the year and lys-res-002 on one."""
    zurich, lyon = make_site(name="Zurich"), make_site(name="Lyon")
    dgx = make_node_model(name="sim DGX H100", list_price=Decimal("400000.00"))
    dgx200 = make_node_model(name="sim DGX H200", list_price=Decimal("450000.00"))
    dgx_a100 = make_node_model(name="sim DGX A100")
    h100 = make_gpu_model(name="sim H100", memory_gb=80)
    h200 = make_gpu_model(name="sim H200", memory_gb=141)
    a100 = make_gpu_model(name="sim A100", memory_gb=80)
    add_partition(zurich, "zrh-h200", "train-h200", 4, dgx200, h200)
    network = add_partition(zurich, "zrh-h100", "train-h100", 8, dgx, h100)
    legacy = add_partition(lyon, "lys-a100", "a100-legacy", 4, dgx_a100, a100, warranty_end=date(2027, 6, 30))
    Node.objects.filter(pk__in=[legacy[0].pk, legacy[1].pk]).update(warranty_end=date(2024, 12, 31))
    add_partition(lyon, "lys-h100", "inference", 2, dgx, h100)
    research = add_partition(lyon, "lys-res", "research", 4, dgx, h100)
    GPU.objects.filter(node=network[2], slot=2).update(state=S.DEGRADED)
    degraded_on(research[0], date(2026, 3, 2), date(2026, 10, 20))
    degraded_on(research[1], date(2026, 10, 20))
    fabric = make_fabric(name="zrh-ib")
    switch = make_switch(fabric=fabric, site=zurich, oversubscription_ratio=Decimal("2.00"))
    for node in network:
        make_attachment(node=node, fabric=fabric, switch=switch, ports=8, speed_gbps=400)
    backfill(oom_partitions={"train-h200"})


def idle_fleet():
    """A saturated partition (train-h200: jobs wait hours) in which half the nodes take no jobs."""
    site = make_site(name="Zurich")
    add_partition(site, "zrh-h200", "train-h200", 4, make_node_model(name="sim DGX H200"),
                  make_gpu_model(name="sim H200", memory_gb=141))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulator, "IDLE_NODES", {"zrh-h200-003", "zrh-h200-004"})
        backfill()


def gathered(django_db_blocker, build):
    with django_db_blocker.unblock(), transaction.atomic():
        build()
        partitions, nodes = gather.gather(END)
        transaction.set_rollback(True)
    return {p.partition: p for p in partitions}, nodes


@pytest.fixture(scope="module")
def gathered_scenarios(django_db_setup, django_db_blocker):
    return gathered(django_db_blocker, scenario_fleet)


@pytest.fixture(scope="module")
def scenarios(gathered_scenarios):
    return gathered_scenarios[0]


@pytest.fixture(scope="module")
def health(gathered_scenarios):
    return {node.hostname: node for node in gathered_scenarios[1]}


@pytest.fixture(scope="module")
def half_idle(django_db_setup, django_db_blocker):
    return gathered(django_db_blocker, idle_fleet)[0]["train-h200"]


SCENARIO_PARTITIONS = ["train-h200", "a100-legacy", "train-h100", "inference", "research"]
TODAY = END.date()


def fired(rule, p):
    return rule(p, rules.THRESHOLDS) is not None


# --- Each rule on the scenarios that should and should not trigger it ---------------------------------------


@pytest.mark.parametrize("partition", SCENARIO_PARTITIONS)
def test_capacity_bound_only_where_gpus_are_busy_and_jobs_wait(db, scenarios, partition):
    assert fired(rules.capacity_bound, scenarios[partition]) == (partition == "train-h200")


def test_capacity_bound_not_when_jobs_wait_while_gpus_idle(db, half_idle):
    assert not fired(rules.capacity_bound, half_idle)


def test_capacity_bound_suggests_nodes_of_the_partitions_model_at_its_price(db, scenarios):
    p = scenarios["train-h200"]
    finding = rules.capacity_bound(p)
    assert finding.key == "capacity_bound:partition=train-h200"
    assert finding.node_model_id == p.node_model_id and finding.node_price == Decimal("450000.00")
    # Capacity for the busy GPUs plus the GPUs waiting on average at an 80 % target, less the GPUs in service,
    # in nodes of 8 GPUs.
    expected = -(-((p.gpus * p.util_mean / 100 + p.gpus_waiting) / 0.8 - p.gpus) // 8)
    assert finding.node_count == expected >= 1
    measured = finding.evidence["measured"]
    assert (measured["gpus"], measured["gpus_waiting"]) == (p.gpus, round(p.gpus_waiting, 2))
    assert p.util_mean > 85 and p.wait_p50_hours > 1  # the saturated scenario, seen through the rollups
    figures = {f["label"]: f["value"] for f in finding.figures}
    assert figures["Suggested nodes"] == finding.node_count
    assert finding.chart["type"] == "timeseries" and len(finding.chart["data"]["x"]) == 7 * 24


@pytest.mark.parametrize("partition", SCENARIO_PARTITIONS)
def test_scheduling_bound_not_where_queues_are_short_or_gpus_busy(db, scenarios, partition):
    assert not fired(rules.scheduling_bound, scenarios[partition])


def test_scheduling_bound_when_jobs_wait_hours_while_half_the_gpus_run_nothing(db, half_idle):
    finding = rules.scheduling_bound(half_idle)
    assert finding is not None and finding.severity == "high"
    assert half_idle.allocated_share < 0.6 and half_idle.wait_p50_hours > 1
    assert "queue policy" in finding.action


@pytest.mark.parametrize("partition", SCENARIO_PARTITIONS)
def test_storage_bound_only_where_allocated_gpus_stall_between_bursts(db, scenarios, partition):
    assert fired(rules.storage_bound, scenarios[partition]) == (partition == "a100-legacy")


def test_storage_bound_evidence(db, scenarios):
    p = scenarios["a100-legacy"]
    finding = rules.storage_bound(p)
    assert p.allocated_share > 0.8 and p.busy_util < 50 and p.stall_share > 0.4
    assert finding.chart["data"]["series"][1]["name"] == "max utilization (%)"
    assert "storage read throughput" in finding.action


@pytest.mark.parametrize("partition", SCENARIO_PARTITIONS)
def test_network_bound_only_where_per_gpu_utilization_falls_with_node_count(db, scenarios, partition):
    assert fired(rules.network_bound, scenarios[partition]) == (partition == "train-h100")


def util_by_width(p):
    return {w.label: w.util for w in p.widths}


def test_the_simulators_network_bound_scenario_slows_down_with_width_and_no_other_does(db, scenarios):
    network = scenarios["train-h100"]
    widths = util_by_width(network)
    assert list(widths) == ["1 node", "2 nodes", "3–4 nodes"]
    assert widths["1 node"] > widths["2 nodes"] > widths["3–4 nodes"]
    assert 1 - widths["3–4 nodes"] / widths["1 node"] > 0.25
    assert all(w.jobs >= 5 for w in network.widths)
    for name in ("train-h200", "a100-legacy"):  # multi-node jobs too, at the same per-GPU utilization
        widths = util_by_width(scenarios[name])
        assert list(widths) == ["1 node", "2 nodes"]
        assert abs(1 - widths["2 nodes"] / widths["1 node"]) < 0.05
    assert list(util_by_width(scenarios["research"])) == ["1 node"]


def test_network_bound_evidence_names_the_oversubscribed_switches(db, scenarios):
    p = scenarios["train-h100"]
    assert (p.oversubscription, p.fabric_gbps_per_gpu, p.fabrics) == (2.0, 400.0, ["zrh-ib"])
    (switch,) = p.oversubscribed_switches
    finding = rules.network_bound(p)
    assert finding.severity == "high" and p.multi_node_share > 0.5
    assert f"{switch} (2.00:1)" in finding.action and "non-blocking" in finding.action and "zrh-ib" in finding.summary
    figures = {f["label"]: f["value"] for f in finding.figures}
    for w in p.widths:
        assert figures[f"Jobs on {w.label}"] == w.jobs
        assert figures[f"Per-GPU utilization on {w.label}"] == round(w.util, 2)
    assert figures["Oversubscribed switches"] == f"{switch} (2.00:1)"
    chart = finding.chart
    assert chart["type"] == "hbar" and chart["data"]["labels"] == ["1 node", "2 nodes", "3–4 nodes"]
    assert chart["data"]["series"][0]["values"] == [round(w.util, 1) for w in p.widths]


def test_network_bound_page_shows_the_groups_and_the_chart(viewer_client, scenarios):
    # the site was rolled back
    rec_store.write([replace(rules.network_bound(scenarios["train-h100"]), site_id=None)], END)
    text = viewer_client.get(Recommendation.objects.get().get_absolute_url()).content.decode()
    assert "Per-GPU utilization on 3–4 nodes" in text and "Oversubscribed switches" in text
    assert 'data-chart="hbar"' in text and "Per-GPU utilization by node count, partition train-h100" in text


def with_fabric(p, **fabric):
    """``p`` with other fabric figures, for the partition and for each multi-node group (the rule reads the
    compared group's own)."""
    return replace(p, **fabric, widths=[replace(w, **fabric) if w.node_ids else w for w in p.widths])


def test_network_bound_needs_a_weak_fabric(db, scenarios):
    p = with_fabric(scenarios["train-h100"], oversubscription=1.0, oversubscribed_switches={})
    assert rules.network_bound(p) is None  # falling, but non-blocking and 400 Gb/s per GPU: not the hardware
    thin = rules.network_bound(with_fabric(p, fabric_gbps_per_gpu=200.0))
    assert thin is not None and "400 Gb/s rail on zrh-ib (now 200 Gb/s per GPU)" in thin.action
    assert rules.network_bound(with_fabric(p, oversubscription=None, fabric_gbps_per_gpu=None, fabrics=[])) is None


def test_network_bound_not_when_utilization_is_flat_with_width(db, scenarios):
    # train-h200's 2-node jobs run as fast per GPU as its single-node ones: an oversubscribed fabric is no cause.
    flat = replace(scenarios["train-h200"], oversubscription=2.0, oversubscribed_switches={"leaf": 2.0},
                   fabrics=["ib"], fabric_gbps_per_gpu=400.0)
    assert rules.network_bound(flat) is None


def test_network_bound_not_with_too_few_multi_node_jobs(db, scenarios):
    p = scenarios["train-h100"]
    few = [p.widths[0]] + [replace(w, jobs=4) for w in p.widths[1:]]
    assert rules.network_bound(replace(p, widths=few)) is None
    thin = [p.widths[0]] + [replace(w, gpu_hours=49.0, util_sum=w.util * 49.0) for w in p.widths[1:]]
    assert rules.network_bound(replace(p, widths=thin)) is None
    # Without single-node jobs to compare with, there is no fall to measure.
    assert rules.network_bound(replace(p, widths=p.widths[1:])) is None


def test_network_bound_severity_follows_the_multi_node_share(db, scenarios):
    p = scenarios["train-h100"]
    assert rules.network_bound(replace(p, multi_node_share=0.3)).severity == "medium"


@pytest.mark.parametrize("partition", SCENARIO_PARTITIONS)
def test_memory_bound_only_where_frame_buffers_are_full_and_jobs_run_out_of_memory(db, scenarios, partition):
    assert fired(rules.memory_bound, scenarios[partition]) == (partition == "train-h200")


def test_memory_bound_needs_out_of_memory_failures(db, scenarios):
    p = scenarios["train-h200"]
    assert p.memory_share >= 0.85 and (p.oom_jobs, p.ended_jobs) == (2, 55)
    assert rules.memory_bound(p).severity == "medium"  # 2 of 55 ended jobs (3.6 %): below 5 %
    assert rules.memory_bound(replace(p, oom_jobs=3)).severity == "high"  # 5.5 %
    assert rules.memory_bound(replace(p, oom_jobs=0, failed_jobs=0)) is None
    # Full, with failures but none out of memory (a server's preallocation, a code error): not memory-bound.
    assert rules.memory_bound(replace(p, oom_jobs=0, failed_jobs=10)) is None
    # Failures elsewhere (train-h100 has its share) do not make a partition with room in memory memory-bound.
    network = scenarios["train-h100"]
    assert network.memory_share < 0.85 and rules.memory_bound(replace(network, oom_jobs=3)) is None


def test_ageing_nodes_out_of_warranty_or_with_repeated_faults(db, health):
    assert health["lys-a100-001"].warranty_end < TODAY and health["lys-a100-002"].warranty_end < TODAY
    assert health["zrh-h100-003"].xid_days >= 3  # its degraded GPU reports XID errors every day
    assert health["lys-res-001"].fault_days == 2
    assert health["lys-res-002"].fault_days == 1  # one episode is not repeated
    expired_or_faulty = {name for name, node in health.items() if any(rules.is_ageing(node, TODAY))}
    assert expired_or_faulty == {"lys-a100-001", "lys-a100-002", "zrh-h100-003", "lys-res-001"}
    findings = {f.title: f for f in rules.ageing(health.values(), TODAY)}
    assert set(findings) == {"3 ageing nodes at Lyon", "1 ageing node at Zurich"}
    lyon = findings["3 ageing nodes at Lyon"]
    assert lyon.node_count == 3 and lyon.key.startswith("ageing:site=")
    rows = next(f["rows"] for f in lyon.figures if "rows" in f)
    assert [row["hostname"] for row in rows] == ["lys-a100-001", "lys-a100-002", "lys-res-001"]


def test_ageing_nothing_for_healthy_nodes_in_warranty():
    node = rules.NodeHealth(1, "gpu-1", 1, "A", 1, "M", None, warranty_end=date(2030, 1, 1), fault_days=1, xid_days=2)
    assert rules.ageing([node], TODAY) == []
    assert rules.ageing([replace(node, warranty_end=None)], TODAY) == []


def test_analyse_finds_each_scenarios_bottleneck_and_nothing_else(db, gathered_scenarios):
    partitions, nodes = gathered_scenarios
    keys = {f.key for f in rules.analyse(list(partitions.values()), nodes, TODAY)}
    assert {k for k in keys if not k.startswith("ageing")} == {
        "capacity_bound:partition=train-h200", "memory_bound:partition=train-h200",
        "storage_bound:partition=a100-legacy", "network_bound:partition=train-h100"}
    assert len([k for k in keys if k.startswith("ageing")]) == 2


# --- The query layer: constant queries ----------------------------------------------------------------------


def test_gather_reads_a_constant_number_of_queries(db):
    idle_fleet()
    first = Node.objects.order_by("hostname").first()
    GPU.objects.filter(node=first, slot=0).update(state=S.DEGRADED)
    degraded_on(first, date(2026, 5, 1), date(2026, 6, 1))
    ContentType.objects.clear_cache()
    with CaptureQueriesContext(connection) as small:
        gather.gather(END)
    site = Node.objects.first().site
    more = add_partition(site, "zrh-h100", "train-h100", 8, make_node_model(), make_gpu_model())
    GPU.objects.filter(node__in=more[:2]).update(state=S.DEGRADED)
    degraded_on(more[0], date(2026, 5, 1), date(2026, 6, 1))
    backfill_more = simulator.hour_records([g for g in simulator.fleet() if g.node.partition == "train-h100"],
                                           END - WEEK, END)
    store(TelemetrySource.objects.get(name="dcgm"), Collected(hours=backfill_more), END)
    ContentType.objects.clear_cache()
    with CaptureQueriesContext(connection) as large:
        partitions, _ = gather.gather(END)
    assert len(partitions) == 2
    # 27: the GPUs out of service per partition; 28: each partition's GPU model and peers, for rebalancing (issue 34)
    assert len(large) == len(small) <= 28


# --- Writing: idempotent, resolving, snoozing ---------------------------------------------------------------


def finding(kind="capacity_bound", scope="partition=p1", **kw):
    values = {"kind": kind, "key": f"{kind}:{scope}", "severity": "medium", "title": f"{kind} {scope}",
              "summary": "s", "action": "a", "figures": [rules.figure("x", 1.5, "%")],
              "chart": {"type": "hbar", "title": "t", "data": {"labels": ["a"], "series": []}}, "partition": "p1"}
    return rules.Finding(**{**values, **kw})


def test_rerunning_updates_the_open_recommendation_instead_of_adding_one(db):
    now = END
    assert rec_store.write([finding(), finding("storage_bound")], now) == {
        "created": 2, "updated": 0, "resolved": 0, "skipped": 0}
    first = Recommendation.objects.get(kind="capacity_bound")
    later = now + timedelta(days=1)
    counts = rec_store.write([finding(severity="high", summary="worse"), finding("storage_bound")], later)
    assert counts == {"created": 0, "updated": 2, "resolved": 0, "skipped": 0}
    assert Recommendation.objects.count() == 2
    first.refresh_from_db()
    assert (first.severity, first.summary, first.detected_at) == ("high", "worse", later)


def test_a_recommendation_no_longer_found_is_resolved(db):
    rec_store.write([finding(), finding("storage_bound")], END)
    assert rec_store.write([finding()], END + timedelta(days=1))["resolved"] == 1
    assert Recommendation.objects.get(kind="storage_bound").status == "resolved"
    # Found again later: a new open one.
    assert rec_store.write([finding(), finding("storage_bound")], END + timedelta(days=2))["created"] == 1
    assert Recommendation.objects.filter(kind="storage_bound", status="open").count() == 1


def test_a_dismissed_recommendation_is_not_raised_again_for_a_while(db, manager):
    rec_store.write([finding()], END)
    rec_store.dismiss(Recommendation.objects.get(), manager, "Burst rental already booked")
    decided = Recommendation.objects.get().decided_at
    assert rec_store.write([finding()], decided + timedelta(days=1))["skipped"] == 1
    assert rec_store.write([finding()], decided + timedelta(days=31))["created"] == 1


def test_run_writes_what_gather_finds(db, manager):
    idle_fleet()
    counts = rec_store.run(END)
    assert counts["created"] >= 1
    assert Recommendation.objects.filter(key="scheduling_bound:partition=train-h200", status="open").exists()
    assert rec_store.run(END)["created"] == 0  # idempotent
    assert Recommendation.objects.filter(key="scheduling_bound:partition=train-h200").count() == 1


def test_the_daily_task_runs_the_analysis(db, monkeypatch):
    calls = []
    monkeypatch.setattr(rec_store, "run", lambda: calls.append(1) or {"created": 0, "updated": 0, "resolved": 0,
                                                                   "skipped": 0})
    assert analyse_recommendations() == {"created": 0, "updated": 0, "resolved": 0, "skipped": 0}
    assert calls == [1]


def test_the_task_is_on_the_beat_schedule(settings):
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "planning.tasks.analyse_recommendations" in tasks


# --- Variants of one situation (issue 14): bursty or steadily starved GPUs, healthy partitions that must raise
# nothing, Slurm's short host names against FQDNs in the inventory, hardware tickets people filed -------------


def test_storage_bound_on_bursty_and_on_steadily_starved_gpus(db, scenarios):
    bursty = scenarios["a100-legacy"]
    assert bursty.engine_hours == bursty.busy_hours  # the simulator reports DCGM profiling fields
    assert "bursts of full speed between stalls" in rules.storage_bound(bursty).summary
    # The same allocation, but steady utilization and a graphics engine active a fifth of the time.
    steady = replace(bursty, busy_util=82.0, stall_share=0.05, engine_active=0.2)
    finding = rules.storage_bound(steady)
    assert finding is not None and finding.severity == "high"  # 20 % < 0.7 × 35 %
    assert "graphics engines were active only 20 % of the time, steadily" in finding.summary
    figures = {f["label"]: f["value"] for f in finding.figures}
    assert figures["Graphics engine active (DCGM profiling)"] == 20.0
    assert rules.storage_bound(replace(steady, engine_active=0.3)).severity == "medium"


def test_storage_bound_not_on_healthy_or_thinly_measured_partitions(db, scenarios):
    bursty = scenarios["a100-legacy"]
    healthy = replace(bursty, busy_util=85.0, stall_share=0.1, engine_active=0.9)
    assert rules.storage_bound(healthy) is None
    # Low activity, but the profiling fields cover only a fifth of the GPU-hours: not enough to say.
    thin = replace(healthy, engine_active=0.2, engine_hours=0.2 * bursty.busy_hours)
    assert rules.storage_bound(thin) is None
    # Starved GPUs nobody holds are the scheduler's business, not the storage's.
    assert rules.storage_bound(replace(healthy, engine_active=0.2, allocated_gpu_hours=0.5 * bursty.gpu_hours)) is None
    for name in SCENARIO_PARTITIONS:  # and the simulator's healthy partitions stay quiet with both signs read
        if name != "a100-legacy":
            assert rules.storage_bound(scenarios[name]) is None, name


def test_allocated_share_never_exceeds_one(db, scenarios):
    p = scenarios["train-h200"]
    # Three times the observed GPU-hours allocated (GPUs that did not report): 100 %, not 300 %.
    assert replace(p, allocated_gpu_hours=3 * p.gpu_hours).allocated_share == 1.0


def fqdn_fleet_with_tickets():
    """The scenario fleet, then: the inventory holds the train-h100 nodes as ZRH-H100-00N.ZRH.EXAMPLE.ORG while
    Slurm's jobs still say zrh-h100-00N; lys-res-002 (one day moved to degraded: not repeated) gets a hardware
    ticket a person filed against one of its GPUs on another day, plus a telemetry ticket and a software ticket
    that must not count (a telemetry ticket's fault is already the move to degraded)."""
    scenario_fleet()
    Node.objects.filter(partition="train-h100").update(
        hostname=Concat(Upper(F("hostname")), Value(".ZRH.EXAMPLE.ORG")))
    gpu = Node.objects.get(hostname="lys-res-002").gpus.first()
    created = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    for days, source, category in ((0, Ticket.Source.TELEMETRY, Ticket.Category.HARDWARE),
                                   (0, Ticket.Source.PERSON, Ticket.Category.SOFTWARE),
                                   (1, Ticket.Source.PERSON, Ticket.Category.HARDWARE)):
        ticket = make_ticket(gpu=gpu, category=category, source=source)
        Ticket.objects.filter(pk=ticket.pk).update(created=created + timedelta(days=days))


@pytest.fixture(scope="module")
def variant(django_db_setup, django_db_blocker):
    return gathered(django_db_blocker, fqdn_fleet_with_tickets)


def test_rules_match_slurm_short_names_to_fqdns_in_any_case(db, gathered_scenarios, variant):
    # The same jobs are measured (without matching, none would be); utilization within a point (the fleet is
    # built again, and the simulator's backfill differs a little from one build to the next).
    before = {w.label: (w.jobs, w.util) for w in gathered_scenarios[0]["train-h100"].widths}
    after = variant[0]["train-h100"]
    assert {w.label: w.jobs for w in after.widths} == {label: jobs for label, (jobs, _) in before.items()}
    for w in after.widths:
        assert w.util == pytest.approx(before[w.label][1], abs=1.0)
    assert rules.network_bound(after) is not None


def test_ageing_counts_hardware_tickets_people_filed(db, gathered_scenarios, variant):
    assert {n.hostname: n for n in gathered_scenarios[1]}["lys-res-002"].fault_days == 1
    health = {n.hostname: n for n in variant[1]}
    assert health["lys-res-002"].fault_days == 2
    assert any(rules.is_ageing(health["lys-res-002"], TODAY))
