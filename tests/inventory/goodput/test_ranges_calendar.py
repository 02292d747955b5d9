"""Calendar ranges (issue 37): ``last_month``, a month (``2026-11``) and dates (``start``/``end``) on the goodput and
utilization reports, pages and API alike (``inventory.telemetry.ranges``): their bounds, the figures they read, and
every bad value a clear form error or a 400 that names the field, never a 500."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.goodput import queries
from inventory.models import GPUDaily, TelemetrySource
from inventory.telemetry import queries as telemetry_queries
from inventory.telemetry import ranges
from inventory.telemetry.rollups import day_start, rollup_usage
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.goodput import H, add_job

pytestmark = pytest.mark.django_db

GOODPUT, UTILIZATION = "/api/inventory/goodput/", "/api/inventory/utilization/"
PAGES = ("/inventory/goodput/", "/inventory/utilization/")
D = timedelta(days=1)


def last_month_days(now):
    last = timezone.localdate(now).replace(day=1) - D
    return last.replace(day=1), last


def test_last_month_a_month_and_dates_are_whole_local_days(now):
    first, last = last_month_days(now)
    span = ranges.get_range("last_month")
    assert (span.start(now), span.end(now)) == (day_start(first), day_start(last + D))
    assert span.buckets(now) == [first + i * D for i in range((last - first).days + 1)] and span.daily
    assert span.short == "last month" and span.phrase == "last month"
    month = ranges.get_range(f"{first:%Y-%m}")
    assert (month.start(now), month.end(now), month.buckets(now)) == (span.start(now), span.end(now),
                                                                      span.buckets(now))
    dates = ranges.get_range(f"{first}..{first + 2 * D}")
    assert (dates.start(now), dates.end(now), len(dates.buckets(now))) == (day_start(first), day_start(first + 3 * D),
                                                                           3)
    # This month: until now, its buckets until today.
    this = ranges.get_range(f"{timezone.localdate(now):%Y-%m}")
    assert this.end(now) == now and this.buckets(now)[-1] == timezone.localdate(now)
    assert ranges.get_range("7d").end(now) == now  # a rolling range ends now, as before


@pytest.mark.parametrize("key, message", [
    ("2026-13", "Enter a month as YYYY-MM"),
    ("9999-12", "Enter a year from 1900 to 2999."),
    ("0000-01", "Enter a year from 1900 to 2999."),
    ("2026-02-30..2026-03-01", "Enter a date as YYYY-MM-DD"),
    ("2026-03-02..2026-03-01", "The end date is before the start date."),
    ("2024-01-01..2025-01-02", "Choose at most 366 days."),
    ("2999-01", "begins after today"),
    ("2w", "Unknown range '2w'; use one of 24h, 7d, 30d, 90d, 1y, last_month, a month"),
    ("a\x00b", "Unknown range"),
    ("x" * 10_240, "Unknown range"),
])
def test_bad_ranges_say_why(key, message):
    with pytest.raises(ranges.UnknownParameter, match=message.replace("(", r"\(").replace(")", r"\)")):
        ranges.get_range(key)


@pytest.mark.parametrize("params, field, message", [
    ({"range": "2w"}, "range", "Unknown range '2w'"),
    ({"month": "2026-13"}, "month", "Enter a month as YYYY-MM"),
    ({"month": "2026-11-01"}, "month", "no more than 7 characters"),
    ({"start": "2026-11-05"}, "start", "Give both the start and the end date"),
    ({"start": "2026-11-05", "end": "2026-11-01"}, "start", "The end date is before the start date."),
    ({"start": "0000-01-01", "end": "0000-01-01"}, "start", "Enter a date as YYYY-MM-DD"),
    ({"start": "9999-12-31", "end": "9999-12-31"}, "start", "Enter a year from 1900 to 2999."),
    ({"month": "a\x00b"}, None, None),  # refused before the view (portal.middleware), JSON all the same
])
@pytest.mark.parametrize("url", [GOODPUT, UTILIZATION])
def test_the_apis_answer_a_bad_range_with_a_400_naming_the_field(viewer_api, url, params, field, message):
    response = viewer_api.get(url, params)
    assert response.status_code == 400, response.content
    assert field is None and response.json() or message in response.json()[field][0]


@pytest.mark.parametrize("params, message", [
    ({"month": "2026-13"}, "Enter a month as YYYY-MM"),
    ({"start": "2026-11-05", "end": "2026-11-01"}, "The end date is before the start date."),
    ({"range": "2w"}, "Unknown range"),
    ({"start": "9999-12-31", "end": "9999-12-31"}, "Enter a year from 1900 to 2999."),
])
@pytest.mark.parametrize("page", PAGES)
def test_the_pages_show_a_bad_range_as_a_form_error_and_the_default_range(viewer_client, page, params, message):
    response = viewer_client.get(page, params)
    html = response.content.decode()
    assert response.status_code == 200 and message in html and 'class="error" role="alert"' in html


@pytest.fixture
def jobs_around_last_month(now):
    """One 8-GPU node; vision's jobs: A across the start of last month (4 h before, 4 h inside), B inside it (10 h),
    C this month (2 h, unless today is the 1st: then just before now)."""
    first, last = last_month_days(now)
    node = make_node(site=make_site(name="s"), node_model=make_node_model(), hostname="c1", state="in_service")
    model = make_gpu_model(name="CM")
    gpus = [make_gpu(node=node, gpu_model=model) for _ in range(8)]
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    begin = day_start(first)
    add_job(source, "A", node, 8, begin - 4 * H, begin - 4 * H, begin + 4 * H, "COMPLETED")
    add_job(source, "B", node, 8, begin + 9 * 24 * H, begin + 9 * 24 * H, begin + 9 * 24 * H + 10 * H, "COMPLETED")
    add_job(source, "C", node, 8, now - 2 * H, now - 2 * H, now - H, "COMPLETED")
    return {"first": first, "last": last, "gpu": gpus[0]}


def test_goodput_over_last_month_counts_its_part_of_the_runs(jobs_around_last_month, now, viewer_api, viewer_client):
    first = jobs_around_last_month["first"]
    (vision,) = queries.goodput_by("team", "last_month", now=now)
    assert vision["allocated_gpu_hours"] == 8 * 4 + 8 * 10  # A's part inside, B; not C
    assert queries.goodput_by("team", f"{first:%Y-%m}", now=now) == [vision]
    body = viewer_api.get(GOODPUT, {"group_by": "team", "range": "last_month"}).json()
    assert body["range"] == "last_month" and body["groups"][0]["allocated_gpu_hours"] == 112.0
    assert body["start"].startswith(f"{first}") and body["end"].startswith(f"{jobs_around_last_month['last'] + D}")
    same = viewer_api.get(GOODPUT, {"group_by": "team", "month": f"{first:%Y-%m}"}).json()
    assert same["range"] == f"{first:%Y-%m}" and same["groups"] == body["groups"]
    dates = viewer_api.get(GOODPUT, {"group_by": "team", "start": f"{first}", "end": f"{first}"}).json()
    assert dates["range"] == f"{first}..{first}" and dates["groups"][0]["allocated_gpu_hours"] == 32.0  # A's 4 h
    page = viewer_client.get("/inventory/goodput/", {"range": "last_month", "group_by": "team"})
    html = page.content.decode()
    assert page.context["range_key"] == "last_month" and 'id="range-phrase">last month<' in html
    assert 'value="last_month" checked' in html and "<span>last month</span>" in html
    month_page = viewer_client.get("/inventory/goodput/", {"month": f"{first:%Y-%m}", "group_by": "team"})
    assert month_page.context["groups"][0]["allocated_gpu_hours"] == 112.0


def test_utilization_over_last_month_reads_its_daily_rows(jobs_around_last_month, now, viewer_api, viewer_client):
    first, last, gpu = (jobs_around_last_month[name] for name in ("first", "last", "gpu"))
    GPUDaily.objects.bulk_create([
        GPUDaily(gpu=gpu, day=first, util_mean=50, hours=10, samples=600),
        GPUDaily(gpu=gpu, day=last, util_mean=100, hours=10, samples=600),
        GPUDaily(gpu=gpu, day=first - D, util_mean=0, hours=24, samples=1440),  # the month before: outside
        GPUDaily(gpu=gpu, day=timezone.localdate(now), util_mean=0, hours=1, samples=60),  # this month: outside
    ])
    rollup_usage()
    (row,) = telemetry_queries.utilization_by("node", "last_month", now=now)
    assert (row["gpu_hours"], row["util_mean"]) == (20.0, 75.0)
    series = telemetry_queries.utilization_series("last_month", now=now)
    assert (series[0]["time"], series[-1]["time"], series[0]["util_mean"]) == (first, last, 50.0)
    body = viewer_api.get(UTILIZATION, {"group_by": "node", "range": "last_month"}).json()
    assert (body["rollup"], body["groups"][0]["gpu_hours"]) == ("daily", 20.0)
    page = viewer_client.get("/inventory/utilization/", {"month": f"{first:%Y-%m}"})
    assert page.status_code == 200 and f"mean GPU utilization, {first:%Y-%m}" in page.content.decode()
