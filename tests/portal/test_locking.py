"""Optimistic locking: two people editing the same object cannot silently overwrite each other, in the
edit forms (a signed snapshot in the form) and in the API (ETag / If-Match)."""

import re

import pytest
from django.test import Client

from inventory.models import Node
from planning.models import CapacityPlan
from portal.roles import MANAGER
from support.models import Ticket
from tests.factories import make_node, make_team, make_ticket
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def form_values(response):
    """The fields a browser would post back: the form's initial values, the hidden version included."""
    form = response.context["form"]
    values = {}
    for name in form.fields:
        value = form[name].value()
        if value is None:
            continue
        values[name] = [str(v) for v in value] if isinstance(value, (list, tuple)) else value
    return values


def test_a_stale_node_form_is_refused_and_names_what_changed(manager):
    other = make_user("olga", MANAGER)
    node = make_node(hostname="dgx-a01", owner_team="")
    make_team("vision"), make_team("nlp")
    alice, olga = logged_in(manager), logged_in(other)

    mine = form_values(alice.get(node.get_edit_url()))
    theirs = form_values(olga.get(node.get_edit_url()))
    assert mine["_version"]

    theirs["owner_team"] = "vision"
    assert olga.post(node.get_edit_url(), theirs).status_code == 302

    mine["owner_team"] = "nlp"
    response = alice.post(node.get_edit_url(), mine)
    assert response.status_code == 200  # the form again, not a redirect
    page = response.content.decode()
    assert "changed by someone else" in page and "olga" in page
    assert re.search(r"Owner team: none → vision", page)
    node.refresh_from_db()
    assert node.owner_team_id == "vision"  # nothing overwritten

    # The form shows alice's values over the new version: saving again is a deliberate overwrite.
    again = form_values(response)
    assert again["owner_team"] == "nlp"
    assert alice.post(node.get_edit_url(), again).status_code == 302
    node.refresh_from_db()
    assert node.owner_team_id == "nlp"


def test_an_unrelated_change_does_not_make_the_form_stale(manager):
    node = make_node(hostname="dgx-a01")
    client = logged_in(manager)
    values = form_values(client.get(node.get_edit_url()))
    Node.objects.filter(pk=node.pk).update(hostname="dgx-a01")  # same values: no conflict
    values["owner_team"] = make_team("ok").name
    assert client.post(node.get_edit_url(), values).status_code == 302


def test_a_tampered_version_is_refused(manager):
    node = make_node(hostname="dgx-a01")
    client = logged_in(manager)
    values = form_values(client.get(node.get_edit_url()))
    values["_version"] = values["_version"][:-2] + "xx"
    response = client.post(node.get_edit_url(), values)
    assert response.status_code == 200 and "version stamp is damaged" in response.content.decode()


def test_plan_and_ticket_forms_are_locked_too(manager, django_user_model):
    plan = CapacityPlan.objects.create(name="2027", horizon_months=12, owner=manager)
    client = logged_in(manager)
    url = f"/planning/capacity-plans/{plan.pk}/edit/"
    values = form_values(client.get(url))
    CapacityPlan.objects.filter(pk=plan.pk).update(horizon_months=24)
    values["name"] = "2027 (revised)"
    response = client.post(url, values)
    assert response.status_code == 200 and "Horizon" in response.content.decode()
    assert CapacityPlan.objects.get(pk=plan.pk).name == "2027"

    ticket = make_ticket(title="Fans loud")
    engineer = make_user("sam", "support")
    client = logged_in(engineer)
    url = f"/support/tickets/{ticket.pk}/edit/"
    values = form_values(client.get(url))
    Ticket.objects.filter(pk=ticket.pk).update(title="Fans very loud")
    values["description"] = "since Monday"
    response = client.post(url, values)
    assert response.status_code == 200 and "Fans loud → Fans very loud" in response.content.decode()
