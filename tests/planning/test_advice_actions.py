"""Actions from advice (issue 37, item 4a): on a reclaim (idle nodes) recommendation a manager notifies the owning
team (a mail to its address, PI and managers naming the nodes and the idle figures the rule measured) and opens a
ticket for it (support's action, registered), and finds "Move these nodes" pre-filled; each action is recorded on the
recommendation's page."""

import pytest
from django.core import mail
from django.test import Client

from inventory.models import LifecycleState, TeamMember
from planning.models import RecommendationAction
from planning.recommendations import actions
from portal.roles import MANAGER, VIEWER
from support.models import Ticket
from tests.factories import TeamFactory, make_node
from tests.helpers.accounts import make_user
from tests.helpers.advice import make_reclaim

pytestmark = pytest.mark.django_db


@pytest.fixture
def reclaim(db):
    pi = make_user("petra", None)
    team = TeamFactory(name="vision", email="vision-list@example.org", pi=pi)
    TeamMember.objects.create(team=team, user=make_user("mo", None), role="manager")
    TeamMember.objects.create(team=team, user=make_user("mem", None), role="member")
    nodes = [make_node(hostname=f"gpu-{i:02d}", partition="research", owner_team=team,
                       state=LifecycleState.IN_SERVICE) for i in range(2)]
    return make_reclaim(nodes, idle_days=6, idle_gpu_hours=1000.0)


@pytest.fixture
def manager_client_of():
    def login(user):
        client = Client()
        client.force_login(user)
        return client
    return login


def test_the_page_offers_the_actions_and_a_prefilled_move(reclaim, manager_client_of):
    client = manager_client_of(make_user("ana", MANAGER))
    html = client.get(reclaim.get_absolute_url()).content.decode()
    assert 'id="act-notify_team">Notify the owning team</button>' in html
    assert 'id="act-open_ticket">Open a ticket</button>' in html
    assert 'id="move-nodes" href="/inventory/partition-moves/propose/?nodes=gpu-00%2Cgpu-01' in html
    assert f"recommendation={reclaim.pk}" in html
    viewer = manager_client_of(make_user("val", VIEWER)).get(reclaim.get_absolute_url()).content.decode()
    assert "act-notify_team" not in viewer and "move-nodes" not in viewer


def test_notify_mails_the_team_pi_and_managers_with_the_rules_figures(reclaim, manager_client_of):
    ana = make_user("ana", MANAGER)
    page = manager_client_of(ana).post(f"/planning/recommendations/{reclaim.pk}/act/notify_team/", follow=True)
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sorted(sent.to) == ["mo@example.org", "petra@example.org", "vision-list@example.org"]
    assert sent.subject == f"[Cluster Portal] vision: 2 of your nodes sat idle ({reclaim.title})"
    rows = {row["hostname"]: row for row in actions.reclaim_rows(reclaim)}  # as the rule wrote them
    assert rows["gpu-00"]["idle_gpu_hours"] == 1000.0
    assert ("- gpu-00: idle 6 day(s), 1,000.0 idle GPU-hours (2,000.00 USD), mean utilization 1.5 %, idle in "
            "4 of 4 weeks before") in sent.body
    assert f"/planning/recommendations/{reclaim.pk}/" in sent.body
    said = ("Notified the owning team: mailed vision (mo@example.org, petra@example.org, vision-list@example.org) "
            "about gpu-00, gpu-01.")
    html = page.content.decode()
    assert said in html  # the message, and the record on the page
    record = RecommendationAction.objects.get()
    assert (record.action, record.username, record.said) == ("notify_team", "ana", said)


def test_open_ticket_is_supports_action_once_per_recommendation(reclaim, manager_client_of):
    client = manager_client_of(make_user("ana", MANAGER))
    client.post(f"/planning/recommendations/{reclaim.pk}/act/open_ticket/")
    ticket = Ticket.objects.get()
    assert ticket.title == f"Reclaim idle nodes: {reclaim.title}"
    assert (ticket.category, ticket.priority, ticket.team.name, ticket.requester.username) == (
        "capacity", "P4", "vision", "ana")
    assert "- gpu-01: idle 6 day(s), 1,000.0 idle GPU-hours" in ticket.description
    html = client.get(reclaim.get_absolute_url()).content.decode()
    assert "act-open_ticket" not in html and "act-notify_team" in html  # one ticket; notices may be sent again
    assert f'Ticket #{ticket.pk} opened for gpu-00, gpu-01 (team vision). <a href="/support/tickets/{ticket.pk}/">' \
           in html
    again = client.post(f"/planning/recommendations/{reclaim.pk}/act/open_ticket/", follow=True)
    assert "A ticket was opened for it already" in again.content.decode() and Ticket.objects.count() == 1


def test_refusals(reclaim, manager_client_of):
    viewer = manager_client_of(make_user("val", VIEWER))
    assert viewer.post(f"/planning/recommendations/{reclaim.pk}/act/notify_team/").status_code == 403
    manager = manager_client_of(make_user("ana", MANAGER))
    answer = manager.post(f"/planning/recommendations/{reclaim.pk}/act/nonsense/", follow=True)
    assert "is not an action on this recommendation" in answer.content.decode()
    assert not mail.outbox and not RecommendationAction.objects.exists()


def test_nodes_no_team_owns_are_said_not_mailed(db, manager_client_of):
    rec = make_reclaim([make_node(hostname="lone", partition="research", state=LifecycleState.IN_SERVICE)])
    answer = manager_client_of(make_user("ana", MANAGER)).post(
        f"/planning/recommendations/{rec.pk}/act/notify_team/", follow=True)
    assert "No team owns these nodes: there is nobody to notify." in answer.content.decode()
    assert not mail.outbox
