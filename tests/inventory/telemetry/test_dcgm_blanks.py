"""DCGM's blank values and row-remap gauges (issue 34), on real dcgm-exporter pages (tests/fixtures/dcgm/real,
SOURCES.md) and pages built from a real one (tests/fixtures/dcgm/derived, SOURCES.md), through both collectors:

- a sentinel (``9223372036854775794``: INT64 "not supported", as NVIDIA's own README page shows for the memory
  temperature) is stored as null, never as 9.2e18 °C, and the source's data-quality panel says so;
- a GPU without a memory-temperature sensor (the sentinel, a 0 from newer exporters, or no series at all) shows
  "no sensor" on its page, never 0 °C, and no "memory hot" badge;
- ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` / ``_PENDING`` turning to 1 is a health event with its meaning (replace the
  GPU / reset it), once however long the gauge stays at 1, and a badge while it reads 1."""

import importlib
import json
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from inventory.models import GPUHourly, PullReport, TelemetrySample, TelemetrySource
from inventory.telemetry import dcgm, remap
from inventory.telemetry.models import HealthEvent, HealthReading
from inventory.telemetry.pull import pull
from inventory.telemetry.rollups import floor_hour
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server
from tests.helpers.paths import FIXTURES
from tests.helpers.telemetry import answer_prometheus

pytestmark = pytest.mark.django_db

README_UUID = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"  # NVIDIA's README page: memory temperature not supported
T4_UUID = "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"  # DataDog's T4 page: no memory-temperature series at all
RTX_UUID = "GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c"  # the LKE RTX 4000 Ada page: memory temperature 0
H = timedelta(hours=1)


def page(path):
    return (FIXTURES / "dcgm" / path).read_text()


@pytest.fixture
def stub():
    with stub_server() as server:
        yield server


def scrape(stub, text, uuid, hostname="dgx-01"):
    """Pull ``text`` as an exporter's page once, now, for a GPU with ``uuid``; returns (GPU, source)."""
    gpu = make_gpu(node=make_node(hostname=hostname), slot=0, uuid=uuid)
    source = TelemetrySource.objects.create(name="dcgm", kind="exporter", url=stub.url("/metrics"), timeout_seconds=2)
    stub.route("/metrics", (200, "text/plain", text))
    pull(source, now=timezone.now())
    return gpu, source


def no_sensor_charts(html):
    return html.count('data-no-sensor="memory-temperature sensor"')


# --- the sentinel table ------------------------------------------------------------------------------------


@pytest.mark.parametrize("series, value, exact, why", [
    # DCGM_INT64_BLANK 0x7ffffffffffffff0 and +1..+3, exactly where the page's digits are known…
    (dcgm.MEMORY_TEMP, 2.0**63, 9223372036854775792, "blank"),
    (dcgm.MEMORY_TEMP, 2.0**63, 9223372036854775793, "not found"),
    (dcgm.MEMORY_TEMP, 2.0**63, 9223372036854775794, "not supported"),
    (dcgm.ECC_SBE_VOL, 2.0**63, 9223372036854775795, "not permissioned"),
    # …and as a float (Prometheus keeps only that): 2**63 whichever of the four it was.
    (dcgm.GPU_TEMP, 9223372036854775808.0, None, dcgm.UNTOLD),
    # DCGM_INT32_BLANK 0x7ffffff0 and +1..+3, exactly: a 64-bit counter passes through 2**31.
    (dcgm.SM_CLOCK, 2147483632.0, None, "blank"),
    (dcgm.GPU_UTIL, 2147483634.0, None, "not supported"),
    (dcgm.TOTAL_ENERGY, 2147483635.0, None, "not permissioned"),
    (dcgm.TOTAL_ENERGY, 2147483636.0, None, None),
    (dcgm.TOTAL_ENERGY, 5551899580.0, None, None),
    # DCGM_FP64_BLANK 140737488355328.0 (2**47) and +1..+3 on the DOUBLE fields (power, profiling ratios).
    (dcgm.POWER_USAGE, 140737488355328.0, None, "blank"),
    (dcgm.POWER_USAGE, 140737488355329.0, None, "not found"),
    (dcgm.GR_ENGINE_ACTIVE, 140737488355330.0, None, "not supported"),
    (dcgm.PIPE_TENSOR_ACTIVE, 140737488355331.0, None, "not permissioned"),
    (dcgm.POWER_USAGE, 1e15, None, "blank"),  # past the named codes: still no value (DCGM_FP64_IS_BLANK)
    (dcgm.POWER_USAGE, 409.692, None, None),
    # A GPU without the sensor: dcgm-exporter 3.x and later write 0 (the RTX 4000 Ada page).
    (dcgm.MEMORY_TEMP, 0.0, None, dcgm.NO_SENSOR),
    (dcgm.GPU_UTIL, 0.0, None, None),
    (dcgm.MEMORY_TEMP, 69.0, None, None),
])
def test_blank_codes_of_each_type(series, value, exact, why):
    assert dcgm.blank(series, value, exact) == why
    assert dcgm.reading(series, value, exact) == ((None, why) if why else (value, None))


def test_values_past_any_int64_are_garbage_not_blanks():
    assert dcgm.reading(dcgm.XID_ERRORS, "1e30") == (None, dcgm.NOT_FINITE)
    assert dcgm.reading(dcgm.MEMORY_TEMP, "NaN") == (None, dcgm.NOT_FINITE)
    assert dcgm.reading(dcgm.POWER_USAGE, "1e30") == (None, "blank")  # a DOUBLE: DCGM_FP64_IS_BLANK


# --- the exporter path ---------------------------------------------------------------------------------------


def test_the_sentinel_is_stored_as_null_and_the_data_quality_panel_says_so(stub, viewer_client):
    """NVIDIA's README page: SM clock 139 MHz, memory temperature 9223372036854775794 (INT64 "not supported")."""
    gpu, source = scrape(stub, page("real/nvidia_readme_memory_temp_not_supported_exporter2.3.5.txt"), README_UUID)

    sample = TelemetrySample.objects.get(gpu=gpu)
    assert (sample.sm_clock_mhz, sample.memory_temp_c) == (139, None)
    hour = GPUHourly.objects.get(gpu=gpu)
    assert (hour.sm_clock_mean_mhz, hour.memory_temp_max_c) == (139, None)
    report = PullReport.objects.get(source=source)
    assert report.quality == {"dcgm_blank": 1}
    assert report.examples["dcgm_blank"] == ["GPU-memory temperature: not supported on 1 GPU (DCGM sentinel)"]
    assert "warning" not in report.quality  # a GPU without a sensor is no parse error

    html = viewer_client.get(source.get_absolute_url()).content.decode()
    panel = html.split('id="data-quality"', 1)[1]
    assert 'class="quality-dcgm_blank"' in panel and "DCGM blank values" in panel
    assert "GPU-memory temperature: not supported on 1 GPU (DCGM sentinel)" in panel


def test_a_gpu_without_a_memory_sensor_shows_no_sensor_not_0_and_no_memory_hot_badge(stub, viewer_client, settings):
    settings.GPU_MEMORY_HOT_C = 0  # any temperature read would be "memory hot"
    gpu, _ = scrape(stub, page("real/nvidia_readme_memory_temp_not_supported_exporter2.3.5.txt"), README_UUID)

    html = viewer_client.get(gpu.get_absolute_url()).content.decode()
    assert no_sensor_charts(html) == 1 and ">no sensor</p>" in html
    assert "memory hot" not in html and 'data-badge="hot"' not in html
    assert 'data-badge="ok"' in html  # it reported (its SM clock), nothing flagged
    chart = json.loads(html.split('<script id="health-memory_temp_max_c" type="application/json">', 1)[1]
                       .split("</script>", 1)[0])
    assert set(chart["series"][0]["y"]) == {None}  # nothing to draw: no line, not zeros
    assert 'data-source="health-memory_temp_max_c"' not in html  # and no empty chart in its place
    assert 'data-source="health-sm_clock_mean_mhz"' in html


@pytest.mark.parametrize("fixture, uuid, hostname", [
    ("real/datadog_t4_1gpu_driver460.txt", T4_UUID, "424773df46e0"),  # no memory-temperature series at all
    ("real/lke_rtx4000ada_gpu_operator_v25.10.txt", RTX_UUID, "lke529760-766837-0a634ab30000"),  # it reads 0
])
def test_gddr_boards_have_no_memory_sensor(stub, viewer_client, fixture, uuid, hostname):
    gpu, source = scrape(stub, page(fixture), uuid, hostname=hostname)
    hour = GPUHourly.objects.get(gpu=gpu)
    assert hour.memory_temp_max_c is None and hour.gpu_temp_max_c in (25, 48)
    node_html = viewer_client.get(gpu.node.get_absolute_url(), {"metric": "memory_temp_max_c"}).content.decode()
    gpu_html = viewer_client.get(gpu.get_absolute_url()).content.decode()
    for html in (node_html, gpu_html):
        assert no_sensor_charts(html) == 1 and "0 °C" not in html
    examples = PullReport.objects.get(source=source).examples.get("dcgm_blank", [])
    assert examples == ([] if "datadog" in fixture else ["GPU-memory temperature: reads 0 on 1 GPU (no sensor)"])


def test_a_gpu_that_reported_nothing_has_no_data_not_no_sensor(viewer_client):
    gpu = make_gpu(node=make_node(hostname="quiet"), slot=0)
    html = viewer_client.get(gpu.get_absolute_url()).content.decode()
    assert no_sensor_charts(html) == 0 and "No telemetry for this GPU in this range." in html


def test_row_remap_failure_is_a_health_event_with_its_meaning(stub, viewer_client):
    """The RTX 4000 Ada page with ROW_REMAP_FAILURE 1: one event however often it is read, the GPU's badge, and its
    meaning on the GPU page: replace the GPU (RMA)."""
    gpu, source = scrape(stub, page("derived/rtx4000ada_row_remap_failure.txt"), RTX_UUID,
                         hostname="lke529760-766837-0a634ab30000")
    pull(source, now=timezone.now() + timedelta(minutes=5))  # still 1: no second event

    (event,) = HealthEvent.objects.filter(gpu=gpu)
    assert event.kind == remap.FAILURE and event.source == source
    assert "must be replaced" in event.meaning and "RMA" in event.meaning
    assert HealthReading.objects.get(gpu=gpu, kind=remap.FAILURE).value == 1
    assert not HealthReading.objects.filter(gpu=gpu, kind=remap.PENDING).exists()  # the page has no such series
    assert [report.counts["health_events"] for report in PullReport.objects.filter(source=source)] == [0, 1]

    html = viewer_client.get(gpu.get_absolute_url()).content.decode()
    assert 'data-badge="row_remap_failure"' in html and "row remap failed" in html
    section = html.split('id="health-events"', 1)[1].split("</table>", 1)[0]
    assert 'data-health-event="row_remap_failure"' in section and "Row remap failure" in section
    assert "The GPU must be replaced (NVIDIA&#x27;s guidance: RMA)." in section
    node_html = viewer_client.get(gpu.node.get_absolute_url()).content.decode()
    assert 'data-badge="row_remap_failure"' in node_html


def test_row_remap_pending_is_a_health_event_until_the_reset(stub, viewer_client):
    """The RTX 4000 Ada page with ROW_REMAP_PENDING 1 (series added), then 0 after a reset: one event, the badge
    gone once the gauge reads 0; a second remap pending later is a second event."""
    pending = page("derived/rtx4000ada_row_remap_pending.txt")
    gpu, source = scrape(stub, pending, RTX_UUID, hostname="lke529760-766837-0a634ab30000")
    (event,) = HealthEvent.objects.filter(gpu=gpu)
    assert event.kind == remap.PENDING and "next GPU reset" in event.meaning and "reset the GPU" in event.meaning
    html = viewer_client.get(gpu.get_absolute_url()).content.decode()
    assert 'data-badge="row_remap_pending"' in html and "row remap pending" in html
    assert "Drain the node, then reset the GPU (or reboot)." in html

    reset = pending.replace('pod_uid=""} 1\n', 'pod_uid=""} 0\n')
    stub.route("/metrics", (200, "text/plain", reset))
    pull(source, now=timezone.now() + timedelta(minutes=5))
    assert HealthEvent.objects.filter(gpu=gpu).count() == 1
    assert 'data-badge="row_remap_pending"' not in viewer_client.get(gpu.get_absolute_url()).content.decode()
    stub.route("/metrics", (200, "text/plain", pending))
    pull(source, now=timezone.now() + timedelta(minutes=10))
    assert HealthEvent.objects.filter(gpu=gpu, kind=remap.PENDING).count() == 2


# --- the Prometheus path -------------------------------------------------------------------------------------

SERIES = {"UUID": RTX_UUID, "Hostname": "lke-01", "gpu": "0", "job": "dcgm", "instance": "lke-01:9400"}


def test_prometheus_blanks_are_null_and_remap_gauges_are_events(stub, viewer_client):
    """What Prometheus answers for a GPU whose exporter writes DCGM blanks: the INT64 code as the float 2**63
    (9223372036854775808: which code it was is lost), the FP64 "not supported" exactly; the row-remap failure gauge
    at 1 all hour, the pending one at 1 in the hour and 0 at its end (reset within the hour)."""

    now = timezone.now()
    end = floor_hour(now)  # the last complete hour's end
    answers = {"util_mean": "50", "samples": "60", "gpu_temp_max_c": "61", "memory_temp_max_c": "9223372036854775808",
               "power_mean_w": "140737488355330", "row_remap_failure_last": "1", "row_remap_failure_max": "1",
               "row_remap_pending_last": "0", "row_remap_pending_max": "1"}
    answer_prometheus(stub, answers, SERIES, end)
    gpu = make_gpu(node=make_node(hostname="lke-01"), slot=0, uuid=RTX_UUID)
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url=stub.url(), timeout_seconds=2,
                                            backfill_hours=2)
    pull(source, now=now)

    hour = GPUHourly.objects.get(gpu=gpu, hour=end - H)
    assert (hour.util_mean, hour.gpu_temp_max_c, hour.memory_temp_max_c, hour.power_mean_w) == (50, 61, None, None)
    assert hour.energy_wh is None  # no power: no estimate from a blank
    report = PullReport.objects.get(source=source)
    assert report.quality == {"dcgm_blank": 2}
    assert report.examples["dcgm_blank"] == [
        "GPU-memory temperature: blank, not supported or not permissioned on 1 GPU (DCGM sentinel)",
        "power: not supported on 1 GPU (DCGM sentinel)"]
    events = dict(HealthEvent.objects.filter(gpu=gpu).values_list("kind", "ts"))
    assert events == {remap.FAILURE: end - timedelta(microseconds=1), remap.PENDING: end - timedelta(microseconds=1)}
    assert dict(HealthReading.objects.filter(gpu=gpu).values_list("kind", "value")) == {
        remap.FAILURE: 1, remap.PENDING: 0}
    html = viewer_client.get(gpu.get_absolute_url()).content.decode()
    assert 'data-badge="row_remap_failure"' in html and 'data-badge="row_remap_pending"' not in html
    assert no_sensor_charts(html) == 1
    pull(source, now=now + timedelta(minutes=5))  # the same hour again: no new event
    assert HealthEvent.objects.filter(gpu=gpu).count() == 2


# --- what was stored before ----------------------------------------------------------------------------------


def test_the_migration_nulls_blanks_stored_before():
    migration = importlib.import_module("inventory.migrations.0016_health_events_dcgm_blanks")
    gpu, other = make_gpu(node=make_node()), make_gpu(node=make_node())
    hour = floor_hour(timezone.now())
    GPUHourly.objects.create(gpu=gpu, hour=hour, util_mean=40, memory_temp_max_c=9.223372036854776e18,
                             gpu_temp_max_c=61, power_mean_w=140737488355330.0)
    GPUHourly.objects.create(gpu=other, hour=hour, util_mean=0, memory_temp_max_c=0, gpu_temp_max_c=55)
    source = TelemetrySource.objects.create(name="dcgm", kind="exporter", url="http://dgx-01:9400/metrics")
    TelemetrySample.objects.create(source=source, gpu=gpu, ts=timezone.now(), memory_temp_c=9.223372036854776e18,
                                   util=0, energy_mj=455497156)

    migration.forget_blanks(apps, None)

    rows = {row.gpu_id: row for row in GPUHourly.objects.all()}
    assert (rows[gpu.pk].util_mean, rows[gpu.pk].memory_temp_max_c, rows[gpu.pk].gpu_temp_max_c,
            rows[gpu.pk].power_mean_w) == (40, None, 61, None)
    assert (rows[other.pk].util_mean, rows[other.pk].memory_temp_max_c, rows[other.pk].gpu_temp_max_c) == (0, None, 55)
    sample = TelemetrySample.objects.get()
    assert (sample.memory_temp_c, sample.util, sample.energy_mj) == (None, 0, 455497156)
