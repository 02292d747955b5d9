"""Telemetry in the pages: the utilization queries on a tiny fleet whose figures are worked out by hand, the
dashboard (ranges, filters, htmx, CSV, staleness, empty state, constant queries), the node page's GPU chart
and the telemetry source pages (token never echoed, status, unknown GPUs, "Pull now", permissions)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from inventory.models import GPUDaily, GPUHourly, SlurmJob, Team, TelemetrySource, UnknownSeries
from inventory.telemetry import charts, queries, slurm_figures, tasks
from tests.helpers.telemetry import DASHBOARD, HTMX, D, H, add_fleet, freeze_now, make_fleet, read_csv


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


@pytest.fixture
def fleet(db, now):
    return make_fleet(now)


def by_name(groups):
    return {g["name"]: g for g in groups}


# --- Queries --------------------------------------------------------------------------------------


def test_ranges_read_hourly_rows_for_days_and_daily_rows_for_months():
    assert [(key, r.model, r.periods) for key, r in queries.RANGES.items()] == [
        ("24h", GPUHourly, 24), ("7d", GPUHourly, 168), ("30d", GPUDaily, 30), ("90d", GPUDaily, 90),
        ("1y", GPUDaily, 365)]


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_utilization_by_site_matches_the_hand_computed_figures(fleet, now):
    sites = by_name(queries.utilization_by("site", "7d"))
    # alpha: 3 GPU-hours at 80, 40, 20 -> mean 46.67 %, idle 3 - 1.4 = 1.6 GPU-hours, 3.20 at 2.0 per GPU-hour.
    assert sites["alpha"] == {"key": fleet["alpha"].pk, "name": "alpha", "gpus": 2, "gpu_hours": 3.0,
                              "util_mean": 46.67, "idle_gpu_hours": 1.6, "idle_cost": 3.2,
                              "idle_gpu_hours_at_default_cost": 1.6}
    # beta: the hour without a reading is not an idle hour: 1 GPU-hour at 50 %.
    assert sites["beta"] == {"key": fleet["beta"].pk, "name": "beta", "gpus": 1, "gpu_hours": 1.0,
                             "util_mean": 50.0, "idle_gpu_hours": 0.5, "idle_cost": 1.0,
                             "idle_gpu_hours_at_default_cost": 0.5}


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_daily_ranges_weight_each_day_by_its_hours(fleet):
    (alpha,) = queries.utilization_by("site", "30d")
    # 10 h at 30 % and 20 h at 60 %: mean (300 + 1200) / 30 = 50 %, idle 15 GPU-hours.
    assert (alpha["name"], alpha["gpu_hours"], alpha["util_mean"], alpha["idle_gpu_hours"], alpha["idle_cost"]) == (
        "alpha", 30.0, 50.0, 15.0, 30.0)


def test_grouping_by_partition_gpu_model_team_and_node(fleet):
    assert {g["name"]: g["util_mean"] for g in queries.utilization_by("partition", "24h")} == {
        "train": 46.67, "infer": 50.0}
    assert {g["name"]: g["gpu_hours"] for g in queries.utilization_by("gpu_model", "24h")} == {"M1": 3.0, "M2": 1.0}
    assert {g["name"] for g in queries.utilization_by("team", "24h")} == {"vision", "speech"}
    nodes = queries.least_used_nodes("24h")
    assert [(n["name"], n["util_mean"], n["site"]) for n in nodes] == [("a1", 46.67, "alpha"), ("b1", 50.0, "beta")]
    with pytest.raises(queries.UnknownParameter, match="use one of site, partition"):
        queries.utilization_by("rack", "24h")


def test_filters_narrow_every_figure(fleet):
    assert [g["name"] for g in queries.utilization_by("node", "7d", {"site": fleet["beta"].pk})] == ["b1"]
    assert [g["name"] for g in queries.utilization_by("site", "7d", {"gpu_model": fleet["m1"]})] == ["alpha"]
    assert [g["name"] for g in queries.utilization_by("site", "7d", {"partition": "infer"})] == ["beta"]
    assert [g["name"] for g in queries.utilization_by("site", "7d", {"team": "vision", "partition": ""})] == ["alpha"]
    assert queries.utilization_by("site", "7d", {"team": "nobody"}) == []


def test_series_has_a_gap_not_a_zero_where_no_rows_are(fleet, now):
    series = queries.utilization_series("24h")
    assert len(series) == 24 and series[-1]["time"] == fleet["h"]
    points = {p["time"]: p for p in series}
    h = fleet["h"]
    assert points[h - H] == {"time": h - H, "util_mean": 50.0, "gpus_reporting": 3}  # (80 + 20 + 50) / 3
    assert points[h - 2 * H]["util_mean"] == 40.0
    assert points[h - 3 * H]["util_mean"] is None  # a row without a reading: missing, not 0 %
    assert points[h]["util_mean"] is None and points[h]["gpus_reporting"] is None  # no rows: a gap


def test_heatmap_rows_least_used_first_with_gaps(fleet, now):
    data = queries.heatmap("24h")
    assert [row["name"] for row in data["rows"]] == ["a1", "b1"]
    a1 = dict(zip(data["times"], data["values"][0], strict=True))
    h = fleet["h"]
    assert (a1[h - H], a1[h - 2 * H], a1[h]) == (50.0, 40.0, None)
    by_gpu = queries.heatmap("24h", by="gpu", limit=2)
    assert [row["name"] for row in by_gpu["rows"]] == ["a1/gpu1", "b1/gpu0"]  # 20 %, 50 % (a1/gpu0: 60 %)


def test_queue_waits_by_partition_of_jobs_started_in_the_range(fleet, now):
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/jobs")
    for job_id, wait, partition in [("1", 10, "train"), ("2", 30, "train"), ("3", 60, "infer")]:
        SlurmJob.objects.create(source=source, job_id=job_id, partition=partition, submit_time=now - 5 * H,
                                start_time=now - 5 * H + timedelta(minutes=wait), gpus=8)
    SlurmJob.objects.create(source=source, job_id="old", partition="train", submit_time=now - 40 * D,
                            start_time=now - 39 * D)
    waits = {row["partition"]: row for row in slurm_figures.queue_waits("7d")}
    assert waits["train"]["jobs"] == 2 and waits["train"]["p50_hours"] == pytest.approx(20 / 60)
    assert waits["infer"]["p95_hours"] == pytest.approx(1.0)
    assert [row["partition"] for row in slurm_figures.queue_waits("7d", {"partition": "infer"})] == ["infer"]


def test_without_jobs_the_slurm_figures_cost_one_query(fleet, django_assert_num_queries):
    dashboard = charts.FleetDashboard("30d")
    with django_assert_num_queries(1):
        figures = (dashboard.queue_waits, dashboard.allocations_by_team, dashboard.allocations_by_partition,
                   dashboard.allocation_totals)
    assert figures == ([], [], [], {"gpu_hours": 0, "jobs": 0, "multi_node_share": None})


# --- Dashboard page -------------------------------------------------------------------------------


def test_dashboard_shows_every_chart_for_a_viewer(viewer_client, fleet):
    response = viewer_client.get(DASHBOARD)
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" in page and 'id="dashboard"' in page
    for name in ("utilization", "heatmap", "by-site", "by-partition", "by-gpu-model", "by-team", "queue-wait"):
        assert f'id="chart-{name}"' in page, name
    assert 'data-chart="timeseries"' in page and 'data-chart="heatmap"' in page and 'data-chart="hbar"' in page
    assert "<script>" not in page and "onclick" not in page  # charts come from JSON data, no inline code
    assert fleet["a1"].get_absolute_url() in page  # least-used nodes link to their pages
    assert response.context["totals"]["gpu_hours"] == 4.0
    assert "Utilization" in page.split("</nav>")[0]  # in the main menu


@override_settings(IDLE_GPU_HOUR_COST=2.0, COST_CURRENCY="E&R")
def test_the_tables_rows_are_escaped_and_write_the_figures_by_hand(viewer_client, fleet):
    """The group and least-used rows are drawn in Python (``inventory/templatetags/telemetry.py``): names are
    escaped as the template escaped them, figures written as ``decimals:1`` and ``whole`` write them. a1 over 24
    hours: 80 % and 40 % on gpu0, 20 % on gpu1: 3 GPU-hours at 46.67 %, 1.6 idle, priced 3.2."""
    fleet["alpha"].name = "<i>alpha</i> & co"
    fleet["alpha"].save()
    # A name kept from before teams were validated (``Team.objects.create`` does not validate).
    fleet["a1"].partition, fleet["a1"].owner_team = 'tr"ain<', Team.objects.create(name="<script>x</script>")
    fleet["a1"].save()
    page = viewer_client.get(DASHBOARD + "?range=24h").content.decode()
    assert "<i>alpha" not in page and "<script>x" not in page
    assert ("<tr><td>&lt;i&gt;alpha&lt;/i&gt; &amp; co</td><td>2</td><td>46.7</td><td>3</td><td>2</td>"
            "<td>3 E&amp;R</td></tr>") in page
    assert ("<tr><td>&lt;script&gt;x&lt;/script&gt;</td><td>2</td><td>46.7</td><td>3</td><td>2</td>"
            "<td>3 E&amp;R</td></tr>") in page  # by team
    assert (f'<tr><td><a href="{fleet["a1"].get_absolute_url()}">a1</a></td><td>In service</td>'
            "<td>tr&quot;ain&lt;</td><td>&lt;script&gt;x&lt;/script&gt;</td><td>46.7</td><td>2</td><td>3 E&amp;R</td>"
            "</tr>") in page
    nothing = f"?range=24h&site={fleet['beta'].pk}&gpu_model={fleet['m1'].pk}"  # beta's GPUs are M2s
    empty = viewer_client.get(DASHBOARD + nothing).content.decode()
    assert "No utilization reported in this range." in empty and "No node reported utilization" in empty


def test_dashboard_without_telemetry_invites_to_add_a_source(manager_client, viewer):
    response = manager_client.get(DASHBOARD)
    assert response.status_code == 200
    page = response.content.decode()
    assert "No telemetry yet" in page and reverse("inventory:telemetrysource_add") in page
    assert "data-chart" not in page and "plotly" not in page
    manager_client.force_login(viewer)  # a viewer is shown the sources, not a form it may not use
    page = manager_client.get(DASHBOARD).content.decode()
    assert "No telemetry yet" in page and reverse("inventory:telemetrysource_add") not in page


def test_range_switch_reads_hourly_or_daily_rows(viewer_client, fleet):
    hourly = viewer_client.get(DASHBOARD, {"range": "24h"})
    assert hourly.context["span"].model is GPUHourly and hourly.context["totals"]["gpu_hours"] == 4.0
    daily = viewer_client.get(DASHBOARD, {"range": "30d"})
    assert daily.context["span"].model is GPUDaily and daily.context["totals"]["gpu_hours"] == 30.0
    assert viewer_client.get(DASHBOARD, {"range": "nonsense"}).context["span"].key == queries.DEFAULT_RANGE


def test_filters_narrow_the_dashboard(viewer_client, fleet):
    response = viewer_client.get(DASHBOARD, {"site": fleet["beta"].pk, "range": "24h"})
    assert response.context["totals"]["gpu_hours"] == 1.0
    assert [row["name"] for row in response.context["least_used"]] == ["b1"]
    response = viewer_client.get(DASHBOARD, {"team": "vision", "gpu_model": fleet["m1"].pk})
    assert response.context["totals"]["gpus"] == 2
    page = response.content.decode()
    assert '<option value="vision" selected>' in page and '<option value="train">' in page


def test_htmx_request_gets_only_the_charts_fragment(viewer_client, fleet):
    response = viewer_client.get(DASHBOARD, {"range": "24h"}, **HTMX)
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page and "utilization-filters" not in page
    assert 'id="chart-utilization"' in page and "format=csv&amp;chart=utilization" in page
    assert "range=24h" in page  # CSV links keep the range and filters


@override_settings(IDLE_GPU_HOUR_COST=2.0, COST_CURRENCY="EUR")
@pytest.mark.parametrize("chart", charts.CHARTS)
def test_every_chart_downloads_its_figures_as_csv(viewer_client, fleet, chart):
    response = viewer_client.get(DASHBOARD, {"range": "24h", "format": "csv", "chart": chart})
    assert response.status_code == 200
    rows = read_csv(response)
    assert f"utilization-{chart}-24h.csv" in response["Content-Disposition"]
    header, body = rows[0], rows[1:]
    expected = {
        "utilization": (["time", "mean_utilization_percent", "gpus_reporting"], 24),
        "heatmap": (["node", "time", "mean_utilization_percent"], 2 * 24),
        "by-site": (["site", "gpus", "gpu_hours", "mean_utilization_percent", "idle_gpu_hours", "idle_cost_EUR"], 2),
        "by-partition": (["partition", "gpus", "gpu_hours", "mean_utilization_percent", "idle_gpu_hours",
                          "idle_cost_EUR"], 2),
        "by-gpu-model": (["gpu_model", "gpus", "gpu_hours", "mean_utilization_percent", "idle_gpu_hours",
                          "idle_cost_EUR"], 2),
        "by-team": (["team", "gpus", "gpu_hours", "mean_utilization_percent", "idle_gpu_hours", "idle_cost_EUR"], 2),
        "queue-wait": (["partition", "jobs", "p50_hours", "p95_hours"], 0),
        "allocations-by-team": (["team", "jobs", "allocated_gpu_hours"], 0),
        "allocations-by-partition": (["partition", "jobs", "allocated_gpu_hours", "multi_node_gpu_hours",
                                      "multi_node_share_percent", "observed_gpu_hours", "mean_utilization_percent",
                                      "used_gpu_hours"], 0),
        "least-used": (["node", "state", "site", "partition", "team", "gpus", "gpu_hours", "mean_utilization_percent",
                        "idle_gpu_hours", "idle_cost_EUR"], 2),
    }[chart]
    assert (header, len(body)) == expected
    if chart == "by-site":
        assert body[0] == ["alpha", "2", "3.0", "46.67", "1.6", "3.2"]
    if chart == "utilization":
        assert body[-1] == [fleet["h"].isoformat(), "", ""]  # a gap is an empty cell, not 0
        assert body[-2] == [(fleet["h"] - H).isoformat(), "50.0", "3"]


def test_unknown_chart_is_404(viewer_client, fleet):
    assert viewer_client.get(DASHBOARD, {"format": "csv", "chart": "pie"}).status_code == 404


def test_stale_source_gets_a_banner_and_its_missing_hours_stay_gaps(viewer_client, fleet, now):
    source = fleet["source"]
    source.stale_since = now - 2 * H
    source.synced_until = fleet["h"] - H
    source.consecutive_failures = 3
    source.last_error = "connection refused"
    source.save()
    response = viewer_client.get(DASHBOARD, {"range": "24h"})
    page = response.content.decode()
    assert "is stale since" in page and "not as idle" in page
    assert "connection refused" not in page  # the reason is for managers (test_outbound)
    chart = response.context["chart_data"]["chart-utilization"]
    assert chart["series"][0]["y"][-1] is None  # the current hour has no rows: a gap, not 0
    assert chart["stale_from"] == charts.time_label(fleet["h"] - H)
    assert [s.name for s in queries.stale_sources()] == ["prom"]
    source.enabled = False
    source.save()
    assert queries.stale_sources() == []


def test_viewer_without_role_is_refused(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody", password="pw"))
    assert client.get(DASHBOARD).status_code == 403


@pytest.mark.parametrize("params", [{"range": "7d"}, {"range": "1y", "heatmap": "gpu"},
                                    {"range": "24h", "team": "small-t1"}])
def test_dashboard_query_count_is_constant(viewer_client, django_assert_max_num_queries, now, params):
    TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090")
    add_fleet(2, now, "small")
    viewer_client.get(DASHBOARD, params)  # warm-up: session, content types
    with CaptureQueriesContext(connection) as few:
        assert viewer_client.get(DASHBOARD, params).status_code == 200
    add_fleet(25, now, "large")
    with django_assert_max_num_queries(len(few)):
        response = viewer_client.get(DASHBOARD, params)
    assert len(response.context["least_used"]) == (1 if "team" in params else 10)


# --- Node page ------------------------------------------------------------------------------------


def test_node_page_shows_one_line_per_gpu_with_gaps_and_its_csv(viewer_client, fleet):
    a1 = fleet["a1"]
    response = viewer_client.get(a1.get_absolute_url())
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="gpu-utilization"' in page and 'data-source="gpu-utilization-data"' in page
    chart = response.context["gpu_chart"]
    lines = chart["data"]["series"]
    assert [line["name"] for line in lines] == ["gpu0", "gpu1"]
    assert lines[0]["y"][-3:] == [40.0, 80.0, None] and lines[1]["y"][-3:] == [None, 20.0, None]
    download = viewer_client.get(a1.get_absolute_url() + chart["csv_url"])
    rows = read_csv(download)
    assert rows[0] == ["gpu", "time", "mean_utilization_percent"]
    assert ["gpu0", (fleet["h"] - H).isoformat(), "80.0"] in rows
    assert len(rows) == 1 + 2 * 168


def test_node_page_without_telemetry_says_so(viewer_client, fleet):
    page = viewer_client.get(fleet["b2"].get_absolute_url()).content.decode()
    assert "No utilization reported for this node" in page and "plotly" not in page


# --- Telemetry source pages -----------------------------------------------------------------------

SOURCE_FORM = {"name": "dcgm-zrh", "kind": "prometheus", "url": "http://prom.zrh:9090", "enabled": "on",
               "interval_seconds": 300, "timeout_seconds": 10, "backfill_hours": 168, "auth_token": "s3cret-token"}


def test_manager_creates_a_source_and_the_token_is_never_echoed(manager_client):
    response = manager_client.post(reverse("inventory:telemetrysource_add"), SOURCE_FORM)
    source = TelemetrySource.objects.get(name="dcgm-zrh")
    assert response.status_code == 302 and response.url == source.get_absolute_url()
    assert source.auth_token == "s3cret-token"
    for url in (source.get_absolute_url(), source.get_edit_url(), reverse("inventory:telemetrysource_list")):
        page = manager_client.get(url).content.decode()
        assert "s3cret-token" not in page, url
    assert 'type="password"' in manager_client.get(source.get_edit_url()).content.decode()
    # Saving the form without a token keeps the saved one; a new one replaces it; the history never keeps it.
    manager_client.post(source.get_edit_url(), {**SOURCE_FORM, "auth_token": "", "interval_seconds": 60,
                                                 "user_name": "slurm"})
    source.refresh_from_db()
    assert (source.auth_token, source.interval_seconds, source.user_name) == ("s3cret-token", 60, "slurm")
    assert "X-SLURM-USER-NAME" in manager_client.get(source.get_absolute_url()).content.decode()
    manager_client.post(source.get_edit_url(), {**SOURCE_FORM, "auth_token": "n3w-token"})
    source.refresh_from_db()
    assert source.auth_token == "n3w-token"
    page = manager_client.get(source.get_absolute_url()).content.decode()
    assert "n3w-token" not in page and "s3cret-token" not in page
    assert not any("token" in str(value) for value in source.history.values_list(flat=False))
    manager_client.post(source.get_edit_url(), {**SOURCE_FORM, "auth_token": "", "clear_auth_token": "on"})
    source.refresh_from_db()
    assert source.auth_token == ""


def test_source_page_shows_the_state_of_its_pulls_and_unknown_gpus(viewer_client, now):
    source = TelemetrySource.objects.create(
        name="prom", kind="prometheus", url="http://prom:9090", last_error="HTTP 500 from /api/v1/query_range",
        last_error_at=now, stale_since=now - 3 * H, consecutive_failures=4, next_attempt_at=now + H,
        synced_until=now - 4 * H, last_success_at=now - 4 * H)
    UnknownSeries.objects.create(source=source, key="GPU-dead-beef", uuid="GPU-dead-beef", hostname="ghost-01",
                                 gpu_index="3")
    response = viewer_client.get(source.get_absolute_url())
    page = response.content.decode()
    assert "HTTP 500 from /api/v1/query_range" not in page and "the reason is shown to managers" in page
    assert f"stale since {timezone.localtime(now - 3 * H):%Y-%m-%d %H:%M}" in page
    assert "Unknown GPUs" in page and "ghost-01" in page and "GPU-dead-beef" in page
    assert "Recent Slurm jobs" not in page  # only for Slurm sources
    assert "Pull now" not in page  # viewers cannot pull


def test_slurm_source_page_lists_recent_jobs(viewer_client, now):
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/jobs")
    SlurmJob.objects.create(source=source, job_id="4242", partition="train", account="vision",
                            submit_time=now - 2 * H, start_time=now - H, gpus=16, node_count=2)
    page = viewer_client.get(source.get_absolute_url()).content.decode()
    assert "Recent Slurm jobs" in page and "4242" in page and "1 h 00 min" in page


def test_pull_now_queues_a_task_after_commit(manager_client, monkeypatch, django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(tasks.pull_telemetry_source, "delay", queued.append)
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090")
    with django_capture_on_commit_callbacks(execute=True):
        response = manager_client.post(reverse("inventory:telemetrysource_pull", args=[source.pk]), follow=True)
    assert queued == [source.pk]
    assert "Pull of prom queued" in response.content.decode()
    assert "Pull now" in response.content.decode()
    source.enabled = False
    source.save()
    with django_capture_on_commit_callbacks(execute=True):
        response = manager_client.post(reverse("inventory:telemetrysource_pull", args=[source.pk]), follow=True)
    assert queued == [source.pk] and "is disabled" in response.content.decode()


def test_viewer_cannot_add_edit_delete_or_pull(viewer_client, monkeypatch):
    queued = []
    monkeypatch.setattr(tasks.pull_telemetry_source, "delay", queued.append)
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090")
    assert viewer_client.get(reverse("inventory:telemetrysource_list")).status_code == 200
    assert viewer_client.get(reverse("inventory:telemetrysource_add")).status_code == 403
    assert viewer_client.post(reverse("inventory:telemetrysource_add"), SOURCE_FORM).status_code == 403
    assert viewer_client.get(source.get_edit_url()).status_code == 403
    assert viewer_client.post(source.get_delete_url()).status_code == 403
    assert viewer_client.post(reverse("inventory:telemetrysource_pull", args=[source.pk])).status_code == 403
    assert queued == [] and TelemetrySource.objects.count() == 1


def test_source_list_filters_stale_sources(viewer_client, now):
    TelemetrySource.objects.create(name="ok", kind="prometheus", url="http://a:9090", last_success_at=now)
    TelemetrySource.objects.create(name="down", kind="exporter", url="http://b:9400/metrics", stale_since=now)
    response = viewer_client.get(reverse("inventory:telemetrysource_list"), {"stale": "true"})
    assert [s.name for s in response.context["table"].data] == ["down"]
    assert "stale since" in response.content.decode()


# --- What the idle cost priced; nodes not in service ---------------------------------------------


@override_settings(IDLE_GPU_HOUR_COST=2.0, COST_CURRENCY="EUR")
def test_idle_cost_says_what_it_priced_and_the_page_agrees_with_the_api(viewer_client, viewer_api, fleet, now):
    """a1 is rented at 4 per GPU-hour, b1 has no contract: its idle hours are priced at the default 2."""
    from tests.factories import ContractFactory

    today = timezone.localdate(now)
    rental = ContractFactory(kind="rental", gpu_hour_cost=4, rented_gpus=2, start=today - timedelta(days=30),
                             end=today + timedelta(days=300))
    rental.nodes.set([fleet["a1"]])
    response = viewer_client.get(DASHBOARD, {"range": "24h"})
    totals = response.context["totals"]
    # a1: 1.6 idle GPU-hours × 4 = 6.4; b1: 0.5 × 2 = 1.0.
    assert (totals["idle_gpu_hours"], totals["idle_cost"], totals["idle_gpu_hours_at_default_cost"]) == (2.1, 7.4, 0.5)
    basis = ("at each node's cost per GPU-hour from its contracts; 0.5 of 2.1 idle GPU-hours (nodes without a "
             "contract cost) at 2 EUR per GPU-hour")
    page = response.content.decode()
    assert f"idle cost {basis}" in page.replace("&#x27;", "'") and "at 2.0 EUR per GPU-hour" not in page
    api = viewer_api.get("/api/inventory/utilization/", {"group_by": "node", "range": "24h"}).json()
    assert api["idle_cost_basis"] == basis
    assert {g["name"]: (g["idle_cost"], g["idle_gpu_hours_at_default_cost"]) for g in api["groups"]} == {
        "a1": (6.4, 0.0), "b1": (1.0, 0.5)}
    assert round(sum(g["idle_cost"] for g in api["groups"]), 2) == totals["idle_cost"]
    rental.nodes.set([fleet["a1"], fleet["b1"]])  # every idle hour has a contract cost now
    totals = viewer_client.get(DASHBOARD, {"range": "24h"}).context["totals"]
    assert queries.idle_cost_basis(totals) == "at each node's cost per GPU-hour from its contracts"


def test_least_used_nodes_show_their_state_and_keep_nodes_not_in_service_apart(viewer_client, fleet):
    from inventory import lifecycle

    lifecycle.transition(fleet["b1"], "degraded", reason="ECC errors")
    lifecycle.transition(fleet["b1"], "in_repair", reason="RMA")
    response = viewer_client.get(DASHBOARD, {"range": "24h"})
    assert [(r["name"], r["state"]) for r in response.context["least_used"]] == [("a1", "in_service")]
    assert [(r["name"], r["state"]) for r in response.context["not_in_service"]] == [("b1", "in_repair")]
    page = response.content.decode()
    section = page.split('id="least-used"')[1]
    assert section.index("a1") < section.index("Not in service") < section.index("b1")
    assert "In service" in section and "In repair" in section
    rows = read_csv(viewer_client.get(DASHBOARD, {"range": "24h", "format": "csv", "chart": "least-used"}))
    assert [(row[0], row[1]) for row in rows[1:]] == [("a1", "in_service"), ("b1", "in_repair")]


# --- Filters offer what the fleet has -------------------------------------------------------------


def test_partitions_follow_the_chosen_site_and_gpu_models_are_the_fleets(viewer_client, viewer_api, fleet):
    from tests.factories import make_gpu_model

    unused = make_gpu_model(name="Catalog only")
    page = viewer_client.get(DASHBOARD).content.decode()
    assert '<option value="train">' in page and '<option value="infer">' in page
    assert f'<option value="{fleet["m1"].pk}">' in page and f'<option value="{unused.pk}">' not in page
    # htmx: choosing beta redraws the partition select (out of band) with beta's partitions only.
    fragment = viewer_client.get(DASHBOARD, {"site": fleet["beta"].pk}, **HTMX).content.decode()
    oob = fragment.split('id="filter-partition"')[1].split("</div>")[0]
    assert 'hx-swap-oob="true"' in oob and '<option value="infer">' in oob and "train" not in oob
    # A partition of another site left in the URL is dropped, not an empty dashboard.
    response = viewer_client.get(DASHBOARD, {"site": fleet["beta"].pk, "partition": "train"})
    assert response.context["totals"]["gpu_hours"] == 1.0
    # The API says why instead of answering nothing.
    answer = viewer_api.get("/api/inventory/utilization/", {"site": fleet["beta"].pk, "partition": "train"})
    assert answer.status_code == 400
    assert answer.json()["partition"] == [f"No node of site {fleet['beta'].pk} is in partition 'train'; its "
                                          "partitions: infer."]
    assert viewer_api.get("/api/inventory/utilization/", {"site": fleet["beta"].pk, "partition": "infer"}) \
        .status_code == 200
    gpus = viewer_client.get(reverse("inventory:gpu_list")).content.decode()
    assert f'<option value="{fleet["m2"].pk}">' in gpus and f'<option value="{unused.pk}">' not in gpus


def test_the_filters_choices_are_read_in_one_query_as_the_separate_queries_read_them(fleet,
                                                                                     django_assert_num_queries):
    """``filter_choices`` (one query, drawn on every dashboard request) offers what the four queries it replaced
    offered, in the database's own order: names of mixed case and accents, duplicates, nodes without a partition."""
    from inventory.models import Node, Site
    from inventory.queries import filter_choices, fleet_gpu_models, partitions
    from tests.factories import make_gpu, make_gpu_model, make_node, make_site

    gamma = make_site(name="Gamma")
    for hostname, partition, team in [("g1", "Éval", "zeta"), ("g2", "train", "Vision"), ("g3", "b-part", "")]:
        make_node(site=gamma, hostname=hostname, partition=partition, owner_team=team)
    make_gpu(node=Node.objects.get(hostname="g1"), gpu_model=make_gpu_model(name="a100"))
    make_gpu_model(name="Catalog only")
    teams = list(Node.objects.exclude(owner_team=None).order_by("owner_team").values_list("owner_team", flat=True)
                 .distinct())
    with django_assert_num_queries(1):
        offered = filter_choices()
    assert offered == {"site": list(Site.objects.order_by("name").values_list("pk", "name")),
                       "partition": partitions(), "gpu_model": [(m.pk, m.name) for m in fleet_gpu_models()],
                       "team": teams}
    assert len(offered["partition"]) == 4 and "Catalog only" not in dict(offered["gpu_model"]).values()
    with django_assert_num_queries(1):
        offered = filter_choices(gamma.pk, teams=False)
    assert offered["partition"] == partitions(gamma.pk) and sorted(offered["partition"]) == sorted(
        ["Éval", "train", "b-part"])
    assert offered["team"] == []


def test_a_filter_left_in_the_url_that_the_fleet_no_longer_has_is_ignored(viewer_client, fleet):
    """A bookmark with a deleted site or GPU model, or no number at all, still shows the whole fleet."""
    whole = viewer_client.get(DASHBOARD, {"range": "24h"}).context["totals"]
    for stale in ({"site": 999999}, {"site": "abc"}, {"gpu_model": 999999}, {"gpu_model": "1.5"}):
        response = viewer_client.get(DASHBOARD, {"range": "24h", **stale})
        assert response.status_code == 200 and response.context["totals"] == whole, stale
        assert "is not one of the available choices" in response.content.decode()
    chosen = viewer_client.get(DASHBOARD, {"range": "24h", "gpu_model": fleet["m2"].pk})
    assert chosen.context["totals"]["gpus"] == 1 and f'<option value="{fleet["m2"].pk}" selected>' in \
        chosen.content.decode()


def test_chart_time_labels_made_once_per_range_follow_the_active_time_zone():
    """``charts.time_labels`` keeps a range's labels between charts; a user in another zone gets that zone's labels,
    each the label ``time_label`` gives alone."""
    from datetime import UTC, datetime

    hours = [datetime(2026, 3, 29, 0, tzinfo=UTC) + k * H for k in range(4)]  # across Europe's DST change
    with timezone.override("Europe/Berlin"):
        berlin = charts.time_labels(hours)
        assert berlin == [charts.time_label(t) for t in hours] == [
            "2026-03-29 01:00", "2026-03-29 03:00", "2026-03-29 04:00", "2026-03-29 05:00"]
        assert charts.time_labels(hours) == berlin
    with timezone.override("UTC"):
        assert charts.time_labels(hours) == ["2026-03-29 00:00", "2026-03-29 01:00", "2026-03-29 02:00",
                                             "2026-03-29 03:00"]
