"""The 90-day range (daily rows) for utilization and goodput, and goodput grouped by calendar month (UTC), on
hand-built rows whose figures are worked out in the tests."""

import pytest
from django.test.utils import override_settings
from django.utils import timezone

from inventory.goodput import queries, recording
from inventory.models import GPUDaily, TelemetrySource
from inventory.telemetry import queries as telemetry_queries
from inventory.telemetry.rollups import day_start, rollup_usage
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.goodput import MIN, H, add_job
from tests.helpers.telemetry import D, freeze_now

GOODPUT = "/api/inventory/goodput/"
DASHBOARD = "/inventory/goodput/"

pytestmark = pytest.mark.django_db


def eight_gpu_node(hostname, site=None, model=None):
    node = make_node(
        site=site or make_site(name=f"site-{hostname}"),
        node_model=make_node_model(),
        hostname=hostname,
        state="in_service",
    )
    model = model or make_gpu_model(name=f"model-{hostname}")
    return node, [make_gpu(node=node, gpu_model=model) for _ in range(8)]


def slurm_source():
    return TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")


# --- 90 days ---------------------------------------------------------------------------------------------------


def test_the_90_day_range_reads_daily_rows():
    span = telemetry_queries.RANGES["90d"]
    assert (span.label, span.periods, span.daily, span.model) == ("90 days", 90, True, GPUDaily)


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_utilization_over_90_days_by_hand(monkeypatch):
    now = freeze_now(monkeypatch)
    today = timezone.localdate(now)
    node, (gpu, *_) = eight_gpu_node("u1")
    GPUDaily.objects.bulk_create(
        [
            GPUDaily(gpu=gpu, day=today, util_mean=40, hours=10, samples=600),
            GPUDaily(gpu=gpu, day=today - 89 * D, util_mean=80, hours=20, samples=1200),  # the range's first day
            GPUDaily(gpu=gpu, day=today - 90 * D, util_mean=0, hours=24, samples=1440),  # the day before: outside
        ]
    )
    rollup_usage()
    (row,) = telemetry_queries.utilization_by("node", "90d")
    # 10 h at 40 % and 20 h at 80 %: 30 GPU-hours, mean (400 + 1600) / 30 = 66.67 %, idle 30 − 20 = 10, cost 20.
    assert (row["name"], row["gpu_hours"], row["util_mean"], row["idle_gpu_hours"], row["idle_cost"]) == (
        "u1",
        30.0,
        66.67,
        10.0,
        20.0,
    )
    (recent,) = telemetry_queries.utilization_by("node", "30d")  # only today's row
    assert (recent["gpu_hours"], recent["util_mean"]) == (10.0, 40.0)
    series = telemetry_queries.utilization_series("90d")
    assert len(series) == 90 and series[0]["time"] == today - 89 * D and series[-1]["time"] == today
    assert (series[0]["util_mean"], series[1]["util_mean"], series[-1]["util_mean"]) == (80.0, None, 40.0)


def test_goodput_over_90_days_by_hand(monkeypatch):
    now = freeze_now(monkeypatch)
    first_day = day_start(timezone.localdate(now) - 89 * D)  # where the 90d range starts
    node, _ = eight_gpu_node("g1")
    source = slurm_source()
    # A job on 8 GPUs from 5 days before the range to 4 days 6.5 h into it, ended by a node failure; the team's
    # next job started 1 h later and ran 2 h.
    start, end = first_day - 5 * D, first_day + 4 * D + 6.5 * H
    add_job(source, "1", node, 8, start, start, end, "NODE_FAIL")
    add_job(source, "2", node, 8, end + H, end + H, end + 3 * H, "COMPLETED")
    recording.record_interruptions(start, now + MIN, now)
    (vision,) = queries.goodput_by("team", "90d", now=now)
    # In the range: 8 × 102.5 h + 8 × 2 h = 836 GPU-hours. The run was 9 d 6.5 h: with a checkpoint each hour
    # 0.5 h × 8 = 4 GPU-hours of work lost, and the 1 h wait × 8 = 8; goodput (836 − 4) / 836 = 0.9952.
    assert (
        vision["allocated_gpu_hours"],
        vision["interruptions"],
        vision["lost_run_gpu_hours"],
        vision["lost_wait_gpu_hours"],
        vision["goodput_ratio"],
    ) == (836.0, 1, 4.0, 8.0, 0.9952)
    # 1 interruption per 836 / 24 GPU-days: 28.71 per 1,000.
    assert vision["interruptions_per_1000_gpu_days"] == 28.71
    # 30 days: neither job ran in them.
    assert queries.goodput_by("team", "30d", now=now) == []


def test_the_apis_and_dashboards_offer_90_days(viewer_api, viewer_client):
    assert viewer_api.get(GOODPUT, {"range": "90d"}).json()["range"] == "90d"
    assert viewer_api.get("/api/inventory/utilization/", {"range": "90d"}).status_code == 200
    assert viewer_api.get("/api/inventory/interruptions/", {"range": "90d"}).status_code == 200
    for url in (DASHBOARD, "/inventory/utilization/"):
        page = viewer_client.get(url, {"range": "90d"}).content.decode()
        assert 'value="90d" checked' in page, url
