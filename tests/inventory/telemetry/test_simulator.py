"""The demo's telemetry simulator: its scenarios show what they claim, its pages and job records read like
the real thing (through the portal's own parsers), and ``manage.py simulate_telemetry`` serves them."""

import json
import statistics
import threading
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
import requests
from django.core.management import call_command
from prometheus_client.parser import text_string_to_metric_families

from inventory.management.commands.simulate_telemetry import Command
from inventory.models import GPUHourly, SlurmJob, TelemetrySource
from inventory.telemetry import dcgm, exporter, simulator, slurm
from inventory.telemetry.pull import pull
from inventory.telemetry.records import Quality
from inventory.telemetry.simulator import SimGPU, SimNode
from tests.factories import make_gpu, make_node
from tests.helpers.pgserver import free_port
from tests.helpers.readiness import wait_until_answering

END = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)  # a Monday morning: the week before it is the sample
WEEK = timedelta(days=7)


def nodes(prefix, partition, team, count, states=None):
    states = states or {}
    return [SimNode(f"{prefix}-{i:03d}", partition, team, "zurich-dc1", states.get(i, "in_service"))
            for i in range(1, count + 1)]


def gpus_of(node_list, model="H100 SXM 80GB", degraded=(), silent=()):
    return [SimGPU(f"GPU-{node.hostname}-{slot}", slot, node, model, 80, 700,
                   "degraded" if (node.hostname, slot) in degraded
                   else "in_repair" if (node.hostname, slot) in silent else "in_service")
            for node in node_list for slot in range(8)]


@pytest.fixture(scope="module")
def demo():
    """A fleet shaped like seed_demo's, with its partitions, idle nodes and incidents."""
    node_list = (
        nodes("zrh-h100", "train-h100", "llm-pretrain", 16, {7: "degraded"})
        + nodes("zrh-h200", "train-h200", "llm-pretrain", 8, {3: "in_repair", 7: "burn_in", 8: "burn_in"})
        + nodes("lys-a100", "a100-legacy", "vision", 8)
        + nodes("lys-h100", "inference", "platform", 4)
    )
    gpus = gpus_of(node_list, degraded={("zrh-h100-012", 6)}, silent={("zrh-h100-007", 3)})
    records = simulator.hour_records(gpus, END - WEEK, END)
    return node_list, gpus, records


def by_partition(demo):
    node_list, gpus, records = demo
    node_of = {gpu.uuid: gpu.node for gpu in gpus}
    groups = defaultdict(list)
    for record in records:
        node = node_of[record.series.uuid]
        if node.hostname in simulator.IDLE_NODES:
            groups["idle"].append(record)
        elif node.state == "in_service":
            groups[node.partition].append(record)
    return groups


def mean(records, field="util_mean"):
    return statistics.fmean(getattr(record, field) for record in records)


def test_scenarios_show_what_they_claim(demo):
    groups = by_partition(demo)
    assert mean(groups["train-h200"]) > 85  # saturated
    assert 20 < mean(groups["a100-legacy"]) < 45  # storage-starved: allocated, waiting on reads…
    assert mean(groups["a100-legacy"], "util_max") > 60  # …in bursts of full speed
    assert 40 < mean(groups["train-h100"]) < 65  # network-bound
    assert mean(groups["idle"]) < 5
    assert mean(groups["idle"], "power_mean_w") < 100  # idle GPUs draw little


def test_day_and_night(demo):
    groups = by_partition(demo)

    def at(local_hours):
        return [r for r in groups["inference"] if (r.hour.hour + 1) % 24 in local_hours and r.hour.weekday() < 5]

    day, night = mean(at({12, 13, 14, 15, 16})), mean(at({1, 2, 3, 4, 5}))
    assert day > 60 and night < 25
    training = groups["train-h100"]
    assert mean([r for r in training if 8 <= r.hour.hour < 18]) > mean([r for r in training if r.hour.hour < 5])


def test_incidents(demo):
    node_list, gpus, records = demo
    reporting = {record.series.uuid for record in records}
    assert "GPU-zrh-h200-003-0" not in reporting  # node in repair: no exporter
    assert "GPU-zrh-h100-007-3" not in reporting  # GPU in repair
    drained = [r for r in records if r.series.hostname == "zrh-h100-007"]
    assert drained and mean(drained) < 5
    burn_in = [r for r in records if r.series.hostname == "zrh-h200-007"]
    assert mean(burn_in) > 95
    xid = Counter(r.series.uuid for r in records if r.xid_max)
    assert set(xid) == {"GPU-zrh-h100-012-6"} and 10 < xid["GPU-zrh-h100-012-6"] < 80  # now and then
    assert len(reporting) == len(gpus) - 8 - 1
    assert {r.samples for r in records} == {60} and len(records) == len(reporting) * 168


def test_values_are_a_function_of_gpu_and_time(demo):
    _, gpus, _ = demo
    moment = END - timedelta(hours=5, minutes=7)
    assert [simulator.gpu_sample(g, moment) for g in gpus] == [simulator.gpu_sample(g, moment) for g in gpus]
    sample = simulator.gpu_sample(gpus[0], moment)
    assert set(sample) == set(dcgm.SERIES_HELP)  # every series the page serves, health ones included
    assert sample[dcgm.FB_USED] + sample[dcgm.FB_FREE] <= 80 * 1024
    assert 0 <= sample[dcgm.GPU_UTIL] <= 100 and 0 <= sample[dcgm.PIPE_TENSOR_ACTIVE] <= 1


def test_metrics_page_reads_like_dcgm_exporter(demo):
    _, gpus, _ = demo
    moment = END - timedelta(minutes=3)
    text = simulator.metrics_text(gpus[:16], moment)

    families = {family.name: family for family in text_string_to_metric_families(text)}
    assert set(families) == set(dcgm.SERIES_HELP)
    assert all(family.type == dcgm.SERIES_HELP[name][0] and family.documentation for name, family in families.items())
    assert families[dcgm.TOTAL_ENERGY].type == "counter"
    sample = families[dcgm.GPU_UTIL].samples[9]
    assert set(sample.labels) == {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}
    assert [sample.labels[name] for name in ("gpu", "device", "Hostname")] == ["1", "nvidia1", "zrh-h100-002"]
    assert sample.labels["modelName"] == "NVIDIA H100 80GB HBM3"
    # the portal's own exporter parser reads back what the model says
    warnings = []
    records = exporter.sample_records(exporter.read_samples(text, "sim", warnings), moment, warnings)
    assert not warnings and len(records) == 16
    expected = simulator.gpu_sample(gpus[9], moment)
    (record,) = [r for r in records if r.series.uuid == gpus[9].uuid]
    assert (record.util, record.mem_used_gb, record.power_w, record.energy_mj) == (
        expected[dcgm.GPU_UTIL], expected[dcgm.FB_USED] / 1024, expected[dcgm.POWER_USAGE], expected[dcgm.TOTAL_ENERGY])


def test_energy_counter_follows_power_and_restarts_when_the_node_reboots(demo):
    _, gpus, records = demo
    gpu = next(g for g in gpus if g.node.hostname == "zrh-h200-007")  # burn-in: ~650 W around the clock
    reboot = simulator.driver_loaded(gpu.node, END.timestamp())
    assert END.timestamp() - simulator.REBOOT_DAYS * 86400 < reboot <= END.timestamp() and reboot % 3600 == 0
    assert simulator.energy_mj(gpu, reboot) == 0  # the driver just loaded
    assert simulator.energy_mj(gpu, reboot - 1) > 1e11  # a week of ~650 W before: the counter went back to 0
    # between two hours the counter grows by what the backfilled hour says, and it never goes back in between
    by_hour = {r.hour.timestamp(): r.energy_wh for r in records if r.series.uuid == gpu.uuid}
    hour = reboot + 5 * 3600 if reboot + 6 * 3600 <= END.timestamp() else reboot - 5 * 3600
    readings = [simulator.energy_mj(gpu, hour + second) for second in range(0, 3601, 60)]
    assert readings == sorted(readings)
    assert readings[-1] - readings[0] == pytest.approx(by_hour[hour] * 3.6e6)
    assert 600 < by_hour[hour] < 700
    assert simulator.gpu_sample(gpu, hour + 60)[dcgm.TOTAL_ENERGY] == round(readings[1])


def test_jobs_read_like_sacct_json(demo):
    node_list, _, _ = demo
    document = simulator.jobs(node_list, END - WEEK, END)

    assert document["meta"]["plugin"]["data_parser"] == "data_parser/v0.0.40"
    job = document["jobs"][0]
    assert isinstance(job["job_id"], int) and isinstance(job["state"]["current"], list)
    assert set(job["time"]["submission"]) == {"set", "infinite", "number"}
    ids = [job["job_id"] for job in document["jobs"]]
    runs = {(job["job_id"], job["time"]["submission"]["number"]) for job in document["jobs"]}
    assert len(ids) == len(runs) and all(0 < i < 2**32 for i in ids)  # one record per run
    gres = [t for t in job["tres"]["allocated"] if t["type"] == "gres"]
    assert gres == [{"type": "gres", "name": "gpu", "id": 1001, "count": 8 * job["allocation_nodes"]}]

    warnings = []
    records = slurm.parse_jobs(json.dumps(document), warnings)
    assert not warnings and len(records) == len(ids)
    waits = defaultdict(list)
    for record in records:
        if record.start_time:
            waits[record.partition].append((record.start_time - record.submit_time).total_seconds() / 3600)
    assert statistics.median(waits["train-h200"]) > 2  # saturated: hours in the queue
    assert all(statistics.median(waits[p]) < 1 for p in ("train-h100", "a100-legacy", "inference"))
    multi = [r.node_count > 1 for r in records if r.partition == "train-h100"]
    assert sum(multi) / len(multi) > 0.5  # network-bound: mostly multi-node jobs
    states = Counter(r.state for r in records)
    assert states["COMPLETED"] > len(records) / 2 and states["RUNNING"] and states["PENDING"] and states["FAILED"]
    assert not [r for r in records if "zrh-h200-003" in r.nodes or "zrh-h100-015" in r.nodes]  # repair, idle


def test_a_requeued_job_runs_again_under_its_id(demo):
    """As ``sacct --duplicates`` lists it: the requeued run (restart count 0) ends, the next run of the same id
    was submitted at that moment (Slurm resets the submit time), starts minutes later on the same nodes, with
    restart count 1."""
    node_list, _, _ = demo
    records = slurm.parse_jobs(simulator.jobs(node_list, END - WEEK, END))
    by_id = defaultdict(list)
    for record in records:
        by_id[record.job_id].append(record)
    requeued = [sorted(runs, key=lambda r: r.submit_time) for runs in by_id.values() if len(runs) > 1]
    assert len(requeued) >= 3
    for first, second in requeued:
        assert (first.state, first.restarts, second.restarts) == ("REQUEUED", 0, 1)
        assert second.submit_time == first.end_time
        assert timedelta(minutes=2) <= second.start_time - first.end_time <= timedelta(minutes=12)
        assert second.nodes == first.nodes and second.gpus == first.gpus


def test_jobs_and_utilization_agree(demo):
    node_list, gpus, _ = demo
    first_gpu = {gpu.node.hostname: gpu for gpu in gpus if gpu.slot == 0}
    document = simulator.jobs(node_list, END - WEEK, END)
    for record in slurm.parse_jobs(document)[:200]:
        if record.end_time and record.partition != "inference":
            middle = record.start_time + (record.end_time - record.start_time) / 2
            for hostname in slurm.expand_hostlist(record.nodes):
                busy = [simulator.gpu_sample(first_gpu[hostname], middle + timedelta(seconds=s))[dcgm.GPU_UTIL]
                        for s in range(0, 600, 10)]
                assert statistics.fmean(busy) > 20, (record.job_id, hostname)


def test_hostlist():
    assert simulator.hostlist(["a-001", "a-002", "a-003", "a-005", "b-01", "login"]) == "a-[001-003,005],b-01,login"
    assert slurm.expand_hostlist(simulator.hostlist(["x-009", "x-010", "x-011"])) == ["x-009", "x-010", "x-011"]


@pytest.mark.django_db(transaction=True)  # the server's threads read the fleet through their own connections
def test_command_serves_metrics_and_jobs():
    node = make_node(hostname="dgx-sim-001", partition="train-h200", owner_team="llm-pretrain", state="in_service")
    gpus = [make_gpu(node=node, slot=slot) for slot in range(2)]
    port, out = free_port(), StringIO()
    command = Command(stdout=out)
    thread = threading.Thread(target=call_command, args=(command,), kwargs={"port": port}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        response = wait_until_answering(f"{base}/metrics")
        assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain")
        uuids = {s.labels["UUID"] for f in text_string_to_metric_families(response.text) for s in f.samples}
        assert uuids == {gpu.uuid for gpu in gpus}

        start = int((datetime.now(UTC) - timedelta(days=2)).timestamp())
        jobs = requests.get(f"{base}/slurmdb/v0.0.40/jobs", params={"start_time": start}, timeout=30).json()
        assert jobs["jobs"] and all(job["partition"] == "train-h200" for job in jobs["jobs"])
        assert requests.get(f"{base}/nothing", timeout=30).status_code == 404

        # the demo's sources pull it through the ordinary collectors
        metrics = TelemetrySource.objects.create(name="sim", kind="exporter", url=f"{base}/metrics")
        accounting = TelemetrySource.objects.create(name="sim jobs", kind="slurm", url=f"{base}/slurmdb/v0.0.40/jobs")
        assert pull(metrics)["samples"] == 2 and GPUHourly.objects.filter(gpu__in=gpus).count() >= 2
        assert pull(accounting)["jobs"] == SlurmJob.objects.filter(source=accounting).count() > 0
    finally:
        command.server.shutdown()
        thread.join(5)
    assert f"{base}/metrics" in out.getvalue() and f"{base}/slurmdb/v0.0.40/jobs" in out.getvalue()
    assert not thread.is_alive()


def test_gpus_without_a_memory_sensor_and_row_remaps(demo):
    """Issue 34: a GDDR board (an L40S) reports DCGM's "not supported" sentinel as its memory temperature, on the
    live page and in the backfilled hours (None, never a figure); the demo's GPUs whose incidents say a row remap is
    pending report it, and one GPU in service a failed remap."""
    _, gpus, records = demo
    node = SimNode("zrh-l40s-001", "inference", "platform", "zurich-dc1")
    l40s = [SimGPU(f"GPU-l40s-{slot}", slot, node, "L40S", 48, 350) for slot in range(4)]
    moment = END - timedelta(minutes=3)
    assert simulator.gpu_sample(l40s[0], moment)[dcgm.MEMORY_TEMP] == 9223372036854775794  # DCGM_INT64_NOT_SUPPORTED
    text = simulator.metrics_text(l40s, moment)
    assert 'DCGM_FI_DEV_MEMORY_TEMP{gpu="0",UUID="GPU-l40s-0"' in text and "} 9223372036854775794\n" in text
    warnings, quality = [], Quality()
    read = exporter.sample_records(exporter.read_samples(text, "sim", warnings), moment, warnings, quality)
    assert {record.memory_temp_c for record in read} == {None} and all(record.gpu_temp_c > 25 for record in read)
    assert not warnings and quality.examples["dcgm_blank"] == [
        "GPU-memory temperature: not supported on 4 GPUs (DCGM sentinel)"]
    hours = simulator.hour_records(l40s, END - timedelta(hours=2), END)
    assert {hour.memory_temp_max_c for hour in hours} == {None} and all(hour.gpu_temp_max_c for hour in hours)

    flags = defaultdict(set)
    for record in records:
        flags[(record.row_remap_failure_last, record.row_remap_pending_last)].add(record.series.uuid)
    assert flags[(1, 0)] == {"GPU-zrh-h100-014-5"}  # failed: replace it
    assert flags[(0, 1)] == {"GPU-zrh-h100-012-6", "GPU-lys-h100-004-1"}  # pending: reset at the next drain
    assert (1, 1) not in flags
    failed = next(g for g in gpus if g.uuid == "GPU-zrh-h100-014-5")
    sample = simulator.gpu_sample(failed, moment)
    assert (sample[dcgm.ROW_REMAP_FAILURE], sample[dcgm.ROW_REMAP_PENDING], sample[dcgm.MEMORY_TEMP] < 100) == (
        1, 0, True)
