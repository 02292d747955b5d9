"""The team pages (issue 20) on the hand-built fleet (``tests.helpers.goodput``): n1 and n2 owned by vision, whose
figures are worked out by hand in ``make_goodput_fleet``'s docstring; the 404, logins, the list and its links, and
constant queries."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from inventory.goodput import recording
from inventory.models import GPU, GPUDaily, Node
from inventory.telemetry.rollups import rollup_usage
from tests.factories import make_team
from tests.helpers.accounts import make_user
from tests.helpers.goodput import MIN, H, add_job, make_goodput_fleet
from tests.helpers.telemetry import HTMX

TEAMS = "/inventory/teams/"
VISION = "/inventory/teams/vision/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(now):
    """The goodput fleet, n1 and n2 owned by vision; n1/gpu0 reported 10 hours at 40 % yesterday (its only
    reading): vision's GPUs 40.0 % used, 10 × 0.6 = 6 idle GPU-hours."""
    found = make_goodput_fleet(now)
    Node.objects.filter(hostname__in=["n1", "n2"]).update(owner_team=make_team("vision"))
    gpu0 = GPU.objects.get(node=found["nodes"]["n1"], slot=0)
    GPUDaily.objects.create(
        gpu=gpu0, day=timezone.localdate(now) - timezone.timedelta(days=1), util_mean=40, hours=10, samples=600
    )
    rollup_usage()
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    return found


def kpi(page, label):
    """The figure of the KPI whose label starts with ``label``."""
    match = re.search(r"<b>([^<]*)</b><span>" + re.escape(label), page)
    assert match, label
    return match.group(1).strip()


def test_pages_need_a_login_and_the_telemetry_permission(client, fleet):
    for url in (TEAMS, VISION):
        response = client.get(url)
        assert response.status_code == 302 and "/login" in response["Location"]
    client.force_login(make_user("norole", None))
    for url in (TEAMS, VISION):
        assert client.get(url).status_code == 403


@override_settings(IDLE_GPU_HOUR_COST=2.0, GOODPUT_MTBI_GPUS=8)
def test_team_page_shows_the_figures_worked_out_by_hand(viewer_client, fleet):
    response = viewer_client.get(VISION)
    assert response.status_code == 200
    page = response.content.decode()
    assert "last 30 days" in page  # the default range
    # Allocation: 8 × (4.5 + 4.25 + 4 + 3.5) = 130 GPU-hours of 4 jobs; its 2 nodes, 16 GPUs, 40 % used.
    assert kpi(page, "allocated GPU-hours") == "130.0" and "(4 jobs)" in page
    assert kpi(page, "nodes owned") == "2" and "16 GPUs" in page
    assert kpi(page, "mean utilization") == "40.0 %" and kpi(page, "idle GPU-hours") == "6"
    assert "idle GPU-hours of its GPUs (12 USD)" in page  # 6 × 2.0
    # Goodput: (130 − 6) / 130 = 95.4 %; 2 per 130 / 24 GPU-days = 369.23 per 1,000; MTBI 130 / 2 / 8 = 8.125 h,
    # 24 / 8.125 = 2.95 restarts of a 24 h job; 22 GPU-hours lost (6 + 16) at 2.0 = 44; queue wait 16 / 146.
    assert kpi(page, "goodput ratio") == "95.4 %"
    assert kpi(page, "infrastructure interruptions") == "2"
    assert kpi(page, "per 1,000 GPU-days") == "369.2"
    assert kpi(page, "MTBI of a 8-GPU job") == "8.1 h" and "2.95 expected restarts in 24 h" in page
    assert kpi(page, "lost GPU-hours") == "22.0" and "(6.0 work + 16.0 restart wait)" in page
    assert kpi(page, "lost cost") == "44 USD"
    assert kpi(page, "queue-wait share") == "11.0 %"
    assert "Lost cost: at 2 USD per GPU-hour" in page and "checkpoints every 60 min" in page
    # Its two interruptions, newest first (J2 ended at −4 h, J1 at −6 h); speech's are not there.
    body = page[page.index("<tbody", page.index('id="team-interruptions"')) :]
    body = body[: body.index("</tbody>")]
    assert body.count("<tr ") == 2 and "the 2 latest of the last 30 days" in page
    assert body.index("XID 79") < body.index("Node failure (Slurm NODE_FAIL)")
    assert "OUT_OF_MEMORY" not in body and "Out of memory" not in body  # speech's
    # Links: the full list by team, the nodes it owns, the dashboards filtered to it.
    assert 'href="/inventory/interruptions/?team=vision&amp;range=30d"' in page
    assert 'href="/inventory/nodes/?owner_team=vision"' in page
    assert 'href="/inventory/goodput/?range=30d&amp;team=vision&amp;group_by=partition"' in page
    assert 'href="/inventory/utilization/?range=30d&amp;team=vision"' in page


def test_the_links_lead_to_the_teams_rows(viewer_client, fleet):
    nodes = viewer_client.get("/inventory/nodes/", {"owner_team": "vision"}).content.decode()
    assert ">n1<" in nodes and ">n2<" in nodes and ">n3<" not in nodes
    listed = viewer_client.get("/inventory/interruptions/", {"team": "vision", "range": "30d"}).content.decode()
    assert "Node failure (Slurm NODE_FAIL)" in listed and "XID 79" in listed
    assert "/inventory/teams/speech/" not in listed
    assert listed.count('href="/inventory/teams/vision/"') == 2  # each row's team links to its page
    goodput = viewer_client.get("/inventory/goodput/", {"range": "30d", "team": "vision", "group_by": "partition"})
    text = goodput.content.decode()
    assert "<td>train</td>" in text and "<td>infer</td>" not in text  # the dashboard filtered to vision's jobs
    assert '<option value="vision" selected>' in text


def test_a_team_with_only_jobs_and_a_range(viewer_client, fleet):
    # speech owns no node: no utilization link; its 2 interruptions are the user's; goodput 100 %.
    page = viewer_client.get("/inventory/teams/speech/", {"range": "24h"}).content.decode()
    assert "last 24 hours" in page and kpi(page, "goodput ratio") == "100.0 %"
    assert kpi(page, "nodes owned") == "0" and "(it owns no node)" in page
    assert kpi(page, "mean utilization") == "—" and kpi(page, "idle GPU-hours") == "—"
    assert "/inventory/utilization/" not in page.split('id="dashboard"')[1]
    assert "infrastructure interruptions (2 the user's, 0 the scheduler's)" in page
    assert kpi(page, "infrastructure interruptions") == "0"
    # An htmx range change redraws only the body.
    fragment = viewer_client.get(VISION, {"range": "90d"}, **HTMX).content.decode()
    assert "<html" not in fragment and "last 90 days" in fragment
    # A bad range falls back to 30 days.
    assert "last 30 days" in viewer_client.get(VISION, {"range": "2y"}).content.decode()


def test_an_unknown_team_is_a_404_that_says_why(viewer_client, fleet):
    response = viewer_client.get("/inventory/teams/nobody/")
    assert response.status_code == 404
    assert "No team &#x27;nobody&#x27;: no node is owned by it and no Slurm job ran" in response.content.decode()


def test_team_list(viewer_client, fleet):
    Node.objects.filter(hostname="n3").update(owner_team=make_team("bio"))  # a team with nodes and no job
    page = viewer_client.get(TEAMS).content.decode()
    rows = {
        name: page[page.index(f'<a href="/inventory/teams/{name}/">{name}</a>') :]
        for name in ("bio", "speech", "vision")
    }
    vision = rows["vision"][: rows["vision"].index("</tr>")]
    for shown in (">2<", ">16<", "40.0 %", "130.0", "95.4 %", "369.2", "22.0", "11.0 %"):
        assert shown in vision, shown
    assert page.index("/teams/bio/") < page.index("/teams/speech/") < page.index("/teams/vision/")  # by name
    # Sortable: most lost GPU-hours first puts vision ahead.
    by_lost = viewer_client.get(TEAMS, {"sort": "-lost_gpu_hours"}).content.decode()
    assert by_lost.index("/teams/vision/") < by_lost.index("/teams/bio/")
    assert viewer_client.get(TEAMS, {"sort": "nope"}).status_code == 200  # a stale sort is ignored
    # bio owns n3 but ran no job: its page says so rather than show 0 %.
    bio = viewer_client.get("/inventory/teams/bio/").content.decode()
    assert kpi(bio, "goodput ratio") == "—" and "goodput ratio (no allocation)" in bio
    assert kpi(bio, "nodes owned") == "1" and "No job of bio ended in anything but COMPLETED" in bio
    assert '<a href="?sort=goodput_ratio">Goodput</a>' in page
    kept = viewer_client.get(TEAMS, {"range": "24h"}).content.decode()
    link = re.search(r'href="(\?[^"]*sort=goodput_ratio[^"]*)"', kept).group(1)
    assert "range=24h" in link  # sorting keeps the range
    # In the menu next to Goodput, and the dashboard's team rows link to the pages.
    nav = page.split("</nav>")[0]
    assert nav.index("Goodput") < nav.index(">Teams<")
    dashboard = viewer_client.get("/inventory/goodput/", {"range": "24h"}).content.decode()
    assert '<a href="/inventory/teams/vision/">vision</a>' in dashboard


def grow(fleet, now, count):
    """``count`` more nodes owned by vision, each with a NODE_FAIL job and a completed one of vision, and as many
    nodes and jobs of other teams."""
    node_model, model = fleet["nodes"]["n1"].node_model, fleet["models"][0]
    for i in range(count):
        for team in ("vision", f"t{i}"):
            node = Node.objects.create(
                site=fleet["sites"][0],
                node_model=node_model,
                hostname=f"{team}-x{i}",
                state="in_service",
                owner_team=make_team(team),
            )
            GPU.objects.create(node=node, gpu_model=model, slot=0, serial=f"s-{team}-{i}")
            add_job(fleet["source"], f"1{i}{team}", node, 1, now - 5 * H, now - 5 * H, now - 2 * H, "NODE_FAIL", team)
            add_job(fleet["source"], f"2{i}{team}", node, 1, now - 2 * H, now - H, now - MIN, "COMPLETED", team)
    recording.record_interruptions(now - 48 * H, now + MIN, now)


def test_queries_are_constant(viewer_client, fleet, now, django_assert_max_num_queries):
    def count():
        sizes = []
        for url in (VISION, TEAMS):
            with CaptureQueriesContext(connection) as queries:
                assert viewer_client.get(url).status_code == 200
            sizes.append(len(queries))
        return sizes

    small = count()
    grow(fleet, now, 12)
    # At most as many: the ticket finder skips its query when no shown interruption has a fault (the 10 latest
    # are now NODE_FAILs).
    assert all(big <= few for big, few in zip(count(), small, strict=True))
    for url, most in zip((VISION, TEAMS), small, strict=True):
        with django_assert_max_num_queries(most):
            viewer_client.get(url)


def test_calendar_ranges_on_the_team_pages(viewer_client, fleet, now):
    """The dashboards' calendar ranges: dates around vision's jobs give the figures worked out by hand; a month two
    months back has none of them; last month is a button; a bad month says why on the page and shows 30 days."""
    today = timezone.localdate(now)
    dates = {"start": (today - timezone.timedelta(days=3)).isoformat(), "end": today.isoformat()}
    page = viewer_client.get(VISION, dates).content.decode()
    assert f"Goodput, {dates['start']} – {dates['end']}" in page
    assert kpi(page, "allocated GPU-hours") == "130.0" and kpi(page, "goodput ratio") == "95.4 %"
    assert kpi(page, "infrastructure interruptions") == "2"
    assert f'href="/inventory/goodput/?range={dates["start"]}..{dates["end"]}' in page  # the dashboard, same range
    back = (today.replace(day=1) - timezone.timedelta(days=40)).strftime("%Y-%m")
    page = viewer_client.get(VISION, {"month": back}).content.decode()
    assert f"Goodput, {back}" in page and kpi(page, "allocated GPU-hours") == "0.0"
    assert kpi(page, "infrastructure interruptions") == "0" and f"COMPLETED, {back}." in page
    assert 'name="range" value="last_month"' in page
    listed = viewer_client.get(TEAMS, {"month": back}).content.decode()
    assert f"{back}: the teams" in listed
    page = viewer_client.get(VISION, {"month": "2026-13"}).content.decode()
    assert "last 30 days" in page and kpi(page, "allocated GPU-hours") == "130.0"
    assert 'role="alert"' in page and "month" in page.split('role="alert"', 1)[1][:200].lower()
