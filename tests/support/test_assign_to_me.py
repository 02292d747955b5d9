""""Assign to me" (issue 37): support staff take a ticket from its page or through the API, both through
``workflow.assign`` (history, first response, the notice) and under the rule that lets them choose any assignee
(``support.edit_ticket``); a researcher or a viewer gets no button and a 403."""

import pytest
from django.core import mail
from django.urls import reverse

from portal.roles import RESEARCHER, SUPPORT, VIEWER
from support.models import Ticket
from tests.factories import make_team, make_ticket
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db
BUTTON = "Assign to me</button>"


@pytest.fixture
def people(db):
    rita = make_user("rita", RESEARCHER)
    return {"sam": make_user("sam", SUPPORT), "kim": make_user("kim", SUPPORT), "rita": rita,
            "vic": make_user("vic", VIEWER), "team": make_team("nlp", [rita])}


@pytest.fixture
def ticket(people):
    return make_ticket(requester=people["rita"], team=people["team"], title="NCCL hangs on node-a01")


def page(client, user, ticket):
    client.force_login(user)
    return client.get(ticket.get_absolute_url())


def test_support_staff_take_a_ticket_from_its_page(client, people, ticket):
    sam = people["sam"]
    assert ticket.assignee is None and ticket.first_response_at is None
    assert BUTTON in page(client, sam, ticket).content.decode()

    response = client.post(reverse("support:ticket_assign_to_me", args=[ticket.pk]), follow=True)
    assert response.redirect_chain[-1][0] == ticket.get_absolute_url()
    html = response.content.decode()
    assert f"Ticket #{ticket.pk} is assigned to you." in html
    assert BUTTON not in html  # already theirs
    ticket.refresh_from_db()
    assert ticket.assignee == sam
    assert ticket.first_response_at is not None  # staff's first action on the ticket: the workflow's rule
    assert ticket.history.first().history_change_reason == "Assigned to sam"
    assert ticket.history.first().history_user == sam
    assert any(f"#{ticket.pk}" in message.subject for message in mail.outbox)  # the assignment's notice


def test_a_ticket_someone_else_holds_can_be_taken_over(client, people, ticket):
    from support import workflow

    workflow.assign(ticket, people["kim"], people["kim"], notify=False)
    assert BUTTON in page(client, people["sam"], ticket).content.decode()
    client.post(reverse("support:ticket_assign_to_me", args=[ticket.pk]))
    ticket.refresh_from_db()
    assert ticket.assignee == people["sam"]


@pytest.mark.parametrize("who", ["rita", "vic"])
def test_requesters_and_viewers_get_no_button_and_a_403(client, people, ticket, who):
    user = people[who]
    response = page(client, user, ticket)
    assert response.status_code == 200 and BUTTON not in response.content.decode()
    assert client.post(reverse("support:ticket_assign_to_me", args=[ticket.pk])).status_code == 403
    assert Ticket.objects.get(pk=ticket.pk).assignee is None


def test_logged_out_is_sent_to_log_in(client, ticket):
    response = client.post(reverse("support:ticket_assign_to_me", args=[ticket.pk]))
    assert response.status_code in (302, 403)
    assert Ticket.objects.get(pk=ticket.pk).assignee is None


def test_the_api_action_assigns_the_caller(people, ticket):
    api = token_client(people["sam"])
    url = f"/api/support/tickets/{ticket.pk}/assign-to-me/"
    response = api.post(url)
    assert response.status_code == 200, response.content
    assert response.json()["assignee"] == "sam"
    ticket.refresh_from_db()
    assert ticket.assignee == people["sam"]
    assert ticket.history.first().history_change_reason == "Assigned to sam"
    assert api.post(url).status_code == 200  # again: nothing changes, no second history record
    assert ticket.history.filter(history_change_reason="Assigned to sam").count() == 1


@pytest.mark.parametrize("who", ["rita", "vic"])
def test_the_api_action_refuses_who_may_not_assign(people, ticket, who):
    response = token_client(people[who]).post(f"/api/support/tickets/{ticket.pk}/assign-to-me/")
    assert response.status_code == 403
    assert Ticket.objects.get(pk=ticket.pk).assignee is None


def test_the_api_action_honours_if_match(people, ticket):
    api = token_client(people["sam"])
    etag = api.get(f"/api/support/tickets/{ticket.pk}/")["ETag"]
    from support import workflow

    workflow.assign(ticket, people["kim"], people["kim"], notify=False)  # changed since the caller read it
    response = api.post(f"/api/support/tickets/{ticket.pk}/assign-to-me/", HTTP_IF_MATCH=etag)
    assert response.status_code == 412
    assert Ticket.objects.get(pk=ticket.pk).assignee == people["kim"]
