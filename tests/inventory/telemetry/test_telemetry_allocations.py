"""Slurm allocations: allocated GPU-hours per team (Slurm account) and partition, multi-node share, jobs, and
allocated vs used GPU-hours, on a hand-built set of jobs whose figures are worked out by hand: the queries, the
dashboard's cards and CSV, ``/api/inventory/allocations/`` and ``/api/inventory/slurm-jobs/`` (filters, 400s,
permissions, constant queries)."""


import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from inventory.models import SlurmJob, TelemetrySource
from inventory.telemetry import allocation_rollup, queries, slurm_figures
from inventory.telemetry.rollups import floor_hour, rollup_usage
from tests.factories import make_node, make_site
from tests.helpers.accounts import token_client
from tests.helpers.telemetry import DASHBOARD, HTMX, H, freeze_now, make_fleet, read_csv

ALLOCATIONS = "/api/inventory/allocations/"
JOBS = "/api/inventory/slurm-jobs/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


def slurm_source(name="slurm"):
    return TelemetrySource.objects.create(name=name, kind="slurm", url=f"http://{name}/slurmdb/v0.0.40/jobs")


def make_jobs(now):
    """Jobs around this hour ``h`` (now is h + 30 min; the 24h range starts at h - 23 h):

    ======  =======  =========  =====  ====  ===================  =================  ============================
    job     account  partition  nodes  GPUs  submit → start        end                GPU-hours in 24h (in 7d)
    ======  =======  =========  =====  ====  ===================  =================  ============================
    1       vision   train      2      16    h-12 → h-10 (2 h)    h-4                16 × 6 = 96, multi-node
    2       vision   train      1      8     h-3.5 → h-3 (0.5 h)  running            8 × 3.5 = 28 (until now)
    3       speech   train      1      4     h-31 → h-30          h-20               4 × 3 = 12 (40); not started
                                                                                     in the 24h range
    4       speech   infer      1      2     h-5 → h-5 (0)        h-1                2 × 4 = 8
    5       speech   infer      3      6     h-1, pending                            0: never started
    6       speech   infer      1      0     h-2.25 → h-2         h-1                0: no GPUs (waited 0.25 h)
    7       vision   train      1      8     h-41 → h-40          h-30               0 (8 × 10 = 80)
    8       (none)   (none)     1      1     h-2 → h-2            h-1                1
    ======  =======  =========  =====  ====  ===================  =================  ============================
    """
    source = slurm_source()
    h = floor_hour(now)
    rows = [  # job, account, partition, nodes, gpus, submit, start, end (hours from h; None: not yet)
        ("1", "vision", "train", 2, 16, -12, -10, -4),
        ("2", "vision", "train", 1, 8, -3.5, -3, None),
        ("3", "speech", "train", 1, 4, -31, -30, -20),
        ("4", "speech", "infer", 1, 2, -5, -5, -1),
        ("5", "speech", "infer", 3, 6, -1, None, None),
        ("6", "speech", "infer", 1, 0, -2.25, -2, -1),
        ("7", "vision", "train", 1, 8, -41, -40, -30),
        ("8", "", "", 1, 1, -2, -2, -1),
    ]

    def at(hours):
        return None if hours is None else h + hours * H

    SlurmJob.objects.bulk_create([
        SlurmJob(source=source, job_id=job, account=account, partition=partition, node_count=nodes, gpus=gpus,
                 submit_time=at(submit), start_time=at(start), end_time=at(end),
                 state="PENDING" if start is None else "RUNNING" if end is None else "COMPLETED")
        for job, account, partition, nodes, gpus, submit, start, end in rows
    ])
    allocation_rollup.rebuild()  # rows written in bulk, outside a pull: the rollup recomputed as after a load
    return source


@pytest.fixture
def jobs(now):
    return make_jobs(now)


def figures(groups, *fields):
    return {g["name"]: tuple(g[field] for field in fields) for g in groups}


# The hand-computed figures of ``make_jobs`` over 24 hours.
TEAMS_24H = {"vision": (124.0, 2), "speech": (20.0, 2), "(none)": (1.0, 1)}
PARTITIONS_24H = {  # GPU-hours, jobs, multi-node GPU-hours, share %, jobs started, wait p50 / p95 (hours)
    # waits of jobs 1 and 2: 2 and 0.5 h -> p50 1.25, p95 0.5 + 0.95 × 1.5 = 1.925 (job 3 started before the range)
    "train": (136.0, 3, 96.0, 70.59, 2, 1.25, 1.925),
    # job 4 (0 h) and the GPU-less job 6 (0.25 h) started; p95 = 0.95 × 0.25
    "infer": (8.0, 1, 0.0, 0.0, 2, 0.125, 0.2375),
    "(none)": (1.0, 1, 0.0, 0.0, 1, 0.0, 0.0),
}
PARTITION_FIELDS = ("gpu_hours", "jobs", "multi_node_gpu_hours", "multi_node_share", "jobs_started",
                    "queue_wait_p50_hours", "queue_wait_p95_hours")


# --- Queries --------------------------------------------------------------------------------------


def test_allocations_per_team_and_partition_match_the_hand_computed_figures(jobs, now):
    teams = slurm_figures.allocations("account", "24h", now=now)
    assert [g["name"] for g in teams] == ["vision", "speech", "(none)"]  # most GPU-hours first
    assert figures(teams, "gpu_hours", "jobs") == TEAMS_24H
    partitions = slurm_figures.allocations("partition", "24h", now=now)
    assert [g["name"] for g in partitions] == ["train", "infer", "(none)"]
    assert figures(partitions, *PARTITION_FIELDS) == PARTITIONS_24H
    # 96 of 145 GPU-hours from the multi-node job.
    assert slurm_figures.allocation_totals(partitions) == {"gpu_hours": 145.0, "jobs": 5, "multi_node_share": 66.21}


def test_longer_range_counts_whole_runs(jobs, now):
    # Jobs 3 (4 GPUs × 10 h) and 7 (8 GPUs × 10 h) fall wholly inside 7 days.
    teams = slurm_figures.allocations("account", "7d", now=now)
    assert figures(teams, "gpu_hours", "jobs") == {"vision": (204.0, 3), "speech": (48.0, 2), "(none)": (1.0, 1)}
    (train, *_) = slurm_figures.allocations("partition", "7d", now=now)
    assert (train["gpu_hours"], train["jobs"], train["multi_node_share"]) == (244.0, 4, 39.34)  # 96 / 244


def test_partition_and_team_filters_apply_site_and_gpu_model_do_not(jobs, now):
    vision = slurm_figures.allocations("partition", "24h", {"team": "vision"}, now=now)
    assert figures(vision, "gpu_hours", "jobs", "multi_node_share") == {"train": (124.0, 2, 77.42)}  # 96 / 124
    assert figures(slurm_figures.allocations("account", "24h", {"partition": "infer"}, now=now),
                   "gpu_hours", "jobs") == {"speech": (8.0, 1)}
    ignored = {"site": 1, "gpu_model": 2, "partition": ""}
    assert slurm_figures.ignored_job_filters(ignored) == ["site", "gpu_model"]
    assert figures(slurm_figures.allocations("account", "24h", ignored, now=now), "gpu_hours", "jobs") == TEAMS_24H
    assert slurm_figures.allocations("account", "24h", {"team": "nobody"}, now=now) == []
    with pytest.raises(queries.UnknownParameter, match="use one of account, partition"):
        slurm_figures.allocations("site", "24h")


# --- Dashboard ------------------------------------------------------------------------------------


def test_dashboard_shows_allocations_next_to_what_telemetry_observed(viewer_client, jobs, now):
    make_fleet(now)  # train: 3 GPU-hours observed at 46.67 %, infer: 1 GPU-hour at 50 %
    response = viewer_client.get(DASHBOARD, {"range": "24h"})
    assert response.status_code == 200
    page = response.content.decode()
    for name in ("allocations-by-team", "allocations-by-partition"):
        assert f'data-source="chart-{name}"' in page and f'id="chart-{name}"' in page
        assert f"format=csv&amp;chart={name}" in page
    assert "<script>" not in page and "job-filter-note" not in page
    context = response.context
    assert figures(context["allocations_by_team"], "gpu_hours", "jobs") == TEAMS_24H
    partitions = context["allocations_by_partition"]
    assert figures(partitions, *PARTITION_FIELDS) == PARTITIONS_24H
    # Used = observed × utilization: train 3 × 0.4667 = 1.4, infer 1 × 0.5 = 0.5; "(none)" has no telemetry.
    assert figures(partitions, "observed_gpu_hours", "util_mean", "used_gpu_hours") == {
        "train": (3.0, 46.67, 1.4), "infer": (1.0, 50.0, 0.5), "(none)": (None, None, None)}
    assert context["allocation_totals"] == {"gpu_hours": 145.0, "jobs": 5, "multi_node_share": 66.21}
    chart = context["chart_data"]["chart-allocations-by-partition"]
    assert chart["labels"] == ["train", "infer", "(none)"]
    assert [s["values"] for s in chart["series"]] == [[136.0, 8.0, 1.0], [1.4, 0.5, None]]
    assert context["chart_data"]["chart-allocations-by-team"]["series"][0]["values"] == [124.0, 20.0, 1.0]
    assert "70.6" in page and "66.2" in page  # multi-node shares: train and all partitions


def test_allocation_csvs_hold_the_same_figures(viewer_client, jobs, now):
    make_fleet(now)
    team = read_csv(viewer_client.get(DASHBOARD, {"range": "24h", "format": "csv", "chart": "allocations-by-team"}))
    assert team == [["team", "jobs", "allocated_gpu_hours"], ["vision", "2", "124.0"], ["speech", "2", "20.0"],
                    ["(none)", "1", "1.0"]]
    response = viewer_client.get(DASHBOARD, {"range": "24h", "format": "csv", "chart": "allocations-by-partition"})
    assert "utilization-allocations-by-partition-24h.csv" in response["Content-Disposition"]
    assert read_csv(response) == [
        ["partition", "jobs", "allocated_gpu_hours", "multi_node_gpu_hours", "multi_node_share_percent",
         "observed_gpu_hours", "mean_utilization_percent", "used_gpu_hours"],
        ["train", "3", "136.0", "96.0", "70.59", "3.0", "46.67", "1.4"],
        ["infer", "1", "8.0", "0.0", "0.0", "1.0", "50.0", "0.5"],
        ["(none)", "1", "1.0", "0.0", "0.0", "", "", ""],
    ]


def test_dashboard_filters_apply_to_jobs_by_partition_and_team_and_say_what_they_ignore(viewer_client, jobs, now):
    fleet = make_fleet(now)
    response = viewer_client.get(DASHBOARD, {"range": "24h", "team": "vision"}, **HTMX)
    assert figures(response.context["allocations_by_team"], "gpu_hours", "jobs") == {"vision": (124.0, 2)}
    assert response.context["job_filter_note"] == ""
    response = viewer_client.get(DASHBOARD, {"range": "24h", "site": fleet["alpha"].pk, "gpu_model": fleet["m1"].pk})
    note = response.context["job_filter_note"]
    assert "Site and GPU model filters" in note and note in response.content.decode()
    assert figures(response.context["allocations_by_team"], "gpu_hours", "jobs") == TEAMS_24H  # not narrowed
    # Observed figures follow the site filter, allocations do not: no comparison then.
    assert response.context["compares_observed"] is False
    assert {g["used_gpu_hours"] for g in response.context["allocations_by_partition"]} == {None}
    assert "Used GPU-h" not in response.content.decode()


def test_dashboard_without_slurm_jobs_says_where_they_come_from(viewer_client, now):
    make_fleet(now)  # a Prometheus source: the rest of the dashboard is drawn
    page = viewer_client.get(DASHBOARD).content.decode()
    assert "Slurm accounting source</a>; none is set up" in page
    assert 'data-source="chart-allocations-by-team"' not in page and 'data-source="chart-utilization"' in page
    slurm_source()
    page = viewer_client.get(DASHBOARD).content.decode()
    assert "No Slurm job had GPUs allocated in this range." in page
    assert 'data-source="chart-allocations-by-partition"' not in page


def add_jobs(source, n, now, prefix):
    """``n`` jobs in their own partitions and accounts, each on 2 nodes for 2 hours with 8 GPUs."""
    h = floor_hour(now)
    SlurmJob.objects.bulk_create([
        SlurmJob(source=source, job_id=f"{prefix}{i}", account=f"{prefix}-a{i}", partition=f"{prefix}-p{i}",
                 node_count=2, gpus=8, submit_time=h - 4 * H, start_time=h - 3 * H, end_time=h - H)
        for i in range(n)
    ])
    allocation_rollup.rebuild()


@pytest.mark.parametrize("params", [{"range": "24h"}, {"range": "30d", "site": True}, {"team": "small-a1"}])
def test_dashboard_query_count_does_not_grow_with_jobs(viewer_client, django_assert_max_num_queries, now, params):
    if params.get("site"):  # a filter that jobs ignore: the note, no comparison with telemetry
        params = {**params, "site": make_site().pk}
    make_node(owner_team="small-a1")  # the form offers the teams that own nodes
    source = slurm_source()
    add_jobs(source, 2, now, "small")
    viewer_client.get(DASHBOARD, params)  # warm-up: session, content types
    with CaptureQueriesContext(connection) as few:
        assert viewer_client.get(DASHBOARD, params).status_code == 200
    add_jobs(source, 40, now, "large")
    with django_assert_max_num_queries(len(few)):
        response = viewer_client.get(DASHBOARD, params)
    assert len(response.context["allocations_by_partition"]) == (1 if "team" in params else 42)
    assert bool(response.context["job_filter_note"]) == ("site" in params)


# --- API ------------------------------------------------------------------------------------------


def test_api_allocations_match_the_hand_computed_figures(viewer_api, jobs, now):
    response = viewer_api.get(ALLOCATIONS, {"range": "24h"})  # group_by defaults to account
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["group_by"], body["range"], body["stale_sources"]) == ("account", "24h", [])
    assert body["groups"][0] == {"name": "vision", "gpu_hours": 124.0, "jobs": 2, "multi_node_gpu_hours": None,
                                 "multi_node_share_percent": None, "jobs_started": None,
                                 "queue_wait_p50_hours": None, "queue_wait_p95_hours": None}
    assert figures(body["groups"], "gpu_hours", "jobs") == TEAMS_24H
    body = viewer_api.get(ALLOCATIONS, {"range": "24h", "group_by": "partition"}).json()
    fields = [field.replace("multi_node_share", "multi_node_share_percent") for field in PARTITION_FIELDS]
    assert figures(body["groups"], *fields) == PARTITIONS_24H


def test_api_allocations_filters_and_ranges(viewer_api, jobs, now):
    def teams(**params):
        response = viewer_api.get(ALLOCATIONS, params)
        assert response.status_code == 200, response.json()
        return figures(response.json()["groups"], "gpu_hours", "jobs")

    assert teams(range="24h", partition="infer") == {"speech": (8.0, 1)}
    assert teams(range="24h", team="speech", partition="train") == {"speech": (12.0, 1)}
    assert teams() == {"vision": (204.0, 3), "speech": (48.0, 2), "(none)": (1.0, 1)}  # 7d by default
    assert teams(range="1y") == teams(range="30d") == teams()


def test_api_allocations_list_stale_slurm_sources(viewer_api, jobs, now):
    TelemetrySource.objects.filter(pk=jobs.pk).update(stale_since=now, last_error="HTTP 500")
    TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090", stale_since=now)
    (stale,) = viewer_api.get(ALLOCATIONS).json()["stale_sources"]
    assert (stale["name"], stale["last_error"]) == ("slurm", None)  # errors are for managers (test_outbound)


@pytest.mark.parametrize("params, field, message", [
    ({"group_by": "site"}, "group_by", "Unknown group_by 'site'; use one of account, partition."),
    ({"range": "2w"}, "range", "Unknown range '2w'; use one of 24h, 7d, 30d, 90d, 1y."),
])
def test_api_allocations_bad_parameters_are_400(viewer_api, params, field, message):
    response = viewer_api.get(ALLOCATIONS, params)
    assert response.status_code == 400
    assert response.json() == {field: [message]}


@pytest.mark.parametrize("url", [ALLOCATIONS, JOBS])
def test_api_needs_a_login_and_a_role(django_user_model, url):
    assert APIClient().get(url).status_code == 401
    nobody = django_user_model.objects.create_user("nobody", password="pw")
    assert token_client(nobody).get(url).status_code == 403


@pytest.mark.parametrize("group_by", ["account", "partition"])
def test_api_allocations_query_count_does_not_grow_with_jobs(viewer_api, django_assert_max_num_queries, now,
                                                             group_by):
    source = slurm_source()
    add_jobs(source, 2, now, "small")
    viewer_api.get(ALLOCATIONS)  # warm-up: the token's "last used" stamp
    with CaptureQueriesContext(connection) as few:
        assert viewer_api.get(ALLOCATIONS, {"group_by": group_by}).status_code == 200
    add_jobs(source, 40, now, "large")
    with django_assert_max_num_queries(len(few)):
        response = viewer_api.get(ALLOCATIONS, {"group_by": group_by})
    assert len(response.json()["groups"]) == 42


def test_api_lists_slurm_jobs_read_only_with_filters_and_ordering(viewer_api, manager, jobs, now):
    response = viewer_api.get(JOBS)
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 8
    assert [row["job_id"] for row in body["results"]][:2] == ["5", "8"]  # newest submissions first
    job1 = next(row for row in body["results"] if row["job_id"] == "1")
    assert (job1["source_name"], job1["account"], job1["partition"], job1["node_count"], job1["gpus"]) == (
        "slurm", "vision", "train", 2, 16)
    assert (job1["queue_wait_hours"], job1["gpu_hours"]) == (2.0, 96.0)
    assert job1["url"].endswith(f"{JOBS}{SlurmJob.objects.get(job_id='1').pk}/")

    def job_ids(**params):
        return [row["job_id"] for row in viewer_api.get(JOBS, params).json()["results"]]

    assert job_ids(partition="infer", ordering="job_id") == ["4", "5", "6"]
    assert job_ids(account="vision", state="COMPLETED", ordering="-gpus") == ["1", "7"]
    assert job_ids(source=jobs.pk, ordering="start_time")[0] == "7"
    assert job_ids(source=slurm_source("other").pk) == []
    pending = viewer_api.get(JOBS, {"state": "PENDING"}).json()["results"][0]
    assert (pending["queue_wait_hours"], pending["gpu_hours"]) == (None, 0.0)
    assert token_client(manager).post(JOBS, {"job_id": "9"}).status_code == 405


def test_schema_documents_the_allocations_endpoint(viewer_api):
    schema = viewer_api.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"][ALLOCATIONS]["get"]
    parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert parameters["group_by"]["enum"] == ["account", "partition"]
    assert parameters["range"]["enum"] == ["24h", "7d", "30d", "90d", "1y"]
    assert {"partition", "team"} <= set(parameters) and "gpu_model" not in parameters
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Allocations")
    assert {"partition", "account", "state", "source", "ordering"} <= {
        p["name"] for p in schema["paths"][JOBS]["get"]["parameters"]}


def test_more_used_than_allocated_is_flagged_on_the_dashboard_and_the_home_tile(manager_client, jobs, now):
    """infer: Slurm allocated 8 GPU-hours in 24 h, and DCGM saw its GPU busy at 100 % for 19 more hours (work outside
    Slurm, or jobs its accounting misses): the page says so next to the figure rather than show it bare."""
    from inventory.models import GPUHourly

    fleet = make_fleet(now)
    b1_gpu = fleet["gpus"][2]
    GPUHourly.objects.bulk_create([GPUHourly(gpu=b1_gpu, hour=fleet["h"] - k * H, samples=60, util_mean=100)
                                   for k in range(4, 23)])
    rollup_usage()
    response = manager_client.get(DASHBOARD, {"range": "24h"})
    rows = {row["name"]: row for row in response.context["allocations_by_partition"]}
    # infer: 1 GPU-hour at 50 % + 19 at 100 % = 19.5 used against 8 allocated; train 1.4 against 136.
    assert (rows["infer"]["used_gpu_hours"], rows["infer"]["gpu_hours"]) == (19.5, 8.0)
    assert rows["infer"]["used_beyond_allocation"] and not rows["train"]["used_beyond_allocation"]
    assert not rows["(none)"]["used_beyond_allocation"]  # no telemetry: nothing to compare
    page = response.content.decode()
    section = page.split('id="allocations-by-partition"')[1].split("</section>")[0]
    assert '<td class="warn" title="More GPU-hours used than Slurm allocated">20 ⚠</td>' in section
    assert "infer: telemetry measured 20 GPU-hours used against 8 allocated by Slurm" in section
    assert section.count("⚠") == 2  # the cell and its note; not train's
    home = {tile.key: tile for tile in manager_client.get("/").context["tiles"]}
    assert home["allocated"].warn and home["allocated"].note.endswith("; more used than allocated in infer")
