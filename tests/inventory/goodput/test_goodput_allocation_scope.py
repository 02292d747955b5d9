"""Goodput's allocated GPU-hours come from the rollup kept at pull time, and a site filter counts a job's part on the
site's nodes, as grouping by site does."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.goodput import queries
from inventory.models import TelemetrySource
from inventory.telemetry import pull
from inventory.telemetry.records import JobRecord, Quality
from inventory.telemetry.rollups import floor_hour
from tests.factories import make_gpu, make_node, make_site

H = timedelta(hours=1)


@pytest.mark.django_db
def test_a_job_across_two_sites_counts_its_part_on_the_filtered_site():
    now = floor_hour(timezone.now()) - 2 * H
    sites = [make_site(name="left"), make_site(name="right")]
    for index, site in enumerate(sites):
        node = make_node(hostname=f"x{index}", site=site)
        for slot in range(8):
            make_gpu(node=node, slot=slot)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/")
    # 8 GPUs over x0 and x1 (4 each) for 3 hours, and 2 GPUs on x1 alone for 1 hour.
    pull.save_jobs(source, [
        JobRecord(job_id="1", submit_time=now - 4 * H, start_time=now - 4 * H, end_time=now - H, account="vision",
                  partition="train", nodes="x[0-1]", node_count=2, gpus=8, state="COMPLETED"),
        JobRecord(job_id="2", submit_time=now - 2 * H, start_time=now - 2 * H, end_time=now - H, account="vision",
                  partition="train", nodes="x1", node_count=1, gpus=2, state="COMPLETED"),
    ], now, Quality())
    by_site = {row["name"]: row["allocated_gpu_hours"] for row in queries.goodput_by("site", "24h")}
    assert by_site == {"left": pytest.approx(12), "right": pytest.approx(14)}
    for site in sites:
        teams = queries.goodput_by("team", "24h", {"site": site.pk})
        assert teams[0]["allocated_gpu_hours"] == pytest.approx(by_site[site.name])
    months = queries.goodput_by("month", "30d", {"site": sites[0].pk})
    assert sum(row["allocated_gpu_hours"] for row in months) == pytest.approx(12)


@pytest.mark.django_db
def test_the_node_page_reads_its_own_row_and_it_is_the_site_dashboards_row(manager_client):
    now = floor_hour(timezone.now()) - 2 * H
    site = make_site(name="solo")
    nodes = []
    for index in range(3):
        node = make_node(hostname=f"y{index}", site=site)
        for slot in range(8):
            make_gpu(node=node, slot=slot)
        nodes.append(node)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/")
    pull.save_jobs(source, [
        JobRecord(job_id=str(n), submit_time=now - (n + 3) * H, start_time=now - (n + 2) * H, end_time=now - n * H,
                  account="vision", partition="train", nodes="y[0-1]" if n % 2 else "y2", node_count=2 if n % 2 else 1,
                  gpus=8, state="NODE_FAIL" if n == 1 else "COMPLETED") for n in range(4)], now, Quality())
    dashboard = {row["key"]: row for row in queries.goodput_by("node", "30d", {"site": site.pk}, job_hours=24.0)}
    for node in nodes:
        shown = manager_client.get(node.get_absolute_url()).context["goodput"]["row"]
        assert shown["allocated_gpu_hours"] == pytest.approx(dashboard[node.pk]["allocated_gpu_hours"])
        assert {k: v for k, v in shown.items() if k != "allocated_gpu_hours"} == pytest.approx(
            {k: v for k, v in dashboard[node.pk].items() if k != "allocated_gpu_hours"})
