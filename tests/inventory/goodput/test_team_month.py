"""Goodput team × month (issue 37): each group split month by month (``queries.goodput_by_month_of``, the API's
``group_by=team&by=month``, the page's "month by month") gives, for a whole month, the rows of that month's own
range (``range=2026-11``): the same function, never a second computation. The losses by cause worked out by hand."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.goodput import queries, recording
from inventory.models import TelemetrySource
from inventory.telemetry.rollups import day_start
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.goodput import H, add_job

pytestmark = pytest.mark.django_db

GOODPUT, DASHBOARD = "/api/inventory/goodput/", "/inventory/goodput/"


def months_back(now, count):
    """The first day of the month ``count`` months before ``now``'s."""
    day = timezone.localdate(now).replace(day=1)
    for _ in range(count):
        day = (day - timedelta(days=1)).replace(day=1)
    return day


@pytest.fixture
def two_months(now):
    """Two teams' jobs over the two months before this one (``earlier``, ``later``) on one 8-GPU node. Times from each
    month's first midnight:

    - vision: V1 NODE_FAIL in ``earlier`` (day 3, 10:00 → 14:30, 8 GPUs); V2 a job across the months' border
      (last day of ``earlier`` 20:00 → first of ``later`` 04:00, 8 GPUs: 32 GPU-h each side); V3 PREEMPTED in
      ``later`` (day 5, 2.5 h, 4 GPUs: 0.5 h since its last hourly checkpoint × 4 = 2 GPU-h lost to preemption);
    - speech: S1 FAILED in ``later`` (day 7, 1.25 h, 8 GPUs, no fault: 0.25 × 8 = 2 GPU-h lost to user failures),
      waited 2 h in the queue (16 GPU-h of queue wait).
    """
    earlier, later = months_back(now, 2), months_back(now, 1)
    node = make_node(site=make_site(name="alpha"), node_model=make_node_model(), hostname="tm1", state="in_service")
    model = make_gpu_model(name="TM")
    for _ in range(8):
        make_gpu(node=node, gpu_model=model)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    e, lt = day_start(earlier), day_start(later)
    add_job(source, "V1", node, 8, e + 2 * 24 * H + 10 * H, e + 2 * 24 * H + 10 * H, e + 2 * 24 * H + 14.5 * H,
            "NODE_FAIL")
    add_job(source, "V2", node, 8, lt - 4 * H, lt - 4 * H, lt + 4 * H, "COMPLETED")
    add_job(source, "V3", node, 4, lt + 4 * 24 * H, lt + 4 * 24 * H, lt + 4 * 24 * H + 2.5 * H, "PREEMPTED")
    add_job(source, "S1", node, 8, lt + 6 * 24 * H - 2 * H, lt + 6 * 24 * H, lt + 6 * 24 * H + 1.25 * H, "FAILED",
            account="speech", partition="infer")
    recording.record_interruptions(e - 24 * H, now, now)
    return {"earlier": earlier, "later": later, "range": f"{earlier}..{months_back(now, 0) - timedelta(days=1)}"}


def without_month(row):
    return {key: value for key, value in row.items() if key not in ("month", "range")}


def test_team_by_month_is_each_months_own_range(two_months, now):
    earlier, later = (f"{two_months[name]:%Y-%m}" for name in ("earlier", "later"))
    rows = queries.goodput_by_month_of("team", two_months["range"], now=now)
    # Oldest month first; in a month most lost first, then by name.
    assert [(row["month"], row["name"]) for row in rows] == [(earlier, "vision"), (later, "speech"),
                                                             (later, "vision")]
    for month in (earlier, later):
        split = [without_month(row) for row in rows if row["month"] == month]
        assert split == queries.goodput_by("team", month, now=now)  # the same figures, row for row
    by_month = {(row["month"], row["name"]): row for row in rows}
    # V1 4.5 h + V2's 4 h in the earlier month, V2's other 4 h + V3 2.5 h × 4 in the later one.
    assert by_month[(earlier, "vision")]["allocated_gpu_hours"] == 8 * 4.5 + 32
    assert by_month[(later, "vision")]["allocated_gpu_hours"] == 32 + 10
    # Losses by cause: V1's node failure (0.5 h since its checkpoint × 8 = 4, and its restart wait until V2 started,
    # 18.5 h × 8, capped at 24 h) in the earlier month; preemption and user failures in the later one.
    v1 = by_month[(earlier, "vision")]
    assert (v1["interruptions"], v1["lost_run_gpu_hours"], v1["lost_node_fault_gpu_hours"],
            v1["lost_gpu_fault_gpu_hours"]) == (1, 4.0, v1["lost_gpu_hours"], 0.0)
    assert by_month[(later, "vision")]["lost_preemption_gpu_hours"] == 2.0
    speech = by_month[(later, "speech")]
    assert (speech["lost_user_gpu_hours"], speech["queue_wait_gpu_hours"], speech["user_interruptions"]) == (
        2.0, 16.0, 1)
    # The range as one: the months add up (a job across the border split between them).
    whole = {row["name"]: row for row in queries.goodput_by("team", two_months["range"], now=now)}
    assert whole["vision"]["allocated_gpu_hours"] == sum(
        row["allocated_gpu_hours"] for row in rows if row["name"] == "vision")
    assert whole["vision"]["lost_preemption_gpu_hours"] == 2.0 and whole["speech"]["lost_user_gpu_hours"] == 2.0


def test_the_api_and_the_page_split_by_month(two_months, now, viewer_api, viewer_client):
    later = f"{two_months['later']:%Y-%m}"
    body = viewer_api.get(GOODPUT, {"group_by": "team", "by": "month", "range": two_months["range"]}).json()
    assert body["by"] == "month" and len(body["groups"]) == 3
    answer = {(g["month"], g["name"]): g for g in body["groups"]}
    single = viewer_api.get(GOODPUT, {"group_by": "team", "month": later}).json()
    for group in single["groups"]:  # the later month's rows, field by field
        assert {k: v for k, v in answer[(later, group["name"])].items() if k != "month"} == group
    refused = viewer_api.get(GOODPUT, {"group_by": "month", "by": "month"})
    assert refused.status_code == 400 and "split by month already" in refused.json()["by"][0]
    assert viewer_api.get(GOODPUT, {"group_by": "team", "by": "week"}).status_code == 400

    page = viewer_client.get(DASHBOARD, {"group_by": "team", "by": "month", "range": two_months["range"]})
    html = page.content.decode()
    assert page.status_code == 200 and "Goodput by team (Slurm account) and month" in html
    assert [(g["month"], g["name"]) for g in page.context["groups"]] == list(answer)
    assert f"<td>{later}</td>" in html
    chart = page.context["chart_data"]["chart-losses"]
    assert chart["barmode"] == "stack" and f"speech · {later}" in chart["labels"]
    bars = {name: {label: value for label, value in zip(chart["labels"], series["values"], strict=True)}
            for name, series in ((series["name"], series) for series in chart["series"])}
    assert bars["user failures"][f"speech · {later}"] == 2.0
    assert bars["preemption, requeue"][f"vision · {later}"] == 2.0
    assert bars["queue wait (GPUs × wait)"][f"speech · {later}"] == 16.0
    csv = viewer_client.get(DASHBOARD, {"group_by": "team", "by": "month", "range": two_months["range"],
                                        "format": "csv"}).content.decode().splitlines()
    assert csv[0].startswith("month,team,goodput_ratio") and any(line.startswith(f"{later},speech,") for line in csv)
    error = viewer_client.get(DASHBOARD, {"group_by": "month", "by": "month"})
    assert error.status_code == 200 and "split by month already" in error.content.decode()
