"""Recommendation figures on small hand-made data sets, worked out by hand: per-GPU utilization by node count
(network-bound) and frame-buffer use while jobs ran (memory-bound)."""

from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import TelemetrySource
from inventory.telemetry import allocation, slurm
from inventory.telemetry.models import GPUHourly, SlurmJob
from planning.recommendations import gather, rules
from tests.factories import make_attachment, make_fabric, make_gpu_model, make_node_model, make_site, make_switch
from tests.planning.test_recommendations import END, add_partition, fired


def test_node_count_groups():
    assert [rules.Width(low, high).label for low, high in rules.WIDTHS] == [
        "1 node", "2 nodes", "3–4 nodes", "5–8 nodes", "9+ nodes"]
    assert [rules.width_of(n) for n in (1, 2, 3, 4, 5, 8, 9, 512)] == [0, 1, 2, 2, 3, 3, 4, 4]


def hand_fleet():
    """Partition ``hand``: four 2-GPU nodes under one 1.5:1 leaf switch, GPU hours and Slurm jobs written
    directly, so that every figure can be worked out by hand (see the test)."""
    site = make_site(name="Hand")
    model = make_node_model(name="2-GPU node", gpu_slots=2)
    nodes = add_partition(site, "hnd", "hand", 4, model, make_gpu_model(name="hand GPU"))
    fabric = make_fabric(name="hand-ib")
    switch = make_switch(fabric=fabric, site=site, name="hand-leaf-01", oversubscription_ratio=Decimal("1.50"))
    for node in nodes:
        make_attachment(node=node, fabric=fabric, switch=switch, ports=2, speed_gbps=400)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://sim:9400/jobs")
    return nodes, source


def hours_of(nodes, day, utils):
    """GPU hours: ``utils`` maps an hour of ``day`` to the utilization of each GPU of each node."""
    gpus = {node.pk: list(node.gpus.order_by("slot")) for node in nodes}
    GPUHourly.objects.bulk_create(
        GPUHourly(gpu=gpu, hour=day + timedelta(hours=hour), util_mean=util, util_max=util)
        for hour, values in utils.items() for node in nodes for gpu, util in zip(gpus[node.pk], values, strict=True))


def job(source, job_id, nodes, start, end, gpus=None, node_count=None):
    hosts = nodes.split(",") if "[" not in nodes else slurm.expand_hostlist(nodes)
    return SlurmJob.objects.create(
        source=source, job_id=job_id, partition="hand", state="COMPLETED" if end else "RUNNING",
        submit_time=start - timedelta(minutes=5), start_time=start, end_time=end, nodes=nodes,
        node_count=node_count or len(hosts), gpus=2 * len(hosts) if gpus is None else gpus)


DAY = END - timedelta(days=2) - timedelta(hours=6)  # midnight, two days before END


def test_per_gpu_utilization_by_node_count_on_a_hand_made_data_set(db):
    nodes, source = hand_fleet()
    n1, n2, n3, n4 = nodes
    # Single-node job on hnd-001 from 10:30 to 13:10: its full hours are 11:00 and 12:00 (2 × 2 GPU-hours);
    # 10:00 and 13:00 are partly someone else's and do not count.
    hours_of([n1], DAY, {10: (5, 5), 11: (80, 90), 12: (70, 80), 13: (5, 5)})
    job(source, "1", "hnd-001", DAY + timedelta(hours=10, minutes=30), DAY + timedelta(hours=13, minutes=10))
    # Two-node job on hnd-[003-004] from 10:00 to 12:00 sharp: hours 10:00 and 11:00 (2 nodes × 2 h × 2 GPUs).
    hours_of([n3, n4], DAY, {10: (50, 50), 11: (50, 40)})
    job(source, "2", "hnd-[003-004]", DAY + timedelta(hours=10), DAY + timedelta(hours=12))
    # Not measured: a 1-GPU job on a 2-GPU node (shared), a node missing from the inventory, a job in no full
    # hour, and a job of another partition.
    hours_of([n2], DAY, {10: (99, 0)})
    job(source, "3", "hnd-002", DAY + timedelta(hours=10), DAY + timedelta(hours=11), gpus=1)
    job(source, "4", "hnd-001,gone-001", DAY + timedelta(hours=11), DAY + timedelta(hours=13))
    job(source, "5", "hnd-001", DAY + timedelta(hours=13, minutes=10), DAY + timedelta(hours=13, minutes=50))
    SlurmJob.objects.create(source=source, job_id="6", partition="other", submit_time=DAY, start_time=DAY,
                            end_time=DAY + timedelta(hours=14), nodes="hnd-001", node_count=1, gpus=2)

    (p,) = gather.gather(END)[0]
    assert [(w.label, w.jobs, w.gpu_hours, w.util) for w in p.widths] == [
        ("1 node", 1, 4.0, (80 + 90 + 70 + 80) / 4),  # 80.0
        ("2 nodes", 1, 8.0, (50 + 50 + 50 + 40 + 50 + 50 + 50 + 40) / 8),  # 47.5
    ]
    assert (p.oversubscription, p.oversubscribed_switches, p.fabric_gbps_per_gpu) == (1.5, {"hand-leaf-01": 1.5}, 400.0)
    assert rules.network_bound(p) is None  # one job per group is too few
    loose = replace(rules.THRESHOLDS, network_min_jobs=1, network_min_gpu_hours=4.0)
    finding = rules.network_bound(p, loose)
    figures = {f["label"]: f["value"] for f in finding.figures}
    assert figures["Per-GPU utilization lost on 2 nodes"] == round(100 * (1 - 47.5 / 80), 1)  # 40.6 %
    assert (figures["GPU-hours of jobs on 2 nodes"], figures["Jobs on 1 node"]) == (8.0, 1)
    assert figures["Fabric oversubscription (worst switch)"] == 1.5
    assert "hand-leaf-01 (1.50:1)" in finding.action and "(hand-ib)" in finding.summary
    assert finding.chart["data"]["series"][0]["values"] == [80.0, 47.5]


def test_per_gpu_utilization_by_node_count_reads_the_same_queries_for_more_jobs(db, django_assert_max_num_queries):
    nodes, source = hand_fleet()
    hours_of(nodes, DAY, {hour: (60, 60) for hour in range(24)})
    job(source, "a1", "hnd-001", DAY, DAY + timedelta(hours=2))
    job(source, "a2", "hnd-[001-002]", DAY + timedelta(hours=2), DAY + timedelta(hours=4))
    with CaptureQueriesContext(connection) as few:
        gather.gather(END)
    for k in range(200):
        hosts = ("hnd-[001-004]", "hnd-[001-002]", "hnd-003", "hnd-004")[k % 4]
        job(source, f"b{k}", hosts, DAY + timedelta(minutes=6 * k), DAY + timedelta(minutes=6 * k + 150))
    with django_assert_max_num_queries(len(few)):
        (p,) = gather.gather(END)[0]
    assert sum(w.jobs for w in p.widths) == 202


def memory_jobs(source, nodes, minutes, used_gb, hours=10, oom=True):
    """On each of ``nodes`` (2-GPU nodes, 80 GB GPUs), from DAY 00:00 for ``hours`` hours: a job holding both
    GPUs at the start of every hour for ``minutes`` minutes, filling ``used_gb`` of each GPU's frame buffer
    while it runs, nothing in between; the rollups average memory over the hour, as DCGM's do. Two of the jobs
    ran out of memory when ``oom`` (one alone would be one run's batch size)."""
    jobs = []
    for node in nodes:
        for hour in range(hours):
            begin = DAY + timedelta(hours=hour)
            finish = begin + timedelta(minutes=minutes)
            jobs.append(job(source, f"{node.hostname}-{hour}", node.hostname, begin, finish))
        GPUHourly.objects.bulk_create(
            GPUHourly(gpu=gpu, hour=DAY + timedelta(hours=hour), util_mean=95 * minutes / 60, util_max=95,
                      mem_used_mean_gb=used_gb * minutes / 60)
            for gpu in node.gpus.all() for hour in range(hours))
    if oom:
        SlurmJob.objects.filter(pk__in=[jobs[0].pk, jobs[1].pk]).update(state="OUT_OF_MEMORY")
    allocation.save_allocations(jobs, {(j.job_id, j.submit_time): [j.nodes] for j in jobs})


@pytest.mark.parametrize(("minutes", "used_gb", "fires"), [
    (15, 72, True),  # short jobs with gaps between them, 90 % full while they run: memory-bound
    (60, 72, True),  # the same use by jobs that fill the hours: the same answer
    (15, 48, False),  # healthy, 60 % full, short or long, even with an out-of-memory job: nothing
    (60, 48, False),
])
def test_memory_bound_weighs_each_hour_by_the_time_jobs_ran(db, minutes, used_gb, fires):
    nodes, source = hand_fleet()
    memory_jobs(source, nodes[:2], minutes, used_gb)
    # Memory held outside any job (the other nodes, no job in the window) is not the jobs' and does not count.
    GPUHourly.objects.bulk_create(GPUHourly(gpu=gpu, hour=DAY, util_mean=0, util_max=0, mem_used_mean_gb=80)
                                  for node in nodes[2:] for gpu in node.gpus.all())
    (p,) = gather.gather(END)[0]
    # By hand: per node-hour 2 GPUs × used × minutes/60 / 80 used over 2 × minutes/60 GPU-hours held.
    assert p.memory_share == pytest.approx(used_gb / 80)
    assert p.oom_jobs == 2
    assert fired(rules.memory_bound, p) == fires
    hours = [datetime.fromisoformat(x) for x in p.series["x"]]
    by_hour = dict(zip(hours, p.series["memory"], strict=True))
    assert by_hour[DAY] == by_hour[DAY + timedelta(hours=9)] == round(100 * used_gb / 80, 1)
    if fires:
        figures = {f["label"]: f["value"] for f in rules.memory_bound(p).figures}
        assert figures["Frame buffer used while jobs ran"] == round(100 * used_gb / 80, 1)


def test_memory_used_in_an_hour_counts_at_most_the_gpu_hours_jobs_held(db):
    nodes, source = hand_fleet()
    # A 15-minute job at 01:00 on hnd-001 (0.5 GPU-hours held), but the rollup says 60 GB on average over the
    # hour (memory something else held after the job): 1.5 GPU-hours used, capped at the 0.5 held. 02:00: a
    # full hour at 40 GB (1.0 of 2.0 held). Share: (0.5 + 1.0) / (0.5 + 2.0) = 0.6.
    jobs = [job(source, "short", "hnd-001", DAY + timedelta(hours=1), DAY + timedelta(hours=1, minutes=15)),
            job(source, "full", "hnd-001", DAY + timedelta(hours=2), DAY + timedelta(hours=3))]
    allocation.save_allocations(jobs, {(j.job_id, j.submit_time): [j.nodes] for j in jobs})
    GPUHourly.objects.bulk_create(
        GPUHourly(gpu=gpu, hour=DAY + timedelta(hours=hour), util_mean=50, util_max=90, mem_used_mean_gb=used)
        for gpu in nodes[0].gpus.all() for hour, used in ((1, 60), (2, 40)))
    (p,) = gather.gather(END)[0]
    assert p.memory_share == pytest.approx(0.6)


def test_without_slurm_jobs_frame_buffer_use_is_the_busy_hour_mean(db):
    nodes, _ = hand_fleet()
    GPUHourly.objects.bulk_create(
        GPUHourly(gpu=gpu, hour=DAY + timedelta(hours=hour), util_mean=60, util_max=util, mem_used_mean_gb=used)
        for gpu in nodes[0].gpus.all() for hour, util, used in ((1, 90, 64), (2, 90, 32), (3, 5, 80)))
    (p,) = gather.gather(END)[0]
    assert p.memory_share == pytest.approx((64 + 32) / 2 / 80)  # hour 3 was not busy
