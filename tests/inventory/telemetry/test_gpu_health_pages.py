"""GPU health on the node and GPU pages (issue 19): range picker (24 h, 7 d, 30 d, custom dates), badges per GPU
(hot, ECC, XID, none flagged, no data), one small chart per GPU (node) or per metric (GPU), in a constant number
of queries; bad input re-renders with a message."""

import json
from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from inventory.models import GPUDaily, GPUHourly
from inventory.telemetry import gpu_health
from inventory.telemetry.rollups import floor_hour
from tests.factories import make_gpu, make_node

pytestmark = pytest.mark.django_db


def hour_row(gpu, hours_ago, **fields):
    hour = floor_hour(timezone.now()) - timedelta(hours=hours_ago)
    values = {"util_mean": 50, "gpu_temp_max_c": 60, "memory_temp_max_c": 66, "power_mean_w": 400,
              "sm_clock_mean_mhz": 1980, "ecc_sbe_errors": 0, "ecc_dbe_errors": 0, **fields}
    return GPUHourly.objects.create(gpu=gpu, hour=hour, **values)


@pytest.fixture
def node():
    """Eight GPUs: gpu0 reached 91 °C, gpu1 counted 3 single-bit ECC errors, gpu2 had a hardware XID event, gpu3
    a double-bit error, gpu4–6 healthy, gpu7 reported nothing."""
    node = make_node(hostname="dgx-health")
    gpus = [make_gpu(node=node, slot=slot) for slot in range(8)]
    for gpu in gpus[:7]:
        hour_row(gpu, 30)
        hour_row(gpu, 2)
    hour_row(gpus[0], 1, gpu_temp_max_c=91)
    hour_row(gpus[1], 1, ecc_sbe_errors=3)
    hour_row(gpus[2], 1, xid_errors=1)
    hour_row(gpus[3], 1, ecc_dbe_errors=1, ecc_sbe_errors=2)
    return node, gpus


def page_charts(response):
    """The charts' JSON on a page, by the id of their script element."""
    html = response.content.decode()
    charts = {}
    for chunk in html.split('<script id="health-')[1:]:
        name, rest = chunk.split('"', 1)
        charts[name] = json.loads(rest.split(">", 1)[1].split("</script>", 1)[0])
    return charts


def badges_of(response, gpu_name):
    html = response.content.decode()
    section = html.split(f'data-gpu="{gpu_name}"', 1)[1].split('class="chart"', 1)[0]
    return [part.split('"', 1)[0] for part in section.split('data-badge="')[1:]]


def test_node_page_badges_and_one_chart_per_gpu(viewer_client, node):
    node, gpus = node
    response = viewer_client.get(reverse("inventory:node_detail", args=[node.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index('id="gpu-health"') < html.index('id="gpu-utilization"')  # health first, above the fold
    assert [badges_of(response, f"gpu{slot}") for slot in range(8)] == [
        ["hot"], ["ecc"], ["xid"], ["ecc"], ["ok"], ["ok"], ["ok"], ["no-data"]]
    assert "hot 91 °C" in html and "ECC 3 single-bit" in html and "ECC 1 double-bit" in html and "XID ×1" in html
    charts = page_charts(response)
    assert sorted(charts) == [f"gpu{slot}" for slot in range(8)]
    gpu0 = charts["gpu0"]
    assert len(gpu0["x"]) == 7 * 24 and gpu0["y_title"] == "°C"  # 7 days of hours, temperature by default
    values = gpu0["series"][0]["y"]
    assert values[-2] == 91 and values[-3] == 60 and values[-31] == 60  # 1, 2 and 30 hours ago
    assert values.count(None) == 7 * 24 - 3  # no row: a gap, never 0
    assert set(charts["gpu7"]["series"][0]["y"]) == {None}


def test_the_badge_thresholds_are_settings(viewer_client, node, settings):
    """gpu0 reached 91 °C (memory 66 °C), gpu1 counted 3 single-bit ECC errors: raising the thresholds above
    them clears those badges, lowering the memory one flags the healthy GPUs."""
    node, gpus = node
    url = reverse("inventory:node_detail", args=[node.pk])
    settings.GPU_HOT_C, settings.GPU_SBE_ECC_WARN = 92, 4
    response = viewer_client.get(url)
    assert [badges_of(response, f"gpu{slot}") for slot in range(8)] == [
        ["ok"], ["ok"], ["xid"], ["ecc"], ["ok"], ["ok"], ["ok"], ["no-data"]]
    settings.GPU_HOT_C, settings.GPU_SBE_ECC_WARN, settings.GPU_MEMORY_HOT_C = 90, 3, 66
    response = viewer_client.get(url)
    assert [badges_of(response, f"gpu{slot}") for slot in range(8)] == [
        ["hot"], ["hot", "ecc"], ["hot", "xid"], ["hot", "ecc"], ["hot"], ["hot"], ["hot"], ["no-data"]]
    html = response.content.decode()
    assert "hot 91 °C" in html and "memory hot 66 °C" in html and "at 90 °C and above" in html


def test_pcie_and_nvlink_warnings_have_thresholds(settings):
    values = {metric: [None] for metric in gpu_health.METRICS}
    values.update(pcie_replays=[5], nvlink_errors=[2], util_mean=[50])
    assert [b.key for b in gpu_health.badges(values)] == ["nvlink", "pcie"]
    settings.GPU_PCIE_REPLAYS_WARN, settings.GPU_NVLINK_ERRORS_WARN = 6, 2
    assert [b.key for b in gpu_health.badges(values)] == ["nvlink"]


def test_node_page_metric_and_range_choice(viewer_client, node):
    node, gpus = node
    url = reverse("inventory:node_detail", args=[node.pk])
    charts = page_charts(viewer_client.get(url, {"metric": "ecc_sbe_errors", "range": "24h"}))
    assert len(charts["gpu1"]["x"]) == 24 and charts["gpu1"]["series"][0]["y"][-2] == 3
    assert charts["gpu1"]["y_title"] == "errors"
    # 30 days reads the daily rows
    GPUDaily.objects.create(gpu=gpus[0], day=timezone.localdate(), gpu_temp_max_c=91, hours=3)
    charts = page_charts(viewer_client.get(url, {"range": "30d"}))
    assert len(charts["gpu0"]["x"]) == 30 and charts["gpu0"]["series"][0]["y"][-1] == 91


def test_custom_dates_and_bad_input(viewer_client, node):
    node, gpus = node
    url = reverse("inventory:node_detail", args=[node.pk])
    today = timezone.localdate()
    response = viewer_client.get(url, {"start": (today - timedelta(days=1)).isoformat(), "end": today.isoformat()})
    assert len(page_charts(response)["gpu0"]["x"]) == 48
    assert "GPU health, " + (today - timedelta(days=1)).isoformat() in response.content.decode()
    for params, message in (({"start": "2026-13-01", "end": "x"}, "Enter both dates as YYYY-MM-DD."),
                            ({"start": "2026-12-02", "end": "2026-12-01"}, "The end date is before the start date."),
                            ({"range": "2y"}, "Unknown range &#x27;2y&#x27;"),
                            ({"metric": "fan"}, "Unknown metric &#x27;fan&#x27;.")):
        response = viewer_client.get(url, params)
        assert response.status_code == 200 and message in response.content.decode()
        assert len(page_charts(response)["gpu0"]["x"]) == 7 * 24  # the default range instead


def test_long_custom_range_reads_days():
    chosen = gpu_health.custom(date(2026, 1, 1), date(2026, 2, 14))
    assert chosen.daily and len(chosen.buckets) == 45 and chosen.model is GPUDaily


def test_gpu_page_has_its_own_telemetry(viewer_client, node):
    node, gpus = node
    response = viewer_client.get(reverse("inventory:gpu_detail", args=[gpus[3].pk]))
    html = response.content.decode()
    assert 'data-badge="ecc"' in html and "ECC 1 double-bit" in html
    charts = page_charts(response)
    assert sorted(charts) == sorted(gpu_health.METRICS)  # one chart per metric
    assert charts["ecc_dbe_errors"]["series"][0]["y"][-2] == 1 and charts["util_mean"]["y_range"] == [0, 100]
    assert charts["power_mean_w"]["series"][0]["y"][-3] == 400
    assert set(charts["nvlink_errors"]["series"][0]["y"]) == {None}  # never reported: no line, not zeros


def test_node_page_queries_do_not_grow_with_gpus(viewer_client, node, django_assert_max_num_queries):
    one = make_node(hostname="dgx-one")
    hour_row(make_gpu(node=one, slot=0), 2)
    viewer_client.get(reverse("inventory:node_detail", args=[one.pk]))  # warm caches (session, permissions)
    with CaptureQueriesContext(connection) as few:
        viewer_client.get(reverse("inventory:node_detail", args=[one.pk]))
    with django_assert_max_num_queries(len(few)):
        viewer_client.get(reverse("inventory:node_detail", args=[node[0].pk]))



def test_the_api_gives_the_figures_the_gpu_page_charts(viewer_client, viewer_api, node):
    node, gpus = node
    gpu = gpus[3]
    charts = page_charts(viewer_client.get(reverse("inventory:gpu_detail", args=[gpu.pk])))
    rows = viewer_api.get("/api/inventory/gpu-hourly/", {"gpu": gpu.pk, "page_size": 50}).json()["results"]
    assert len(rows) == 3
    for metric in gpu_health.METRICS:
        charted = [value for value in charts[metric]["series"][0]["y"] if value is not None]
        assert sorted(row[metric] for row in rows if row[metric] is not None) == sorted(charted), metric
    assert {row["ecc_dbe_errors"] for row in rows} == {0, 1} and {row["nvlink_errors"] for row in rows} == {None}
