"""Health views that show faults (issue 37, item 2): XID, ECC and row-remap events marked with their code and meaning
on a GPU's charts, the node's degraded reason linked to the event that caused it, fixed axis ranges per metric (a
flat 36 °C line stays flat), and the node's GPU health table sorted by its worst figure."""

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from inventory.lifecycle import transition
from inventory.models import LifecycleState as L
from inventory.telemetry import gpu_health, remap
from inventory.telemetry.models import GPUDaily, GPUHourly, HealthEvent, HealthReading, XidEvent
from inventory.telemetry.rollups import floor_hour
from tests.factories import make_gpu, make_gpu_model, make_node

pytestmark = pytest.mark.django_db


def hour_row(gpu, hours_ago, **fields):
    hour = floor_hour(timezone.now()) - timedelta(hours=hours_ago)
    values = {"util_mean": 50, "gpu_temp_max_c": 36, "memory_temp_max_c": 40, "power_mean_w": 100,
              "sm_clock_mean_mhz": 1980, "ecc_sbe_errors": 0, "ecc_dbe_errors": 0, **fields}
    return GPUHourly.objects.create(gpu=gpu, hour=hour, **values)


def xid_event(gpu, hours_ago, code):
    ts = timezone.now() - timedelta(hours=hours_ago)
    return XidEvent.objects.create(gpu=gpu, ts=ts, hour=floor_hour(ts), code=code, kind="hardware")


@pytest.fixture
def node():
    """Four H100s (TDP 700 W) at a flat 36 °C: gpu3 fell off the bus (XID 79) five hours ago and its node was
    degraded for it; gpu1 had a double-bit ECC error (XID 48) and 2 of them counted; gpu2 a failed row remap."""
    model = make_gpu_model(name="H100 test", tdp_w=700)
    node = make_node(hostname="dgx-fault", state=L.IN_SERVICE)
    gpus = [make_gpu(node=node, slot=slot, gpu_model=model, state=L.IN_SERVICE) for slot in range(4)]
    for gpu in gpus:
        for hours_ago in (2, 6, 30):
            hour_row(gpu, hours_ago)
    hour_row(gpus[1], 3, ecc_dbe_errors=2)
    hour_row(gpus[2], 4, nvlink_errors=9)
    xid_event(gpus[1], 3, 48)
    ts = timezone.now() - timedelta(hours=4)
    HealthEvent.objects.create(gpu=gpus[2], ts=ts, hour=floor_hour(ts), kind=remap.FAILURE)
    HealthReading.objects.create(gpu=gpus[2], kind=remap.FAILURE, value=1, ts=ts)  # the gauge still reads 1
    fault = xid_event(gpus[3], 5, 79)
    hour_row(gpus[3], 5, xid_errors=1)  # as the pull counts it in the hour's row
    transition(node, L.DEGRADED, reason="XID 79: GPU 3 fell off the bus; node drained")
    return node, gpus, fault


def charts_of(response):
    html = response.content.decode()
    found = {}
    for chunk in html.split('<script id="health-')[1:]:
        name, rest = chunk.split('"', 1)
        found[name] = json.loads(rest.split(">", 1)[1].split("</script>", 1)[0])
    return found


def test_xid_and_ecc_events_are_marked_with_code_and_meaning(viewer_client, node):
    node, gpus, fault = node
    response = viewer_client.get(reverse("inventory:node_detail", args=[node.pk]))
    charts = charts_of(response)
    (marker,) = charts["gpu3"]["events"]
    assert (marker["label"], marker["kind"], marker["meaning"]) == ("XID 79", "xid", "GPU has fallen off the bus")
    assert marker["x"] in charts["gpu3"]["x"]  # on its hour's bucket, so the chart draws it
    assert [(e["label"], e["kind"]) for e in charts["gpu1"]["events"]] == [("XID 48", "ecc")]
    assert [(e["label"], e["kind"]) for e in charts["gpu2"]["events"]] == [("row remap failed", "remap")]
    assert charts["gpu0"]["events"] == []
    html = response.content.decode()
    gpu3 = html.split('data-gpu="gpu3"', 1)[1].split('data-gpu="', 1)[0]
    assert 'data-xid="79"' in gpu3 and "GPU has fallen off the bus" in gpu3  # in words under the chart too
    # The GPU's page marks them on every metric's chart, and lists them once.
    response = viewer_client.get(reverse("inventory:gpu_detail", args=[gpus[3].pk]))
    charts = charts_of(response)
    assert all([e["label"] for e in chart["events"]] == ["XID 79"] for chart in charts.values())
    assert response.content.decode().count('data-xid="79"') == 1


def test_double_bit_ecc_counts_without_an_xid_are_marked_once(viewer_client, node):
    """gpu1's 2 double-bit errors have their XID 48 marked already: no second marker. gpu0 counts 3 in an hour with
    no XID event (the scrape missed it): marked in words; single-bit errors (corrected) are not."""
    node, gpus, fault = node
    hour_row(gpus[0], 9, ecc_dbe_errors=3, ecc_sbe_errors=40)
    hour_row(gpus[0], 10, ecc_sbe_errors=12)
    charts = charts_of(viewer_client.get(reverse("inventory:node_detail", args=[node.pk])))
    assert [(e["label"], e["kind"]) for e in charts["gpu1"]["events"]] == [("XID 48", "ecc")]
    (marker,) = charts["gpu0"]["events"]
    assert (marker["label"], marker["kind"]) == ("ECC ×3", "ecc")
    assert marker["meaning"] == "3 uncorrectable (double-bit) ECC errors counted"
    assert marker["x"] == gpu_health.time_label(floor_hour(timezone.now()) - timedelta(hours=9))


def test_events_outside_the_range_are_not_marked(viewer_client, node):
    node, gpus, fault = node
    XidEvent.objects.filter(pk=fault.pk).update(ts=timezone.now() - timedelta(days=9),
                                                hour=floor_hour(timezone.now() - timedelta(days=9)))
    charts = charts_of(viewer_client.get(reverse("inventory:node_detail", args=[node.pk])))
    assert charts["gpu3"]["events"] == []
    GPUDaily.objects.create(gpu=gpus[3], day=timezone.localdate() - timedelta(days=9), gpu_temp_max_c=36, hours=1)
    charts = charts_of(viewer_client.get(reverse("inventory:node_detail", args=[node.pk]), {"range": "30d"}))
    assert [e["label"] for e in charts["gpu3"]["events"]] == ["XID 79"]  # a day's bucket on the daily chart


def test_the_degraded_reason_links_to_its_event(viewer_client, node):
    node, gpus, fault = node
    response = viewer_client.get(reverse("inventory:node_detail", args=[node.pk]))
    html = response.content.decode()
    banner = html.split('id="fault"', 1)[1].split("</p>", 1)[0]
    assert "XID 79: GPU 3 fell off the bus; node drained" in banner
    link = f'{reverse("inventory:gpu_detail", args=[gpus[3].pk])}#xid-event-{fault.pk}'
    assert f'href="{link}"' in banner and "GPU has fallen off the bus" in banner
    assert f'id="xid-event-{fault.pk}"' in viewer_client.get(link.split("#")[0]).content.decode()


def test_a_reason_without_a_recorded_event_says_so_and_a_node_in_service_shows_none(viewer_client, node):
    node, gpus, fault = node
    fault.delete()
    html = viewer_client.get(reverse("inventory:node_detail", args=[node.pk])).content.decode()
    assert "no recorded XID event matches it" in html
    transition(node, L.IN_SERVICE, reason="repaired")
    assert 'id="fault"' not in viewer_client.get(reverse("inventory:node_detail", args=[node.pk])).content.decode()


def test_axes_are_fixed_per_metric(viewer_client, node):
    node, gpus, _ = node
    url = reverse("inventory:node_detail", args=[node.pk])
    assert charts_of(viewer_client.get(url))["gpu0"]["y_range"] == [20, 100]  # a flat 36 °C, not 35.9–36.1
    assert charts_of(viewer_client.get(url, {"metric": "power_mean_w"}))["gpu0"]["y_range"] == [0, 700]  # its TDP
    assert charts_of(viewer_client.get(url, {"metric": "util_mean"}))["gpu0"]["y_range"] == [0, 100]
    assert charts_of(viewer_client.get(url, {"metric": "ecc_dbe_errors"}))["gpu1"]["y_range"] == [0, 2]
    assert charts_of(viewer_client.get(url, {"metric": "ecc_dbe_errors"}))["gpu0"]["y_range"] == [0, 1]
    hour_row(gpus[0], 1, gpu_temp_max_c=104)  # above the top: the axis grows, the reading is not clipped
    assert charts_of(viewer_client.get(url))["gpu0"]["y_range"] == [20, 109]
    assert gpu_health.axis_range("power_mean_w", [("x", [300])]) == [0, gpu_health.POWER_CEILING_W]  # TDP unknown


def test_the_health_table_sorts_by_worst_figure(viewer_client, node):
    node, gpus, _ = node
    url = reverse("inventory:node_detail", args=[node.pk])

    def rows(**params):
        html = viewer_client.get(url, params).content.decode()
        table = html.split('id="gpu-health-table"', 1)[1].split("</table>", 1)[0]
        return [part.split('"', 1)[0] for part in table.split('data-gpu-row="')[1:]]

    # Worst first: three GPUs with a bad badge (ECC double-bit; row remap failed with NVLink errors; XID), then
    # the healthy one; among the bad ones, more bad badges first, then the table's order.
    assert rows() == ["gpu1", "gpu2", "gpu3", "gpu0"]
    assert rows(health_sort="worst") == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert rows(health_sort="-ecc_dbe_errors") == ["gpu1", "gpu0", "gpu2", "gpu3"]
    assert rows(health_sort="-nvlink_errors") == ["gpu2", "gpu0", "gpu1", "gpu3"]
    assert rows(health_sort="name") == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert rows(health_sort="bogus") == rows()  # an unknown sort: worst first
    html = viewer_client.get(url).content.decode()
    assert 'aria-sort="descending"' in html and 'href="?health_sort=worst&amp;range=7d' in html


def test_node_page_queries_do_not_grow_with_events(viewer_client, node, django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    node, gpus, _ = node
    url = reverse("inventory:node_detail", args=[node.pk])
    viewer_client.get(url)
    with CaptureQueriesContext(connection) as few:
        viewer_client.get(url)
    for gpu in gpus:
        for hours_ago in range(7, 40, 3):
            xid_event(gpu, hours_ago, 94)
    with django_assert_max_num_queries(len(few)):
        viewer_client.get(url)
