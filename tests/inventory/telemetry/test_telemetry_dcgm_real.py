"""DCGM telemetry correct on real dcgm-exporter pages (issue 14): MIG instances combined into their GPU, never
overwriting each other, and shown as MIG on the GPU's page; the sticky XID gauge counted as events, classified
by NVIDIA's catalogue. Pages from tests/fixtures/dcgm/real/ (SOURCES.md); every expected value is read off the
page by hand."""

from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import GPUHourly, MigInstance, PullReport, TelemetrySource, XidEvent
from inventory.telemetry import dcgm, exporter, xid
from inventory.telemetry.pull import pull
from support import faults
from support.models import Ticket
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server
from tests.helpers.paths import FIXTURES

REAL = FIXTURES / "dcgm" / "real"
NOW = datetime(2026, 12, 2, 10, 20, tzinfo=UTC)
MIB = 1024  # the portal stores GB = MiB / 1024

pytestmark = pytest.mark.django_db


def page(name):
    return (REAL / name).read_text()


def records(text):
    warnings = []
    found = exporter.sample_records(exporter.read_samples(text, "test", warnings), NOW, warnings)
    return {record.series.uuid: record for record in found}


def test_nvidia_docs_a100_in_mig_mode():
    """Whole-GPU series and one 1g.5gb instance (GPU_I_ID 13) of the same A100: the whole GPU's readings
    stand (the instance's GR_ENGINE_ACTIVE 0.995687 does not overwrite the GPU's 0.995630); there is no
    DEV_GPU_UTIL in MIG mode, so utilization is the engine activity: 99.563 %."""
    (record,) = records(page("nvidia_docs_a100_mig_1g5gb_exporter2.4.0rc2.txt")).values()
    assert record.mig == (("13", "1g.5gb"),)
    assert record.util == pytest.approx(99.563)
    assert record.gr_engine_active == pytest.approx(0.995630) and record.tensor_active == pytest.approx(0.929260)
    assert (record.mem_used_gb, record.mem_free_gb) == (4845 / MIB, 35690 / MIB)
    assert (record.power_w, record.energy_mj, record.xid) == (409.692, 319159391, 0)


def test_h100_with_three_1g10gb_instances():
    """Three 1g.10gb instances (ids 7, 8, 9) of one H100, each GR_ENGINE_ACTIVE 0: one GPU at 0 %, three
    instances, none dropped (with pod labels on two of them and not on the third)."""
    (record,) = records(page("issue512_h100_mig_1g10gb_pods.txt")).values()
    assert record.mig == (("7", "1g.10gb"), ("8", "1g.10gb"), ("9", "1g.10gb"))
    assert (record.gr_engine_active, record.util) == (0.0, 0.0)


def test_a30_instances_and_a_whole_rtx_on_exporter_4():
    """Exporter 4.x (lower-case ``hostname``): an RTX 2000 Ada without MIG (FB_FREE 11,275 MiB); A30 gpu 2 with
    instance 3 (FB_FREE 2,207 MiB); A30 gpu 0 with instance 6 (FB_USED 3,744 MiB) and instance 3 (only its
    temperature)."""
    found = records(page("pr736_a30_mig_1g6gb_rtx2000ada_exporter4x.txt"))
    rtx = found["GPU-fc60126e-514d-3522-2828-c5daa8e99d85"]
    assert (rtx.mig, rtx.mem_free_gb, rtx.series.hostname) == ((), 11275 / MIB, "dcgm-exporter-wwwjh")
    a30_2 = found["GPU-63bc0b91-2265-1b94-831c-15c41fe92675"]
    assert (a30_2.mig, a30_2.mem_free_gb) == ((("3", "1g.6gb"),), 2207 / MIB)
    a30_0 = found["GPU-9a63752e-af8d-fe52-7f0d-968bca6d52e3"]
    assert (a30_0.mig, a30_0.mem_used_gb) == ((("3", "1g.6gb"), ("6", "1g.6gb")), 3744 / MIB)


def test_datadog_t4_without_mig():
    (record,) = records(page("datadog_t4_1gpu_driver460.txt")).values()
    assert record.mig == () and record.series.model_name == "Tesla T4"
    assert (record.util, record.mem_used_gb, record.mem_free_gb) == (0.0, 0.0, 15109 / MIB)
    assert (record.power_w, record.energy_mj, record.xid) == (8.969, 128996013, 0)


def test_instances_are_summed_and_weighted_by_their_slices():
    """By hand: a 3g.40gb instance at 0.8 engine activity and 30 GiB used, a 1g.10gb one at 0.5 and 4 GiB,
    board power 300 W repeated on each: memory 34 GB, activity (3 × 0.8 + 1 × 0.5) / 7 = 0.4143, utilization
    41.43 %, power 300 W (not 600)."""
    combined = dcgm.combine_instances({}, {
        ("1", "3g.40gb"): {"mem_used_gb": 30.0, "gr_engine_active": 0.8, "power_w": 300.0},
        ("2", "1g.10gb"): {"mem_used_gb": 4.0, "gr_engine_active": 0.5, "power_w": 300.0},
    }, "NVIDIA A100-SXM4-80GB")
    assert combined["mem_used_gb"] == 34.0 and combined["power_w"] == 300.0
    assert combined["gr_engine_active"] == pytest.approx(2.9 / 7)
    assert combined["util"] == pytest.approx(290 / 7)
    assert dcgm.combine_instances({}, {("1", "2g.12gb"): {"gr_engine_active": 1.0}}, "NVIDIA A30")[
        "gr_engine_active"] == 0.5  # an A30 has 4 slices


# --- Through the pull ---------------------------------------------------------------------------------------


@pytest.fixture
def stub():
    with stub_server() as server:
        yield server


def test_pull_stores_a_mig_gpu_and_the_gpu_page_says_so(stub, viewer_client):
    gpu = make_gpu(node=make_node(hostname="gsrh100-074"), slot=0, uuid="GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77")
    source = TelemetrySource.objects.create(name="dcgm", kind="exporter", url=stub.url("/metrics"), timeout_seconds=2)
    stub.route("/metrics", (200, "text/plain", page("issue512_h100_mig_1g10gb_pods.txt")))
    summary = pull(source, now=NOW)
    assert summary["mig_instances"] == 3
    assert list(MigInstance.objects.filter(gpu=gpu).values_list("instance_id", "profile")) == [
        ("7", "1g.10gb"), ("8", "1g.10gb"), ("9", "1g.10gb")]
    report = PullReport.objects.get(source=source)
    assert report.quality == {"mig_instances": 3}
    assert report.examples["mig_instances"] == [f"{gpu.uuid}: 7 (1g.10gb), 8 (1g.10gb), 9 (1g.10gb)"]
    assert GPUHourly.objects.get(gpu=gpu).util_mean == 0.0
    body = viewer_client.get(gpu.get_absolute_url()).content.decode()
    assert "MIG mode · 3 instances" in body and "1g.10gb" in body


# --- XID: a sticky gauge, counted as events ------------------------------------------------------------------

UUID = "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"  # the T4 of the DataDog page


def with_xid(code):
    """The real T4 page with its XID gauge reading ``code``."""
    return page("datadog_t4_1gpu_driver460.txt").replace(
        'DCGM_FI_PROCESS_NAME="/usr/bin/dcgm-exporter"} 0\n# HELP DCGM_FI_DEV_FB_FREE',
        f'DCGM_FI_PROCESS_NAME="/usr/bin/dcgm-exporter"}} {code}\n# HELP DCGM_FI_DEV_FB_FREE')


def test_events_from_readings():
    at = [NOW + timedelta(minutes=k) for k in range(8)]
    readings = [xid.Reading(t, code) for t, code in zip(at, [0, 79, 79, 79, 0, 79, 48, 48], strict=True)]
    assert xid.events(0, readings) == ([(at[1], 79), (at[5], 79), (at[6], 48)], 48)
    assert xid.events(79, readings[2:4]) == ([], 79)  # the gauge still shows the code already counted
    # An hour in which the gauge went 0 → 13 → 0 (Prometheus: last 0, max 13, changed): one event.
    assert xid.events(0, [xid.Reading(at[0], 0, passed=13, dropped=True)]) == ([(at[0], 13)], 0)
    assert xid.describe(79) == "XID 79 (hardware): GPU has fallen off the bus"
    assert xid.kind_of(13) == xid.APPLICATION and xid.kind_of(999) == xid.UNCLASSIFIED


def test_sticky_xid_is_one_event_one_ticket_and_no_new_one_after_return_to_service(stub, settings):
    settings.SUPPORT_FAULT_WINDOW_HOURS = 24
    gpu = make_gpu(node=make_node(hostname="424773df46e0", state="in_service"), slot=0, uuid=UUID,
                   state="in_service")
    source = TelemetrySource.objects.create(name="t4", kind="exporter", url=stub.url("/metrics"), timeout_seconds=2)
    for minute, code in enumerate([0, 79, 79, 79]):  # four scrapes: the gauge keeps 79
        stub.route("/metrics", (200, "text/plain", with_xid(code)))
        pull(source, now=NOW + timedelta(minutes=minute))
    assert list(XidEvent.objects.values_list("code", "kind", "ts")) == [(79, "hardware", NOW + timedelta(minutes=1))]
    assert GPUHourly.objects.get(gpu=gpu).xid_errors == 1  # one event, not three samples
    [ticket] = faults.open_tickets(faults.detect(NOW + timedelta(minutes=5)), notify=False)
    assert "XID 79 (hardware): GPU has fallen off the bus" in ticket.description
    gpu.refresh_from_db()
    assert gpu.state == "degraded"

    from support import workflow

    workflow.change_status(ticket, Ticket.Status.RESOLVED)
    faults.return_to_service(ticket)
    for minute in (5, 6):  # the gauge still reads 79 after the repair: nothing new
        pull(source, now=NOW + timedelta(minutes=minute))
    assert faults.detect(NOW + timedelta(minutes=7)) == [] and XidEvent.objects.count() == 1
    gpu.refresh_from_db()
    assert gpu.state == "in_service"

    # An application error (XID 13) is recorded but counts no fault, opens nothing, degrades nothing.
    stub.route("/metrics", (200, "text/plain", with_xid(13)))
    pull(source, now=NOW + timedelta(minutes=8))
    assert list(XidEvent.objects.order_by("ts").values_list("code", "kind"))[-1] == (13, "application")
    assert GPUHourly.objects.get(gpu=gpu).xid_errors == 1
    assert faults.detect(NOW + timedelta(minutes=9)) == []
