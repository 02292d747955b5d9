"""GPU health telemetry (issue 19): temperatures, SM clock, ECC / NVLink / PCIe replay error counters, retired
pages and remapped rows, read from real dcgm-exporter pages (values read off the pages by hand), rolled up per
hour (counters as their increase, a reset counted from 0) and through Prometheus; null where not published."""

from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import GPUDaily, GPUHourly, NodeHourly, TelemetrySource
from inventory.telemetry import dcgm, prometheus
from inventory.telemetry.pull import pull
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server
from tests.helpers.telemetry import answer_prometheus
from tests.inventory.telemetry.test_telemetry_dcgm_real import page, records

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 2, 10, 20, tzinfo=UTC)
UUID = "GPU-6f2bd1d3-1d4e-7b5c-90a1-2f6b8e3c4d10"
LABELS = f'gpu="0",UUID="{UUID}",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"'


def test_real_a100_page_temperatures_clock_and_pcie_replays():
    """The NVIDIA docs' A100 page: GPU 61 °C, memory 69 °C, SM clock 1215 MHz, PCIe replay counter 0; it has no
    ECC, NVLink error, retired-page or row-remap series: those stay None, not 0."""
    (record,) = records(page("nvidia_docs_a100_mig_1g5gb_exporter2.4.0rc2.txt")).values()
    assert (record.gpu_temp_c, record.memory_temp_c, record.sm_clock_mhz, record.pcie_replay) == (61, 69, 1215, 0)
    assert (record.ecc_sbe, record.ecc_dbe, record.nvlink_errors, record.retired_pages, record.remapped_rows) == (
        None, None, None, None, None)


def test_real_t4_page_has_no_memory_temperature():
    """DataDog's T4 page: GPU 25 °C, SM clock 300 MHz, PCIe replay counter 0 (a ``counter`` family); the T4
    publishes no memory temperature."""
    (record,) = records(page("datadog_t4_1gpu_driver460.txt")).values()
    assert (record.gpu_temp_c, record.sm_clock_mhz, record.pcie_replay) == (25, 300, 0)
    assert record.memory_temp_c is None and record.ecc_sbe is None


def test_real_a30_page_temperature_of_a_mig_instance_is_its_gpus():
    """Exporter 4.x page: the RTX 2000 Ada at 44 °C, A30 gpu 2 at 45 °C (its instance 3), A30 gpu 0 at 50 °C (only
    its instance 3 reports a temperature)."""
    found = records(page("pr736_a30_mig_1g6gb_rtx2000ada_exporter4x.txt"))
    assert found["GPU-fc60126e-514d-3522-2828-c5daa8e99d85"].gpu_temp_c == 44
    assert found["GPU-63bc0b91-2265-1b94-831c-15c41fe92675"].gpu_temp_c == 45
    assert found["GPU-9a63752e-af8d-fe52-7f0d-968bca6d52e3"].gpu_temp_c == 50


def health_page(sbe_vol=None, sbe_agg=None, dbe_vol=0, retired=(2, 1), remapped=(3, 0), nvlink=(1, 2, 0, 4),
                pcie=5, temp=71):
    """A dcgm-exporter page of one GPU with the health series (None: the series is not on the page)."""
    series = {dcgm.GPU_TEMP: temp, dcgm.MEMORY_TEMP: 80, dcgm.SM_CLOCK: 1980, dcgm.ECC_SBE_VOL: sbe_vol,
              dcgm.ECC_SBE_AGG: sbe_agg, dcgm.ECC_DBE_VOL: dbe_vol, dcgm.RETIRED_SBE: retired[0],
              dcgm.RETIRED_DBE: retired[1], dcgm.CORRECTABLE_REMAPPED_ROWS: remapped[0],
              dcgm.UNCORRECTABLE_REMAPPED_ROWS: remapped[1], dcgm.PCIE_REPLAY: pcie,
              **dict(zip(dcgm.NVLINK_ERRORS, nvlink, strict=True)), dcgm.GPU_UTIL: 90}
    return "".join(f"{name}{{{LABELS}}} {value}\n" for name, value in series.items() if value is not None)


def test_summed_series_and_the_aggregate_ecc_counter_where_the_volatile_one_is_missing():
    (record,) = records(health_page(sbe_agg=40)).values()
    assert record.ecc_sbe == 40  # the aggregate counter, as the volatile one is not published
    assert (record.retired_pages, record.remapped_rows, record.nvlink_errors) == (3, 3, 7)  # 2+1, 3+0, 1+2+0+4
    (record,) = records(health_page(sbe_vol=6, sbe_agg=40)).values()
    assert record.ecc_sbe == 6  # the volatile one wins: mixing both would count their difference as errors


@pytest.fixture
def stub():
    with stub_server() as server:
        yield server


def scrape(stub, source, at, **values):
    stub.route("/metrics", (200, "text/plain", health_page(**values)))
    pull(source, now=at)


def test_counters_become_errors_per_hour_with_a_reset_and_none_before_a_pair(stub):
    """Scrapes at 10:20, 10:40 (SBE 10 → 12: 2 errors; PCIe 5 → 9: 4), 11:00 (SBE 12 → 3: the driver reloaded,
    3 errors since), 11:20 (3 → 3: 0). The first scrape alone measures nothing: 10:00 counts only the pair that
    ends at 10:40. Temperatures: the hottest reading of the hour; remapped rows: the highest reading."""
    node = make_node(hostname="dgx-01")
    gpu = make_gpu(node=node, slot=0, uuid=UUID)
    source = TelemetrySource.objects.create(name="dcgm", kind="exporter", url=stub.url("/metrics"), timeout_seconds=2,
                                            interval_seconds=1200)
    scrape(stub, source, NOW, sbe_vol=10, pcie=5, temp=70, remapped=(3, 0))
    first = GPUHourly.objects.get(gpu=gpu)
    assert (first.ecc_sbe_errors, first.pcie_replays, first.nvlink_errors) == (None, None, None)  # no pair yet
    assert (first.gpu_temp_max_c, first.remapped_rows) == (70, 3)
    scrape(stub, source, NOW + timedelta(minutes=20), sbe_vol=12, pcie=9, temp=83, remapped=(4, 0))
    scrape(stub, source, NOW + timedelta(minutes=40), sbe_vol=3, pcie=9, temp=60)
    scrape(stub, source, NOW + timedelta(minutes=60), sbe_vol=3, pcie=9, temp=61)

    ten, eleven = GPUHourly.objects.filter(gpu=gpu).order_by("hour")
    assert (ten.ecc_sbe_errors, ten.pcie_replays, ten.nvlink_errors, ten.ecc_dbe_errors) == (2, 4, 0, 0)
    assert (ten.gpu_temp_max_c, ten.memory_temp_max_c, ten.sm_clock_mean_mhz, ten.remapped_rows) == (83, 80, 1980, 4)
    assert (eleven.ecc_sbe_errors, eleven.pcie_replays, eleven.retired_pages) == (3, 0, 3)
    node_ten = NodeHourly.objects.get(node=node, hour=ten.hour)
    assert (node_ten.ecc_sbe_errors, node_ten.gpu_temp_max_c, node_ten.remapped_rows) == (2, 83, 4)
    day = GPUDaily.objects.get(gpu=gpu)
    assert (day.ecc_sbe_errors, day.pcie_replays, day.gpu_temp_max_c, day.remapped_rows) == (5, 4, 83, 4)


def test_a_page_without_health_series_stores_none_never_zero(stub):
    """The H100 MIG page of dcgm-exporter issue 512 has only engine activity: no health field is stored as 0."""
    gpu = make_gpu(node=make_node(hostname="gsrh100-074"), slot=0, uuid="GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77")
    source = TelemetrySource.objects.create(name="dcgm", kind="exporter", url=stub.url("/metrics"), timeout_seconds=2)
    for minutes in (0, 5):
        stub.route("/metrics", (200, "text/plain", page("issue512_h100_mig_1g10gb_pods.txt")))
        pull(source, now=NOW + timedelta(minutes=minutes))
    hour = GPUHourly.objects.get(gpu=gpu)
    assert [getattr(hour, name) for name in ("gpu_temp_max_c", "memory_temp_max_c", "sm_clock_mean_mhz",
                                             "ecc_sbe_errors", "ecc_dbe_errors", "nvlink_errors", "pcie_replays",
                                             "retired_pages", "remapped_rows")] == [None] * 9
    day = GPUDaily.objects.get(gpu=gpu)
    assert (day.ecc_sbe_errors, day.gpu_temp_max_c) == (None, None)


# --- through Prometheus -------------------------------------------------------------------------------------

H = timedelta(hours=1)
SERIES = {"UUID": UUID, "Hostname": "dgx-01", "gpu": "0", "job": "dcgm", "instance": "dgx-01:9400"}


class Source:
    auth_token, timeout_seconds, name = "", 2, "stub"

    def __init__(self, url):
        self.url = url


def test_prometheus_health_queries_and_values(stub):
    """Each health series is one query; increase() extrapolates (2.04 errors → 2); NVLink's kinds are summed; a
    negative count is left out (None, with a warning); fields Prometheus has no series for are None."""
    end = NOW.replace(minute=0)
    answers = {"gpu_temp_max_c": "78", "sm_clock_mean_mhz": "1755.5", "ecc_sbe_errors": "2.04",
               "pcie_replays": "-1", "remapped_correctable": "4", "nvlink_replay": "3", "nvlink_crc_flit": "1.02",
               "util_mean": "50"}
    answer_prometheus(stub, answers, SERIES, end)
    collected = prometheus.collect(Source(stub.url()), end - 2 * H, end)
    (record,) = collected.hours
    assert (record.gpu_temp_max_c, record.sm_clock_mean_mhz, record.ecc_sbe_errors, record.remapped_rows) == (
        78, 1755.5, 2, 4)
    assert record.nvlink_errors == 4  # 3 replay + 1 CRC flit errors, the kinds summed
    assert (record.pcie_replays, record.memory_temp_max_c, record.retired_pages) == (None, None, None)
    assert "pcie_replays: 1 negative value(s) left out (a count is never negative)" in collected.warnings
    queries = prometheus.queries()
    group = "UUID, Hostname, gpu, modelName, job, instance, GPU_I_ID, GPU_I_PROFILE"
    # The volatile counter's increase, else the aggregate's; where a counter read a DCGM blank (2**63) in the hour,
    # the blank itself (issue 34: a blank counter's increase is 0, which would pass for a count).
    vol, agg = (f"max by ({group}) (max_over_time(DCGM_FI_DEV_ECC_SBE_{kind}_TOTAL[1h])) >= 9223372036854775808"
                for kind in ("VOL", "AGG"))
    assert queries["ecc_sbe_errors"] == (
        f"(sum by ({group}) (increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[1h]))) unless ({vol}) or "
        f"(sum by ({group}) (increase(DCGM_FI_DEV_ECC_SBE_AGG_TOTAL[1h]))) unless ({agg}) or ({vol}) or ({agg})")
    assert queries["nvlink_replay"].startswith(
        f"(sum by ({group}) (increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL[1h]))) unless")
