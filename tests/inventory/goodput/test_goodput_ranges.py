"""The 90-day range (daily rows) for utilization and goodput, and goodput grouped by calendar month (UTC), on
hand-built rows whose figures are worked out in the tests."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from inventory.goodput import queries, recording
from inventory.models import GPUDaily, TelemetrySource
from inventory.telemetry import queries as telemetry_queries
from inventory.telemetry.rollups import day_start, rollup_usage
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.goodput import MIN, H, add_job
from tests.helpers.telemetry import D, freeze_now, read_csv

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


# --- Grouping by month ------------------------------------------------------------------------------------------

NOW = datetime(2026, 11, 20, 12, 30, tzinfo=UTC)


def at(month, day, hour, minute=0):
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def month_fleet(monkeypatch):
    """Around the night of 31 October 2026 (UTC), team vision, partition train; now is 20 November 12:30.

    ===  ====  ====  ==============  ==============  ===============  =========
    job  node  GPUs  submit          start           end              state
    ===  ====  ====  ==============  ==============  ===============  =========
    A    n1    8     10-31 21:00     10-31 22:00     11-01 04:00      COMPLETED
    B    n2    4     10-31 22:30     10-31 22:30     11-01 00:15      NODE_FAIL
    C    n2    4     11-01 00:15     11-01 01:15     11-01 02:15      COMPLETED (the team's next job after B)
    ===  ====  ====  ==============  ==============  ===============  =========
    """
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    n1, _ = eight_gpu_node("n1")
    n2, _ = eight_gpu_node("n2")
    source = slurm_source()
    add_job(source, "A", n1, 8, at(10, 31, 21), at(10, 31, 22), at(11, 1, 4), "COMPLETED")
    add_job(source, "B", n2, 4, at(10, 31, 22, 30), at(10, 31, 22, 30), at(11, 1, 0, 15), "NODE_FAIL")
    add_job(source, "C", n2, 4, at(11, 1, 0, 15), at(11, 1, 1, 15), at(11, 1, 2, 15), "COMPLETED")
    recording.record_interruptions(at(10, 1, 0), NOW + MIN, NOW)
    return {"n1": n1, "n2": n2, "source": source}


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_goodput_by_month_by_hand(month_fleet):
    october, november = queries.goodput_by("month", "30d", now=NOW)
    # A: 22:00 → 04:00 on 8 GPUs: 2 h × 8 = 16 GPU-h in October, 4 h × 8 = 32 in November.
    # B: 22:30 → 00:15 on 4 GPUs: 1.5 h × 4 = 6 in October, 0.25 h × 4 = 1 in November; C: 1 h × 4 = 4 in November.
    # B ran 1.75 h, a checkpoint each hour: its last 0.75 h (23:30 → 00:15) × 4 = 3 GPU-h of work lost, 2 of them in
    # October, 1 in November; the team's next job (C) started 1 h after: 4 GPU-h of wait, in November (B ended then).
    assert (
        october["key"],
        october["name"],
        october["allocated_gpu_hours"],
        october["interruptions"],
        october["lost_run_gpu_hours"],
        october["lost_wait_gpu_hours"],
        october["lost_cost"],
    ) == ("2026-10", "2026-10", 22.0, 0, 2.0, 0.0, 4.0)
    # October: goodput (22 − 2) / 22; queue wait A 1 h × 8 = 8 against runs in the range 6 h × 8 + 1.75 h × 4 = 55.
    assert (october["goodput_ratio"], october["queue_wait_share"], october["mtbi_hours"]) == (0.9091, 0.127, None)
    assert (
        november["key"],
        november["allocated_gpu_hours"],
        november["interruptions"],
        november["lost_run_gpu_hours"],
        november["lost_wait_gpu_hours"],
        november["lost_gpu_hours"],
        november["lost_cost"],
    ) == ("2026-11", 37.0, 1, 1.0, 4.0, 5.0, 10.0)
    # November: goodput (37 − 1) / 37; 1 per 37 / 24 GPU-days = 648.65 per 1,000; C waited 1 h × 4 against 1 h × 4.
    assert (november["goodput_ratio"], november["interruptions_per_1000_gpu_days"], november["queue_wait_share"]) == (
        0.973,
        648.65,
        0.5,
    )
    # The months add up to the team's figures over the same range.
    (vision,) = queries.goodput_by("team", "30d", now=NOW)
    assert (vision["allocated_gpu_hours"], vision["lost_run_gpu_hours"], vision["lost_gpu_hours"]) == (59.0, 3.0, 7.0)


def test_every_month_of_the_range_has_a_row_oldest_first(month_fleet):
    year = queries.goodput_by("month", "1y", now=NOW)  # from 21 November 2025
    assert [g["name"] for g in year] == [f"2025-{m}" for m in ("11", "12")] + [f"2026-{m:02d}" for m in range(1, 12)]
    assert [g["allocated_gpu_hours"] for g in year][-3:] == [0.0, 22.0, 37.0]
    assert year[0]["goodput_ratio"] is None  # no allocation: no ratio, not 0 %
    assert [g["name"] for g in queries.goodput_by("month", "24h", now=NOW)] == ["2026-11"]
    # A site filter selects the jobs that ran on its nodes (n2's: B and C).
    october, november = queries.goodput_by("month", "30d", {"site": month_fleet["n2"].site_id}, now=NOW)
    assert (october["allocated_gpu_hours"], november["allocated_gpu_hours"]) == (6.0, 5.0)


def test_goodput_api_groups_by_month_and_utilization_does_not(month_fleet, viewer_api):
    body = viewer_api.get(GOODPUT, {"group_by": "month", "range": "30d"}).json()
    assert [(g["id"], g["name"], g["allocated_gpu_hours"]) for g in body["groups"]] == [
        (None, "2026-10", 22.0),
        (None, "2026-11", 37.0),
    ]
    refused = viewer_api.get("/api/inventory/utilization/", {"group_by": "month"})
    assert refused.status_code == 400
    assert refused.json()["group_by"] == [
        "Unknown group_by 'month'; use one of site, partition, gpu_model, team, node."
    ]
    assert "month" in viewer_api.get(GOODPUT, {"group_by": "rack"}).json()["group_by"][0]
    # The interruptions list filters by the month they ended in.
    listed = viewer_api.get("/api/inventory/interruptions/", {"month": "2026-11"}).json()["results"]
    assert [row["job_id"] for row in listed] == ["B"]
    assert viewer_api.get("/api/inventory/interruptions/", {"month": "2026-10"}).json()["results"] == []
    assert "month" in viewer_api.get("/api/inventory/interruptions/", {"month": "2026-13"}).json()


def test_dashboard_and_csv_by_month(month_fleet, viewer_client):
    page = viewer_client.get(DASHBOARD, {"group_by": "month", "range": "30d"}).content.decode()
    assert "Goodput by month" in page and page.index("<td>2026-10</td>") < page.index("<td>2026-11</td>")
    assert '<option value="month" selected>' in page
    link = "/inventory/interruptions/?cause=infrastructure&amp;month=2026-11&amp;range=30d"
    assert f'<a href="{link}">1</a>' in page
    listed = viewer_client.get(link.replace("&amp;", "&")).content.decode()
    assert ">B<" in listed
    rows = read_csv(viewer_client.get(DASHBOARD, {"group_by": "month", "range": "30d", "format": "csv"}))
    assert rows[0][:3] == ["month", "goodput_ratio", "allocated_gpu_hours"]
    assert [(row[0], row[1], row[2]) for row in rows[1:]] == [
        ("2026-10", "0.9091", "22.0"),
        ("2026-11", "0.973", "37.0"),
    ]


def more_months_jobs(month_fleet, numbers):
    """More nodes, each with a job across the month boundary ended by a node failure."""
    for i in numbers:
        node, _ = eight_gpu_node(f"x{i}")
        add_job(
            month_fleet["source"],
            f"x{i}",
            node,
            8,
            at(10, 31, 20),
            at(10, 31, 20),
            at(11, 1, 3),
            "NODE_FAIL",
            f"t{i}",
            f"p{i}",
        )
    recording.record_interruptions(at(10, 1, 0), NOW + MIN, NOW)


def test_month_grouping_queries_do_not_grow_with_the_fleet(month_fleet, viewer_api, django_assert_max_num_queries):
    params = {"group_by": "month", "range": "90d"}
    more_months_jobs(month_fleet, range(1))
    viewer_api.get(GOODPUT, params)  # the token's first use is recorded once
    with CaptureQueriesContext(connection) as small:
        assert viewer_api.get(GOODPUT, params).status_code == 200
    more_months_jobs(month_fleet, range(1, 15))
    with django_assert_max_num_queries(len(small)):
        body = viewer_api.get(GOODPUT, params).json()
    assert [g["interruptions"] for g in body["groups"]] == [0, 0, 0, 16]  # Aug., Sep., Oct., Nov.


def test_interruptions_page_filters_by_month_and_says_what_is_wrong(month_fleet, viewer_client):
    page = viewer_client.get("/inventory/interruptions/", {"month": "2026-11"}).content.decode()
    assert ">B</a>" in page
    assert ">B</a>" not in viewer_client.get("/inventory/interruptions/", {"month": "2026-10"}).content.decode()
    refused = viewer_client.get("/inventory/interruptions/", {"month": "November"})
    assert "Enter a month as YYYY-MM, e.g. 2026-11." in refused.content.decode()
