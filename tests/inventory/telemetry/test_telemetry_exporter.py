"""The DCGM exporter scrape: a real dcgm-exporter page served over a local socket, parsed with
prometheus_client, matched to the inventory, rolled up into hours by the pull."""

import logging
from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import GPUHourly, TelemetrySample, TelemetrySource, UnknownSeries
from inventory.telemetry import dcgm, exporter
from inventory.telemetry.pull import pull
from inventory.telemetry.records import SourceError
from tests.factories import make_gpu, make_node
from tests.helpers.httpstub import stub_server

NOW = datetime(2026, 12, 2, 10, 20, tzinfo=UTC)
UUID_0 = "GPU-6f2bd1d3-1d4e-7b5c-90a1-2f6b8e3c4d10"
UUID_1 = "GPU-0a9c44e1-77f0-3c2d-b0e5-aa12c3d4e511"  # not in the inventory: matched by Hostname + gpu
UUID_9 = "GPU-ffffffff-0000-4000-8000-000000000099"  # a GPU the inventory does not know at all

LABELS = ('gpu="{gpu}",UUID="{uuid}",pci_bus_id="00000000:{bus}:00.0",device="nvidia{gpu}",'
          'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",DCGM_FI_DRIVER_VERSION="535.129.03"')
GPUS = [
    {"gpu": 0, "uuid": UUID_0, "bus": "18", "host": "dgx-zrh-001"},
    {"gpu": 1, "uuid": UUID_1, "bus": "2A", "host": "dgx-zrh-001.cluster.example.org"},
    {"gpu": 0, "uuid": UUID_9, "bus": "18", "host": "dgx-zrh-099"},
]
SERIES = [  # name, help, type, values for the three GPUs
    ("DCGM_FI_DEV_SM_CLOCK", "SM frequency (in MHz).", "gauge", ("1980", "1980", "345")),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", ("{util}", "97", "0")),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", ("40352", "1024", "80935")),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", ("40960", "80288", "0")),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", ("NaN", "{power}", "71.25")),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter",
     ("{energy_0}", "{energy_1}", "2.1e11")),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge", ("0", "79", "0")),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "gauge",
     ("0.512", "0.955", "0.000000")),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", "gauge",
     ("0.250", "+Inf", "0.000000")),
]


def page(util=50, power=650.5, energy=(1.2e12, 1.3e12), counter=True):
    """A dcgm-exporter 3.3 page for the three GPUs, as it prints it; ``energy``: the energy counters (mJ) of
    the first two GPUs; ``counter=False``: an exporter configured without the energy counter."""
    lines = []
    for name, help_text, kind, values in SERIES:
        if name == dcgm.TOTAL_ENERGY and not counter:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        for gpu, value in zip(GPUS, values, strict=True):
            text = value.format(util=util, power=power, energy_0=energy[0], energy_1=energy[1])
            lines.append(f"{name}{{{LABELS.format(**gpu)}}} {text}")
    return "\n".join(lines) + "\n"


def metrics(text):
    return (200, "text/plain; version=0.0.4; charset=utf-8", text)


@pytest.fixture
def stub():
    with stub_server() as server:
        yield server


@pytest.fixture
def fleet(db):
    node = make_node(hostname="dgx-zrh-001")
    return [make_gpu(node=node, slot=0, uuid=UUID_0), make_gpu(node=node, slot=1, uuid="")]


def exporter_source(stub, **kw):
    return TelemetrySource.objects.create(**{
        "name": "dcgm", "kind": "exporter", "url": stub.url("/metrics"), "interval_seconds": 60,
        "timeout_seconds": 2, **kw})


class Source:  # collect() needs only these attributes
    url, auth_token, timeout_seconds, name = "", "", 2, "test"


def scrape(stub, text, **attrs):
    stub.route("/metrics", metrics(text))
    source = Source()
    source.url = stub.url("/metrics")
    for name, value in attrs.items():
        setattr(source, name, value)
    return exporter.collect(source, NOW - timedelta(hours=1), NOW)


def test_reads_a_dcgm_exporter_page(stub):
    collected = scrape(stub, page() + 'DCGM_FI_DEV_GPU_UTIL{gpu="7",modelName="NVIDIA H100 80GB HBM3"} 5\n')

    by_uuid = {record.series.uuid: record for record in collected.samples}
    assert set(by_uuid) == {UUID_0, UUID_1, UUID_9}
    first = by_uuid[UUID_0]
    assert first.ts == NOW and collected.synced_until == NOW
    assert (first.util, first.mem_used_gb, first.mem_free_gb) == (50.0, 40.0, 40352 / 1024)
    assert (first.gr_engine_active, first.tensor_active, first.xid) == (0.512, 0.25, 0)
    assert first.power_w is None  # NaN: not reported, not zero
    assert first.energy_mj == 1.2e12  # the counter, as the page says it (the parser calls it ..._total)
    second = by_uuid[UUID_1]
    assert (second.series.hostname, second.series.gpu_index, second.series.model_name) == (
        "dgx-zrh-001.cluster.example.org", "1", "NVIDIA H100 80GB HBM3")
    assert (second.power_w, second.xid, second.tensor_active) == (650.5, 79, None)  # +Inf: not reported
    assert collected.warnings == [
        "DCGM_FI_DEV_POWER_USAGE: 1 value(s) that are not finite numbers (NaN, Inf or text) left out",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: 1 value(s) that are not finite numbers (NaN, Inf or text) left out",
        "1 sample(s) without a UUID or Hostname + gpu label left out",  # names no GPU
    ]


def test_pull_matches_by_uuid_then_hostname_and_lists_unknown_gpus(fleet, stub):
    source = exporter_source(stub)
    stub.route("/metrics", metrics(page()))

    summary = pull(source, now=NOW)

    assert summary == {"hours": 1, "samples": 2, "jobs": 0, "unknown": 1, "xid_events": 1, "health_events": 0,
                       "mig_instances": 0}
    assert set(TelemetrySample.objects.values_list("gpu_id", flat=True)) == {fleet[0].pk, fleet[1].pk}
    unknown = UnknownSeries.objects.get(source=source)
    assert (unknown.key, unknown.hostname, unknown.gpu_index) == (UUID_9, "dgx-zrh-099", "0")
    by_slot = {row.gpu.slot: row for row in GPUHourly.objects.select_related("gpu")}
    assert by_slot[1].xid_errors == 1 and by_slot[0].xid_errors == 0
    assert by_slot[0].power_mean_w is None and by_slot[0].energy_wh is None
    source.refresh_from_db()
    assert source.synced_until == NOW and source.last_error == "" and source.stale_since is None


def test_two_pulls_in_one_hour_give_one_hour_of_two_samples(fleet, stub):
    source = exporter_source(stub)
    stub.route("/metrics", metrics(page(util=40, power=600, energy=(1.2e12, 1.3e12))))
    pull(source, now=NOW)
    stub.route("/metrics", metrics(page(util=60, power=700, energy=(1.2e12 + 3e7, 1.3e12 + 39e6))))
    pull(source, now=NOW + timedelta(minutes=1))

    assert TelemetrySample.objects.filter(gpu=fleet[0]).count() == 2
    row = GPUHourly.objects.get(gpu=fleet[0])
    assert row.hour == NOW.replace(minute=0)
    assert (row.samples, row.util_mean, row.util_max) == (2, 50.0, 60.0)
    other = GPUHourly.objects.get(gpu=fleet[1])
    assert other.power_mean_w == 650.0
    assert other.energy_wh == pytest.approx(39e6 / 3.6e6)  # what the energy counter counted between the scrapes
    assert GPUHourly.objects.get(gpu=fleet[0]).energy_wh == pytest.approx(3e7 / 3.6e6)  # even with power NaN
    assert other.xid_errors == 1  # one XID event: the sticky gauge read 79 at both scrapes
    assert GPUHourly.objects.count() == 2


def pull_at(source, stub, minutes, text):
    """Serve ``text`` and pull it ``minutes`` after NOW."""
    stub.route("/metrics", metrics(text))
    return pull(source, now=NOW + timedelta(minutes=minutes))


def energy_by_gpu():
    return {row.gpu_id: row.energy_wh for row in GPUHourly.objects.all()}


MINUTE_AT_650_W = 650 * 60 * 1000  # mJ


def test_energy_is_what_the_counter_counted(fleet, stub):
    source = exporter_source(stub)
    for minute in range(3):
        pull_at(source, stub, minute, page(energy=(1.2e12 + minute * 3e7, 1.3e12 + minute * MINUTE_AT_650_W)))

    assert GPUHourly.objects.get(gpu=fleet[1]).samples == 3
    # last − first: two minutes at 650 W (the power estimate would say 3 samples × 1 min × 650.5 W = 32.5 Wh)
    assert energy_by_gpu() == {fleet[0].pk: pytest.approx(6e7 / 3.6e6), fleet[1].pk: pytest.approx(650 * 2 / 60)}


def test_a_counter_reset_counts_the_energy_since_the_reset(fleet, stub, caplog):
    """A driver reload sets DCGM's counter back to 0: the scrape after it counts what the counter says since
    then, the reset is logged once, and nothing is lost or counted twice."""
    caplog.set_level(logging.WARNING, logger="inventory.telemetry.rollups")
    source = exporter_source(stub)
    pull_at(source, stub, 0, page(energy=(1.2e12, 1.3e12)))
    pull_at(source, stub, 1, page(energy=(1.2e12 + 3e7, 1.3e12 + MINUTE_AT_650_W)))
    after_reset = page(energy=(1.2e12 + 6e7, 25_000_000))  # GPU 1's driver reloaded: 25 kJ since
    pull_at(source, stub, 2, after_reset)

    expected = {fleet[0].pk: pytest.approx(6e7 / 3.6e6), fleet[1].pk: pytest.approx((MINUTE_AT_650_W + 25e6) / 3.6e6)}
    assert energy_by_gpu() == expected
    (reset,) = [record.getMessage() for record in caplog.records if "went back" in record.getMessage()]
    assert reset.startswith(f"GPU {fleet[1]}: DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION went back 1 time(s), first at "
                            f"{(NOW + timedelta(minutes=2)).isoformat()} from 1300039000000 to 25000000 mJ")

    pull_at(source, stub, 2, after_reset)  # the same scrape again (a retried pull): nothing added
    assert TelemetrySample.objects.filter(gpu=fleet[1]).count() == 3
    assert energy_by_gpu() == expected

    caplog.clear()
    pull_at(source, stub, 3, page(energy=(1.2e12 + 9e7, 25_000_000 + MINUTE_AT_650_W)))
    assert energy_by_gpu() == {fleet[0].pk: pytest.approx(9e7 / 3.6e6),
                               fleet[1].pk: pytest.approx((2 * MINUTE_AT_650_W + 25e6) / 3.6e6)}
    assert not [record for record in caplog.records if "went back" in record.getMessage()]  # logged once only


def test_without_the_counter_energy_is_mean_power_over_the_covered_time(fleet, stub):
    source = exporter_source(stub)
    pull_at(source, stub, 0, page(power=600, counter=False))
    pull_at(source, stub, 1, page(power=700, counter=False))

    assert energy_by_gpu() == {fleet[0].pk: None,  # power NaN, no counter: not reported
                               fleet[1].pk: pytest.approx(650 * 2 * 60 / 3600)}  # two one-minute scrapes at 650 W


def test_a_line_the_parser_rejects_costs_that_line_only(stub):
    text = page().replace(f'DCGM_FI_DEV_GPU_UTIL{{{LABELS.format(**GPUS[1])}}} 97',
                          f'DCGM_FI_DEV_GPU_UTIL{{{LABELS.format(**GPUS[1])}}} n/a')
    collected = scrape(stub, text)

    by_uuid = {record.series.uuid: record for record in collected.samples}
    assert by_uuid[UUID_1].util is None and by_uuid[UUID_1].mem_used_gb == 80288 / 1024
    assert by_uuid[UUID_0].util == 50.0
    assert any(warning.startswith("1 unreadable line(s) left out") and "n/a" in warning
               for warning in collected.warnings)


def test_samples_with_their_own_timestamps(stub):
    at = datetime(2026, 12, 2, 10, 5, 30, tzinfo=UTC)
    line = f'DCGM_FI_DEV_GPU_UTIL{{gpu="3",UUID="{UUID_0}",Hostname="dgx-zrh-001"}} 42 {int(at.timestamp() * 1000)}\n'
    (record,) = scrape(stub, line).samples
    assert (record.ts, record.util, record.series.gpu_index) == (at, 42.0, "3")


def test_bearer_token_is_sent(stub):
    scrape(stub, page(), auth_token="s3cret")
    (_, _, headers), = stub.requests
    assert headers["Authorization"] == "Bearer s3cret"


@pytest.mark.parametrize("answer, message", [
    ((503, "text/plain", "exporter restarting"), "HTTP 503"),
    ((200, "text/html", "<html><body><h1>Login</h1></body></html>"), "not a metrics page"),
])
def test_failures_are_recorded_on_the_source(fleet, stub, answer, message):
    source = exporter_source(stub)
    stub.route("/metrics", answer)

    with pytest.raises(SourceError, match=message):
        pull(source, now=NOW)

    source.refresh_from_db()
    assert message in source.last_error
    assert source.stale_since == NOW and source.consecutive_failures == 1
    assert source.next_attempt_at == NOW + timedelta(seconds=60)
    assert not TelemetrySample.objects.exists()


def test_refused_connection(db):
    source = TelemetrySource.objects.create(name="gone", kind="exporter", url="http://127.0.0.1:9/metrics",
                                            timeout_seconds=2)
    with pytest.raises(SourceError, match="could not connect"):
        pull(source, now=NOW)
    source.refresh_from_db()
    assert "could not connect" in source.last_error
