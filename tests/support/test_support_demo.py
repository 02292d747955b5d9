"""``seed_demo`` adds the support demo: accounts, teams and a handful of tickets in different states and
priorities (one breaching its SLA, one from a telemetry fault); a second run adds nothing."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from portal.roles import RESEARCHER, SUPPORT, role_of
from support import faults, sla
from support.models import Ticket, TicketComment

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_demo_tickets_and_accounts(django_capture_on_commit_callbacks):
    call_command("seed_demo", stdout=StringIO())
    tickets = list(Ticket.objects.all())
    assert len(tickets) == 7
    assert len({t.status for t in tickets}) >= 5 and {t.priority for t in tickets} >= {"P1", "P2", "P3", "P4"}
    states = {t.title: sla.state(t) for t in tickets}
    assert states["Cannot reach lys-lustre-scratch from the inference pool"] == sla.BREACHED
    assert list(Ticket.objects.breached()) == [Ticket.objects.get(title__startswith="Cannot reach")]
    assert states["Request: 16 more H200 GPUs for the Q1 pre-training run"] == sla.PAUSED
    assert states["CUDA 12.8 driver mismatch on lys-a100-004"] == sla.MET
    telemetry = Ticket.objects.get(source=Ticket.Source.TELEMETRY)
    assert telemetry.fault == Ticket.Fault.ECC and telemetry.gpu.state == "degraded"
    assert telemetry.sla_contract is not None  # Zurich is under the NVIDIA support contract
    assert TicketComment.objects.filter(internal=True).exists()
    assert role_of(User.objects.get(username="support")) == SUPPORT
    researcher = User.objects.get(username="researcher")
    assert role_of(researcher) == RESEARCHER and researcher.check_password("demo-researcher")
    visible = set(Ticket.objects.visible_to(researcher).values_list("title", flat=True))
    assert "Training job stalls at step 12k on zrh-h100-003" in visible
    assert telemetry.title in visible  # zrh-h100-012 belongs to the researcher's team, llm-pretrain
    assert "GPU 3 fell off the bus (XID 79) on zrh-h100-007" not in visible  # support's own, no team
    counts = (Ticket.objects.count(), TicketComment.objects.count(), Ticket.history.count())
    call_command("seed_demo", stdout=StringIO())
    assert (Ticket.objects.count(), TicketComment.objects.count(), Ticket.history.count()) == counts
    # The fault task over the seeded telemetry does not open a second ticket for the demo's faulty GPU: its XID
    # episodes are the ECC errors already ticketed.
    opened = faults.open_tickets(faults.detect(), notify=False)
    assert telemetry.gpu not in [ticket.gpu for ticket in opened]
    assert Ticket.objects.open().filter(gpu=telemetry.gpu).count() == 1
