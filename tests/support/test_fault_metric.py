"""A ticket opened by a telemetry fault shows the fault's own metric (issue 19): an ECC ticket its GPU's ECC error
counts (hourly chart and totals) and its ECC XID events; an XID ticket its hardware XID events, not the ECC ones."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.telemetry.models import GPUHourly
from portal.roles import SUPPORT
from support import faults
from support.models import Ticket
from tests.factories import make_gpu, make_team
from tests.helpers.accounts import make_user
from tests.support.test_support import L, hour, in_service_node, transition, xid_event

pytestmark = pytest.mark.django_db


@pytest.fixture
def engineer_client(client):
    client.force_login(make_user("sam", SUPPORT))
    return client


def faulty_gpu():
    make_team("vision")
    gpu = make_gpu(node=in_service_node(owner_team="vision"))
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(gpu, state)
    return gpu


def test_ecc_ticket_shows_the_ecc_counts_and_its_ecc_events(engineer_client):
    gpu = faulty_gpu()
    now = timezone.now()
    GPUHourly.objects.create(gpu=gpu, hour=hour(now, 3), util_mean=50, ecc_sbe_errors=4, ecc_dbe_errors=0)
    GPUHourly.objects.create(gpu=gpu, hour=hour(now, 1), util_mean=50, ecc_sbe_errors=2, ecc_dbe_errors=1)
    GPUHourly.objects.create(gpu=gpu, hour=hour(now), util_mean=50, xid_errors=2, samples=60)
    xid_event(gpu, 94, now - timedelta(minutes=20))  # contained ECC error
    xid_event(gpu, 79, now - timedelta(minutes=10))  # fell off the bus: the XID ticket's, not this one's
    [ticket] = [t for t in faults.open_tickets(faults.detect(now)) if t.fault == Ticket.Fault.ECC]

    html = engineer_client.get(ticket.get_absolute_url()).content.decode()
    section = html.split('id="fault-metric"', 1)[1].split("</section>", 1)[0]
    assert f"ECC errors on {gpu}" in section
    assert '<b data-figure="single-bit">6</b>' in section and '<b data-figure="double-bit">1</b>' in section
    assert "XID 94" in section and "XID 79" not in section
    chart = json.loads(html.split('id="fault-ecc-data" type="application/json">', 1)[1].split("</script>", 1)[0])
    assert [s["name"] for s in chart["series"]] == ["single-bit", "double-bit"]
    assert [v for v in chart["series"][0]["y"] if v is not None] == [4, 2]
    assert [v for v in chart["series"][1]["y"] if v is not None] == [0, 1]


def test_xid_ticket_shows_its_xid_events(engineer_client):
    gpu = faulty_gpu()
    now = timezone.now()
    GPUHourly.objects.create(gpu=gpu, hour=hour(now), util_mean=50, xid_errors=1, samples=60)
    xid_event(gpu, 79, now - timedelta(minutes=10))
    [ticket] = faults.open_tickets(faults.detect(now))
    assert ticket.fault == Ticket.Fault.XID
    html = engineer_client.get(ticket.get_absolute_url()).content.decode()
    section = html.split('id="fault-metric"', 1)[1].split("</section>", 1)[0]
    assert f"XID events on {gpu}" in section and "XID 79" in section and "GPU has fallen off the bus" in section
    assert "ECC errors" not in section


def test_ecc_ticket_without_ecc_counters_says_so(engineer_client):
    gpu = faulty_gpu()
    now = timezone.now()
    GPUHourly.objects.create(gpu=gpu, hour=hour(now), util_mean=50, xid_errors=1, samples=60)
    xid_event(gpu, 48, now - timedelta(minutes=10))
    [ticket] = faults.open_tickets(faults.detect(now))
    html = engineer_client.get(ticket.get_absolute_url()).content.decode()
    assert "publishes no ECC counters" in html and "fault-ecc-data" not in html and "XID 48" in html


def test_a_ticket_opened_by_hand_shows_no_fault_metric(engineer_client):
    gpu = faulty_gpu()
    ticket = Ticket.objects.create(title="Slow", description="slow", gpu=gpu, node=gpu.node)
    assert 'id="fault-metric"' not in engineer_client.get(ticket.get_absolute_url()).content.decode()


def remap_event(gpu, kind, ts):
    from inventory.telemetry.models import HealthEvent

    return HealthEvent.objects.create(gpu=gpu, ts=ts, hour=hour(ts), kind=kind)


def test_a_row_remap_failure_opens_a_ticket_that_says_to_replace_the_gpu(engineer_client):
    """DCGM_FI_DEV_ROW_REMAP_FAILURE turning to 1 (issue 34): the memory cannot be repaired any more, NVIDIA's guidance
    is an RMA. One ticket (hardware, the GPU degraded), none again while it is open; a pending remap (the GPU needs
    a reset) opens nothing."""
    from inventory.telemetry import remap

    gpu = faulty_gpu()
    other = make_gpu(node=gpu.node)
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(other, state)
    now = timezone.now()
    remap_event(gpu, remap.FAILURE, now - timedelta(minutes=10))
    remap_event(other, remap.PENDING, now - timedelta(minutes=10))

    [ticket] = faults.open_tickets(faults.detect(now))
    assert (ticket.fault, ticket.gpu, ticket.fault_key) == (Ticket.Fault.ROW_REMAP, gpu, f"row_remap:gpu:{gpu.pk}")
    assert ticket.title == f"Row remap failure on {gpu}" and ticket.category == Ticket.Category.HARDWARE
    assert "DCGM_FI_DEV_ROW_REMAP_FAILURE read 1" in ticket.description
    assert "The GPU must be replaced (NVIDIA's guidance: RMA)." in ticket.description
    gpu.refresh_from_db()
    other.refresh_from_db()
    assert (gpu.state, other.state) == (L.DEGRADED, L.IN_SERVICE)
    assert faults.open_tickets(faults.detect(now)) == []  # its ticket is open
    html = engineer_client.get(ticket.get_absolute_url()).content.decode()
    assert "Row remap failure" in html and "RMA" in html
