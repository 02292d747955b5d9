"""Support links each interruption's fault to the ticket telemetry opened for it (``support.queries
.interruption_tickets``, registered as goodput's ticket finder)."""

import pytest
from django.test import override_settings

from inventory.goodput import recording
from inventory.models import GPU
from support import faults
from support.models import Ticket
from tests.helpers.goodput import MIN, H, make_goodput_fleet
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db


@override_settings(SUPPORT_FAULT_WINDOW_HOURS=8)  # the fleet's XID 79 was 4.5 hours ago
def test_the_interruptions_list_links_the_faults_ticket(monkeypatch, viewer_api):
    now = freeze_now(monkeypatch)
    fleet = make_goodput_fleet(now)
    GPU.objects.filter(node__in=fleet["nodes"].values()).update(state="in_service")
    [ticket] = [t for t in faults.open_tickets(faults.detect(now)) if t.fault == Ticket.Fault.XID]
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    rows = {row["job_id"]: row for row in viewer_api.get("/api/inventory/interruptions/").json()["results"]}
    assert rows["2"]["ticket"] == {"id": ticket.pk, "url": f"/support/tickets/{ticket.pk}/"}
    assert rows["1"]["ticket"] is None  # a NODE_FAIL without a fault on record: no ticket to link
