"""Whose Slurm jobs a researcher reads (issue 33, ``inventory.read_job`` / ``inventory.read_every_job``): their own
teams' jobs and interruptions only, everywhere a job's name, user or row shows (the API, the interruptions page and
its CSV, a Slurm source's recent jobs, a team's latest interruptions, a node's page, search); other teams only as
aggregates (GPU-hours, goodput by team). The roles that read the whole fleet keep reading every team's."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from inventory.models import SlurmJob, SlurmJobNode, TelemetrySource
from portal.roles import MANAGER, PROCUREMENT, RESEARCHER, SUPPORT, VIEWER
from tests.factories import InterruptionFactory, make_node, make_team
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db

JOBS, INTERRUPTIONS = "/api/inventory/slurm-jobs/", "/api/inventory/interruptions/"
# What only team nlp (rita's) may read, and what only team speech (bob's) may read: job names, Slurm users, job ids.
OWN = ("nlp-tokenizer-sweep", "rita-slurm", "41414141")
OTHER = ("speech-secret-merger-model", "bob-slurm", "90909090")


@pytest.fixture
def fleet():
    """Rita (researcher, team nlp) and bob (researcher, team speech); one Slurm source; on node gpu-shared-01, one
    job of each team that ran 2 h on 8 GPUs (16 GPU-hours) and was interrupted by the node."""
    rita, bob = make_user("rita", RESEARCHER), make_user("bob", RESEARCHER)
    make_team("nlp", members=[rita])
    make_team("speech", members=[bob])
    node = make_node(hostname="gpu-shared-01", state="in_service")
    source = TelemetrySource.objects.create(name="slurm-main", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    now = timezone.now()
    jobs = {}
    for account, (name, user, job_id) in (("nlp", OWN), ("speech", OTHER)):
        job = SlurmJob.objects.create(
            source=source, job_id=job_id, name=name, user=user, account=account, partition="train", state="NODE_FAIL",
            gpus=8, node_count=1, submit_time=now - timedelta(hours=4), start_time=now - timedelta(hours=3),
            end_time=now - timedelta(hours=1))
        SlurmJobNode.objects.create(job=job, host=node.hostname, node=node, gpus=8)
        InterruptionFactory(job=job, account=account, node=node, started_at=job.start_time, ended_at=job.end_time)
        jobs[account] = job
    return {"rita": rita, "bob": bob, "node": node, "source": source, "jobs": jobs}


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def assert_hidden(body, where):
    for secret in OTHER:
        assert secret not in body, (where, secret)


def assert_shown(body, where, secrets=OWN):
    for secret in secrets:
        assert secret in body, (where, secret)


# --- The API --------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?account=speech", "?user=bob-slurm", "?format=api", "?ordering=name"])
def test_the_jobs_api_lists_a_researchers_own_teams_jobs_only(fleet, query):
    response = token_client(fleet["rita"]).get(JOBS + query)
    assert response.status_code == 200
    body = response.content.decode()
    assert_hidden(body, query)
    if query in ("", "?format=api", "?ordering=name"):
        assert_shown(body, query)
    if query in ("?account=speech", "?user=bob-slurm"):
        assert response.json()["results"] == []


def test_another_teams_job_and_interruption_are_not_found_through_the_api(fleet):
    api = token_client(fleet["rita"])
    mine, theirs = fleet["jobs"]["nlp"], fleet["jobs"]["speech"]
    assert api.get(f"{JOBS}{theirs.pk}/").status_code == 404
    assert api.get(f"{JOBS}{mine.pk}/").json()["name"] == OWN[0]
    theirs_row, mine_row = theirs.interruptions.get(), mine.interruptions.get()
    assert api.get(f"{INTERRUPTIONS}{theirs_row.pk}/").status_code == 404
    assert api.get(f"{INTERRUPTIONS}{mine_row.pk}/").json()["job_id"] == OWN[2]


@pytest.mark.parametrize("query", ["", "?team=speech", "?node={node}"])
def test_the_interruptions_api_lists_a_researchers_own_teams_rows_only(fleet, query):
    response = token_client(fleet["rita"]).get(INTERRUPTIONS + query.format(node=fleet["node"].pk))
    assert response.status_code == 200
    ids = [row["job_id"] for row in response.json()["results"]]
    assert OTHER[2] not in ids
    assert ids == ([] if "team" in query else [OWN[2]])


@pytest.mark.parametrize("role", [VIEWER, MANAGER, SUPPORT, PROCUREMENT])
def test_the_roles_that_read_the_whole_fleet_read_every_teams_jobs(fleet, role):
    api = token_client(make_user(f"fleet-{role}", role))
    body = api.get(JOBS).content.decode()
    assert_shown(body, role, OWN + OTHER)
    assert api.get(f"{JOBS}?account=speech").json()["count"] == 1
    assert api.get(f"{JOBS}{fleet['jobs']['speech'].pk}/").status_code == 200
    assert {row["job_id"] for row in api.get(INTERRUPTIONS).json()["results"]} == {OWN[2], OTHER[2]}


def test_a_researcher_without_a_team_reads_no_job(fleet):
    api = token_client(make_user("loner", RESEARCHER))
    assert api.get(JOBS).json()["results"] == [] and api.get(INTERRUPTIONS).json()["results"] == []


# --- Pages ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?team=speech", "?_export=csv"])
def test_the_interruptions_page_and_its_csv_show_a_researchers_own_teams_rows_only(fleet, query):
    response = logged_in(fleet["rita"]).get(reverse("inventory:interruption_list") + query)
    assert response.status_code == 200
    body = response.content.decode()
    assert_hidden(body, query)
    if query != "?team=speech":
        assert OWN[2] in body


def test_a_slurm_sources_recent_jobs_are_a_researchers_own_teams(fleet):
    body = logged_in(fleet["rita"]).get(fleet["source"].get_absolute_url()).content.decode()
    assert_hidden(body, "source page")
    assert OWN[0] in body  # the table shows job ids, names and accounts (not users)
    viewer = logged_in(make_user("vera", VIEWER))
    assert OTHER[0] in viewer.get(fleet["source"].get_absolute_url()).content.decode()


def test_another_teams_page_shows_its_figures_but_not_its_jobs(fleet):
    rita = logged_in(fleet["rita"])
    response = rita.get(reverse("inventory:team", args=["speech"]))
    assert response.status_code == 200  # the team's aggregates stay readable
    body = response.content.decode()
    assert_hidden(body, "team page")
    assert "16.0" in body  # speech's allocated GPU-hours
    assert OWN[2] in rita.get(reverse("inventory:team", args=["nlp"])).content.decode()


def test_a_nodes_page_names_no_other_teams_job(fleet):
    response = logged_in(fleet["rita"]).get(fleet["node"].get_absolute_url())
    assert response.status_code == 200
    assert_hidden(response.content.decode(), "node page")


def test_search_finds_no_job_of_another_team(fleet):
    rita = logged_in(fleet["rita"])
    for term in OTHER:
        response = rita.get(reverse("search"), {"q": term})
        body = response.content.decode()
        assert response.status_code == 200 and "Nothing matches" in body
        assert_hidden(body.replace(term, ""), f"search {term}")  # the term itself is echoed


def test_a_researcher_reads_every_teams_gpu_hours_and_goodput_as_aggregates(fleet):
    api = token_client(fleet["rita"])
    allocations = api.get("/api/inventory/allocations/?group_by=account").json()["groups"]
    teams = {g["name"]: g["gpu_hours"] for g in allocations}
    assert teams == {"nlp": 16.0, "speech": 16.0}
    goodput = api.get("/api/inventory/goodput/?group_by=team").json()["groups"]
    assert {g["name"]: g["interruptions"] for g in goodput} == {"nlp": 1, "speech": 1}
    rita = logged_in(fleet["rita"])
    page = rita.get(reverse("inventory:utilization")).content.decode()
    assert "speech" in page
    assert_hidden(page, "utilization")
    page = rita.get(reverse("inventory:goodput"), {"group_by": "team"}).content.decode()
    assert "speech" in page
    assert_hidden(page, "goodput")
    csv = rita.get(reverse("inventory:goodput"), {"group_by": "team", "format": "csv"}).content.decode()
    assert "speech" in csv
    assert_hidden(csv, "goodput csv")
