"""The goodput pages on the hand-built fleet (``tests.helpers.goodput``): the dashboard's figures, its CSV, the
interruptions list and its links, logins and constant queries."""

from datetime import UTC, datetime

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from inventory.goodput import hooks, recording
from inventory.lifecycle import hours_in_state
from inventory.models import GPU, Node, StateTransition
from tests.helpers.goodput import MIN, H, add_job, make_goodput_fleet
from tests.helpers.telemetry import HTMX, read_csv

GOODPUT = "/inventory/goodput/"
INTERRUPTIONS = "/inventory/interruptions/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(now):
    found = make_goodput_fleet(now)
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    return found


def test_pages_need_a_login(client):
    for url in (GOODPUT, INTERRUPTIONS):
        response = client.get(url)
        assert response.status_code == 302 and "/login" in response["Location"]


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_dashboard_shows_the_figures_worked_out_by_hand(viewer_client, fleet):
    page = viewer_client.get(GOODPUT, {"range": "24h", "group_by": "team"}).content.decode()
    # vision: goodput (130 − 6) / 130 = 95.4 %, 2 interruptions, 369.2 per 1,000 GPU-days, MTBI 8.1 h for 8 GPUs,
    # 2.95 restarts of a 24 h job, 22 GPU-hours lost (6 of work + 16 of wait) at 2.0: 44, queue wait 11.0 %.
    vision = row_of(page, "vision")
    for shown in ("95.4 %", "130.0", ">2</a>", "369.2", "8.1 h", "2.95", "22.0", "(6.0 + 16.0)", "44 USD", "11.0 %"):
        assert shown in vision, shown
    speech = row_of(page, "speech")
    assert "100.0 %" in speech and "(2, 0)" in speech  # two of the user's, none of the infrastructure's
    assert "Estimate." in page and "checkpoints every 60 min" in page and "at most 24 h" in page
    assert "Lost cost: " in page and "chart-losses" in page and "chart-goodput-ratio" not in page
    assert 'src="/static/plotly/plotly.min.js"' in page


def row_of(page, name):
    """The dashboard's row of team ``name`` (its name links to the team's page)."""
    start = page.index(f'<td><a href="/inventory/teams/{name}/">{name}</a></td>')
    return page[start : page.index("</tr>", start)]


def test_a_group_without_allocation_shows_a_dash_and_why(viewer_client, fleet, now):
    # A NODE_FAIL job that held no GPU: team "bio" has an interruption but no allocated GPU-hours.
    source = fleet["source"]
    add_job(source, "90", fleet["nodes"]["n3"], 0, now - 3 * H, now - 3 * H, now - 2 * H, "NODE_FAIL", "bio", "x")
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    page = viewer_client.get(GOODPUT, {"range": "24h", "group_by": "team"}).content.decode()
    assert "no allocation" in row_of(page, "bio")


def test_dashboard_csv_is_the_table(viewer_client, fleet):
    rows = read_csv(viewer_client.get(GOODPUT, {"range": "24h", "group_by": "partition", "format": "csv"}))
    header, body = rows[0], {row[0]: dict(zip(rows[0], row, strict=True)) for row in rows[1:]}
    assert header[:3] == ["partition", "goodput_ratio", "allocated_gpu_hours"]
    assert (
        body["train"]["goodput_ratio"],
        body["train"]["infrastructure_interruptions"],
        body["train"]["lost_gpu_hours"],
    ) == ("0.9538", "2", "22.0")
    assert body["infer"]["user_interruptions"] == "2"


def test_filters_and_htmx_fragment(viewer_client, fleet):
    alpha, beta = fleet["sites"]
    page = viewer_client.get(GOODPUT, {"range": "24h", "group_by": "node", "site": beta.pk}, **HTMX)
    text = page.content.decode()
    assert "<html" not in text and 'id="filter-partition"' in text  # the fragment, and the partitions redrawn
    assert "<td>n3</td>" in text and "<td>n1</td>" not in text
    # A group's interruptions link keeps the dashboard's filters.
    n2 = fleet["nodes"]["n2"]
    text = viewer_client.get(GOODPUT, {"range": "24h", "group_by": "node", "site": alpha.pk}).content.decode()
    assert f"/inventory/interruptions/?cause=infrastructure&amp;site={alpha.pk}&amp;node={n2.pk}&amp;range=24h" in text
    # An unknown group_by falls back to team, as a stale bookmark should.
    assert "Goodput by team" in viewer_client.get(GOODPUT, {"group_by": "nope"}).content.decode()


def grow(fleet, now, count):
    """``count`` more nodes, each with a NODE_FAIL job and a completed one."""
    node_model, model = fleet["nodes"]["n1"].node_model, fleet["models"][0]
    for i in range(count):
        node = Node.objects.create(site=fleet["sites"][0], node_model=node_model, hostname=f"x{i}", state="in_service")
        GPU.objects.create(node=node, gpu_model=model, slot=0, serial=f"sx{i}")
        add_job(fleet["source"], f"10{i}", node, 1, now - 5 * H, now - 5 * H, now - 2 * H, "NODE_FAIL", f"t{i}")
        add_job(fleet["source"], f"20{i}", node, 1, now - 2 * H, now - H, now - MIN, "COMPLETED", f"t{i}")
    recording.record_interruptions(now - 48 * H, now + MIN, now)


@pytest.mark.parametrize("group_by", ["team", "node", "gpu_model"])
def test_dashboard_and_list_queries_are_constant(viewer_client, fleet, now, group_by, django_assert_max_num_queries):
    def count():
        with CaptureQueriesContext(connection) as dashboard:
            assert viewer_client.get(GOODPUT, {"range": "24h", "group_by": group_by}).status_code == 200
        with CaptureQueriesContext(connection) as listed:
            assert viewer_client.get(INTERRUPTIONS).status_code == 200
        return len(dashboard), len(listed)

    small = count()
    grow(fleet, now, 12)
    assert count() == small
    with django_assert_max_num_queries(small[0]):
        viewer_client.get(GOODPUT, {"range": "24h", "group_by": group_by})


def test_interruptions_list_links_job_node_gpu_fault_and_ticket(viewer_client, fleet, monkeypatch):
    monkeypatch.setattr(hooks, "_ticket_finders", [])
    j2 = fleet["jobs"]["J2"].interruptions.get()
    hooks.register_ticket_finder(
        lambda rows: {r.pk: {"id": 77, "url": "/support/tickets/77/"} for r in rows if r.pk == j2.pk}
    )
    page = viewer_client.get(INTERRUPTIONS, {"cause": "infrastructure"}).content.decode()
    n2 = fleet["nodes"]["n2"]
    gpu0 = GPU.objects.get(node=n2, slot=0)
    assert f'href="/api/inventory/slurm-jobs/{fleet["jobs"]["J2"].pk}/">2</a>' in page
    assert f'href="{n2.get_absolute_url()}"' in page and f'href="{gpu0.get_absolute_url()}"' in page
    assert ">XID 79</a>" in page and "fallen off the bus" in page
    assert 'href="/support/tickets/77/">#77</a>' in page
    assert ">3</a>" not in page  # J3 (the user's OOM) is filtered out
    everyone = viewer_client.get(INTERRUPTIONS).content.decode()
    assert "/api/inventory/slurm-jobs/" in everyone and everyone.count("<tr ") >= 4


def test_interruptions_list_filters_and_csv(viewer_client, fleet):
    n1 = fleet["nodes"]["n1"]
    page = viewer_client.get(INTERRUPTIONS, {"node": n1.pk, "range": "24h"}).content.decode()
    assert f"slurm-jobs/{fleet['jobs']['J1'].pk}/" in page and f"slurm-jobs/{fleet['jobs']['J2'].pk}/" not in page
    rows = read_csv(viewer_client.get(INTERRUPTIONS, {"team": "speech", "_export": "csv"}))
    header = rows[0]
    assert len(rows) == 3 and {row[header.index("Reason")] for row in rows[1:]} == {
        "Out of memory",
        "Failed, no fault nearby",
    }
    assert {row[header.index("Job")] for row in rows[1:]} == {"3", "4"}  # the Slurm id, no markup


def test_interruptions_show_lost_gpu_hours_in_hundredths(viewer_client, fleet):
    """An estimate of 4 h 54 min 40 s of 1 GPU is shown as 4.91 GPU-hours, not as the float's 4.9111111111111."""
    fleet["jobs"]["J2"].interruptions.update(lost_gpu_hours=221 / 45)
    page = viewer_client.get(INTERRUPTIONS, {"cause": "infrastructure"}).content.decode()
    assert ">4.91<" in page and "4.911" not in page
    rows = read_csv(viewer_client.get(INTERRUPTIONS, {"cause": "infrastructure", "_export": "csv"}))
    lost = {row[rows[0].index("Job")]: row[rows[0].index("Lost GPU-h")] for row in rows[1:]}
    assert lost == {"1": "12.0", "2": str(221 / 45)}


def move(obj, ts, from_state, to_state):
    return StateTransition.objects.create(
        content_type=ContentType.objects.get_for_model(obj),
        object_id=obj.pk,
        from_state=from_state,
        to_state=to_state,
        created=ts,
    )


def section(page):
    start = page.index('id="goodput"')
    return page[start : page.index("</section>", start)]


def test_node_page_goodput_section(viewer_client, fleet, now):
    n2 = fleet["nodes"]["n2"]
    move(n2, now - 5 * H, "in_service", "in_repair")
    move(n2, now - 2 * H, "in_repair", "in_service")
    shown = section(viewer_client.get(n2.get_absolute_url()).content.decode())
    # n2: J2 interrupted (10 GPU-hours lost, 2 of its work); 62 allocated GPU-hours → 1 / (62 / 24) × 1,000 =
    # 387.1 per 1,000 GPU-days, goodput (62 − 2) / 62 = 96.8 %; 3 hours in repair.
    for figure in ("<b>1</b>", "387.1", "<b>10.0</b>", "96.8 %", "3.0 h"):
        assert figure in shown, figure
    assert f"/inventory/interruptions/?cause=infrastructure&amp;node={n2.pk}&amp;range=30d" in shown
    assert f"/inventory/goodput/?range=30d&amp;group_by=node&amp;site={n2.site_id}" in shown


def test_gpu_model_page_goodput_section(viewer_client, fleet):
    m1, m2 = fleet["models"]
    shown = section(viewer_client.get(m1.get_absolute_url()).content.decode())
    # M1 (n1, n2): 2 interruptions over 130 allocated GPU-hours: 369.2 per 1,000 GPU-days, 22 GPU-hours lost.
    for figure in ("<b>2</b>", "369.2", "<b>22.0</b>", "95.4 %"):
        assert figure in shown, figure
    assert f"gpu_model={m1.pk}" in shown
    quiet = section(viewer_client.get(m2.get_absolute_url()).content.decode())
    assert "<b>0</b>" in quiet and "100.0 %" in quiet


def test_node_and_model_pages_keep_their_query_count(viewer_client, fleet, now):
    n1, m1 = fleet["nodes"]["n1"], fleet["models"][0]

    def count():
        counts = []
        for url in (n1.get_absolute_url(), m1.get_absolute_url()):
            with CaptureQueriesContext(connection) as ctx:
                assert viewer_client.get(url).status_code == 200
            counts.append(len(ctx))
        return counts

    small = count()
    grow(fleet, now, 10)
    for i in range(6):
        move(n1, now - (20 - i) * H, "in_service" if i % 2 else "in_repair", "in_repair" if i % 2 else "in_service")
    assert count() == small


def test_hours_in_state():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    moves = [(t0 + 2 * H, "in_repair", "in_service"), (t0 + 5 * H, "in_service", "in_repair")]
    # In repair from the start to +2 h, and again from +5 h to the end (+8 h): 5 hours.
    assert hours_in_state(moves, "in_repair", "in_repair", t0, t0 + 8 * H) == 5.0
    assert hours_in_state([], "in_repair", "in_repair", t0, t0 + 8 * H) == 8.0
    assert hours_in_state([], "in_repair", "in_service", t0, t0 + 8 * H) == 0.0
