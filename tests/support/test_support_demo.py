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


def test_the_demo_has_notification_rules_and_a_move_for_the_manager_to_decide(client):
    """The demo a new manager opens: their own rule for hardware faults and a team's digest under Notifications, and
    the move the reclaim recommendation suggests, proposed by the admin, on the manager's home page to decide; the
    manager approves it there and the idle nodes change partition. Seeding again adds neither."""
    from inventory.models import Node
    from inventory.partitionmoves.models import PartitionMove
    from planning.models import Recommendation
    from planning.recommendations.actions import reclaim_rows
    from support.eventrules.models import NotificationRule

    call_command("seed_demo", stdout=StringIO())
    manager = User.objects.get(username="manager")
    rules = {rule.name: rule for rule in NotificationRule.objects.all()}
    assert set(rules) == {"Hardware faults, at once", "llm-pretrain: allocation and tickets, daily"}
    assert rules["Hardware faults, at once"].owner == manager
    assert rules["llm-pretrain: allocation and tickets, daily"].team.name == "llm-pretrain"
    client.force_login(manager)
    listed = client.get("/support/notifications/").content.decode()
    assert "Hardware faults, at once" in listed and "llm-pretrain: allocation and tickets, daily" in listed

    (move,) = PartitionMove.objects.all()
    rec = Recommendation.objects.get(pk=move.recommendation)
    idle = {row["hostname"] for row in reclaim_rows(rec)}
    assert move.proposed_by.username == "admin" and (move.from_partition, move.to_partition) == ("train-h100",
                                                                                                 "inference")
    assert set(move.nodes.values_list("hostname", flat=True)) == idle >= {"zrh-h100-015", "zrh-h100-016"}
    line = {d.key: d for d in client.get("/").context["decisions"]}["partition-moves"]
    assert line.count == 1
    assert f"/inventory/partition-moves/{move.pk}/" in client.get(line.url).content.decode()
    answer = client.post(f"/inventory/partition-moves/{move.pk}/decide/", {"action": "approve", "comment": "ok"})
    assert answer.status_code == 302
    assert set(Node.objects.filter(hostname__in=idle).values_list("partition", flat=True)) == {"inference"}

    call_command("seed_demo", stdout=StringIO())
    assert NotificationRule.objects.count() == 2 and PartitionMove.objects.count() == 1
