"""Repeat offenders on the GPU model page: the model's nodes with GOODPUT_REPEAT_OFFENDER_MIN or more infrastructure
interruptions in 30 days, on the hand-built fleet of ``tests.helpers.goodput`` with more failures added."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from inventory.goodput import queries, recording
from inventory.models import GPU
from tests.factories import make_gpu, make_node, make_node_model
from tests.helpers.goodput import MIN, H, add_job, make_goodput_fleet, xid

from .test_goodput_pages import move, section

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(now):
    return make_offender_fleet(now)


def make_offender_fleet(now):
    """The helper's fleet (J1: a NODE_FAIL on n1, 12 GPU-h lost; J2: killed by an XID 79 on n2, 10 lost), and, in
    hours from this hour h, times on 8 GPUs, checkpoints every hour:

    - n1: K1 bio/x −30 → −28 NODE_FAIL (2 h run: no work lost; K2 started 1 h later: 8 GPU-h of wait);
      K2 bio/x −27 → −26.5 NODE_FAIL (0.5 h × 8 = 4 lost; K3 started 0.5 h later: 4) → 8; K3 −26 → −25 COMPLETED;
    - n2: L1 bio/y −40 → −38 FAILED 1 min after an XID 79 on n2/gpu1 (no work lost; L2 started 1 h later: 8);
      L2 −37 → −36 COMPLETED.

    So n1 has 3 infrastructure interruptions (all NODE_FAIL) losing 12 + 8 + 8 = 28 GPU-hours, n2 2 (both XID 79)
    losing 10 + 8 = 18; n3 (model M2) has none. n1 was in repair from −20 h to −15 h."""
    found = make_goodput_fleet(now)
    h, source = found["h"], found["source"]
    n1, n2 = found["nodes"]["n1"], found["nodes"]["n2"]
    add_job(source, "K1", n1, 8, h - 30 * H, h - 30 * H, h - 28 * H, "NODE_FAIL", "bio", "x")
    add_job(source, "K2", n1, 8, h - 27 * H, h - 27 * H, h - 26.5 * H, "NODE_FAIL", "bio", "x")
    add_job(source, "K3", n1, 8, h - 26 * H, h - 26 * H, h - 25 * H, "COMPLETED", "bio", "x")
    add_job(source, "L1", n2, 8, h - 40 * H, h - 40 * H, h - 38 * H, "FAILED", "bio", "y")
    add_job(source, "L2", n2, 8, h - 37 * H, h - 37 * H, h - 36 * H, "COMPLETED", "bio", "y")
    xid(GPU.objects.get(node=n2, slot=1), h - 38 * H - MIN, 79)
    move(n1, now - 20 * H, "in_service", "in_repair")
    move(n1, now - 15 * H, "in_repair", "in_service")
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    return found


def test_repeat_offenders_by_hand(fleet, now):
    m1, m2 = fleet["models"]
    n1, n2 = fleet["nodes"]["n1"], fleet["nodes"]["n2"]
    offenders = queries.repeat_offenders(m1.pk, "30d", 2, now=now)
    assert [
        (
            o["node"],
            o["interruptions"],
            o["lost_gpu_hours"],
            o["main_reason"],
            o["main_reason_count"],
            o["repair_hours"],
        )
        for o in offenders
    ] == [
        (n1, 3, 28.0, "Node failure (Slurm NODE_FAIL)", 3, 5.0),
        (n2, 2, 18.0, "GPU fell off the bus (XID 79) near the end", 2, 0.0),
    ]
    assert [o["node"] for o in queries.repeat_offenders(m1.pk, "30d", 3, now=now)] == [n1]
    assert queries.repeat_offenders(m2.pk, "30d", 2, now=now) == []


def test_gpu_model_page_lists_the_repeat_offenders_with_links(viewer_client, viewer_api, fleet):
    m1 = fleet["models"][0]
    n1, n2 = fleet["nodes"]["n1"], fleet["nodes"]["n2"]
    shown = section(viewer_client.get(m1.get_absolute_url()).content.decode())
    table = shown[shown.index('id="repeat-offenders"') :]
    assert "nodes with 2+ infrastructure interruptions" in table
    assert table.index(f'href="{n1.get_absolute_url()}">n1</a>') < table.index(f'href="{n2.get_absolute_url()}">n2</a>')
    link = f"/inventory/interruptions/?cause=infrastructure&amp;node={n1.pk}&amp;range=30d"
    assert f'<a href="{link}">3</a>' in table
    for figure in ("28.0", "Node failure (Slurm NODE_FAIL) <small", "(3 of 3)", "5.0 h", "18.0", "(2 of 2)"):
        assert figure in table, figure
    # The link's list: n1's three, not n2's.
    listed = viewer_client.get(link.replace("&amp;", "&")).content.decode()
    for job in ("1", "K1", "K2"):
        assert f"slurm-jobs/{fleet['jobs']['J1'].pk}/" in listed and f">{job}</a>" in listed, job
    assert ">L1</a>" not in listed and ">2</a>" not in listed


def test_empty_state_says_what_was_looked_for(viewer_client, fleet):
    m1, m2 = fleet["models"]
    quiet = section(viewer_client.get(m2.get_absolute_url()).content.decode())
    assert "No node of this model had 2+ infrastructure interruptions in 30 days." in quiet
    with override_settings(GOODPUT_REPEAT_OFFENDER_MIN=4):
        page = section(viewer_client.get(m1.get_absolute_url()).content.decode())
    assert "No node of this model had 4+ infrastructure interruptions in 30 days." in page
    assert 'id="repeat-offenders"' in page and "<table" not in page[page.index('id="repeat-offenders"') :]


def add_offenders(fleet, now, numbers):
    """More nodes of M1, each with two NODE_FAILs of its own team and a repair."""
    m1, h, source = fleet["models"][0], fleet["h"], fleet["source"]
    for i in numbers:
        node = make_node(site=fleet["sites"][0], node_model=make_node_model(), hostname=f"r{i}", state="in_service")
        for _ in range(8):
            make_gpu(node=node, gpu_model=m1)
        for k in range(2):
            add_job(
                source,
                f"r{i}-{k}",
                node,
                8,
                h - (12 + 3 * k) * H,
                h - (12 + 3 * k) * H,
                h - (11 + 3 * k) * H,
                "NODE_FAIL",
                f"t{i}",
                "x",
            )
        move(node, now - 10 * H, "in_service", "in_repair")
    recording.record_interruptions(now - 48 * H, now + MIN, now)


def test_gpu_model_page_keeps_its_query_count_with_more_offenders(viewer_client, fleet, now):
    m1 = fleet["models"][0]
    with override_settings(GOODPUT_REPEAT_OFFENDER_MIN=3):  # one offender: n1
        viewer_client.get(m1.get_absolute_url())
        with CaptureQueriesContext(connection) as one:
            page = viewer_client.get(m1.get_absolute_url()).content.decode()
        assert page.count("(3 of 3)") == 1
    add_offenders(fleet, now, range(12))
    with CaptureQueriesContext(connection) as many:
        page = viewer_client.get(m1.get_absolute_url()).content.decode()
    assert page.count("(2 of 2)") == 13  # n2 and the twelve new nodes, n1 above them
    assert len(many) == len(one)
