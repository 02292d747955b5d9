"""The ticket form's node and GPU pickers (issue 37): ``/support/pickers/<nodes|gpus>/`` answers what a person may
see (login and the model's view permission), the form's own choices (no retired asset), at most 20 rows; the form
draws its selects with the chosen option only, and still validates the id on the server."""

import pytest
from django.urls import reverse

from inventory.models import LifecycleState
from portal.roles import RESEARCHER, SUPPORT
from support.forms import PICKER_LIMIT
from support.models import Ticket
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db
L = LifecycleState


@pytest.fixture
def fleet(db):
    """Three nodes of 8 GPUs (a retired GPU on node a01), a retired node."""
    site, model, gpu_model = make_site(name="Lyon"), make_node_model(), make_gpu_model()
    nodes = {name: make_node(site=site, node_model=model, hostname=name, state=L.IN_SERVICE)
             for name in ("a01", "a02", "b01")}
    nodes["old"] = make_node(site=site, node_model=model, hostname="a99-old", state=L.RETIRED)
    gpus = {(name, slot): make_gpu(node=node, slot=slot, gpu_model=gpu_model, serial=f"SN-{name}-{slot}",
                                   state=L.IN_SERVICE)
            for name, node in nodes.items() if name != "old" for slot in range(8)}
    gpus[("a01", 7)].state = L.RETIRED
    gpus[("a01", 7)].save()
    return nodes, gpus


def ask(client, kind, **params):
    return client.get(reverse("support:picker", args=[kind]), params)


def texts(response):
    assert response.status_code == 200, response.content
    return [row["text"] for row in response.json()["results"]]


def test_nodes_match_as_one_types_without_the_retired(client, fleet):
    client.force_login(make_user("rita", RESEARCHER))
    assert texts(ask(client, "nodes", q="a0")) == ["a01", "a02"]  # a99-old is retired
    assert texts(ask(client, "nodes", q="B01")) == ["b01"]
    row = ask(client, "nodes", q="a01").json()["results"][0]
    assert row == {"id": fleet[0]["a01"].pk, "text": "a01", "detail": "In service"}


def test_gpus_by_name_slot_serial_and_on_the_chosen_node(client, fleet):
    nodes, gpus = fleet
    client.force_login(make_user("rita", RESEARCHER))
    assert texts(ask(client, "gpus", q="a02/gpu3")) == ["a02/gpu3 (SN-a02-3)"]
    assert texts(ask(client, "gpus", q="gpu3")) == ["a01/gpu3 (SN-a01-3)", "a02/gpu3 (SN-a02-3)",
                                                    "b01/gpu3 (SN-b01-3)"]
    assert texts(ask(client, "gpus", q="gpu3", node=nodes["b01"].pk)) == ["b01/gpu3 (SN-b01-3)"]
    assert texts(ask(client, "gpus", q="SN-b01-5")) == ["b01/gpu5 (SN-b01-5)"]
    assert texts(ask(client, "gpus", q="a01/gpu7")) == []  # retired
    assert len(texts(ask(client, "gpus", q="", node=nodes["a01"].pk))) == 7
    assert texts(ask(client, "gpus", q="", node="x")) == []  # not an id: no node has it


def test_at_most_the_limit_and_whether_more_match(client, fleet):
    client.force_login(make_user("rita", RESEARCHER))
    answer = ask(client, "gpus", q="").json()
    assert len(answer["results"]) == PICKER_LIMIT == 20 and answer["more"] is True  # 23 GPUs in service
    answer = ask(client, "gpus", q="a0").json()
    assert len(answer["results"]) == 15 and answer["more"] is False
    assert texts(ask(client, "gpus", q="x" * 500)) == []  # a long term is cut, not an error


def test_login_and_the_view_permission_are_required(client, fleet):
    response = ask(client, "gpus", q="a")  # logged out: to the log-in page, as every page of the portal
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    client.force_login(make_user("nobody", None))  # an account without a role sees no inventory
    assert ask(client, "nodes", q="a").status_code == 403
    assert ask(client, "gpus", q="a").status_code == 403
    client.force_login(make_user("sam", SUPPORT))
    assert ask(client, "racks", q="a").status_code == 404


def test_the_form_draws_only_the_chosen_option_and_validates_on_the_server(client, fleet):
    nodes, gpus = fleet
    client.force_login(make_user("rita", RESEARCHER))
    url = reverse("support:ticket_add")
    html = client.get(url, {"gpu": gpus[("b01", 2)].pk}).content.decode()
    gpu_select = html.split('name="gpu"')[1].split("</select>")[0]
    assert gpu_select.count("<option") == 2  # the empty choice and the chosen GPU, not 23
    assert f'value="{gpus[("b01", 2)].pk}" selected>b01/gpu2 (SN-b01-2)</option>' in gpu_select
    assert f'data-picker="{reverse("support:picker", args=["gpus"])}"' in html
    assert 'data-picker-narrow="node"' in html
    assert "portal/js/picker.js" in html

    # A retired GPU's id is refused by the form, as any id outside its choices.
    data = {"title": "Fans loud", "category": Ticket.Category.HARDWARE, "description": "", "node": nodes["a01"].pk,
            "gpu": gpus[("a01", 7)].pk}
    response = client.post(url, data)
    assert response.status_code == 200 and not Ticket.objects.exists()
    assert "Select a valid choice" in response.content.decode()
    response = client.post(url, {**data, "gpu": gpus[("a01", 6)].pk})
    ticket = Ticket.objects.get()
    assert response.status_code == 302 and (ticket.node, ticket.gpu) == (nodes["a01"], gpus[("a01", 6)])
