"""Users choose the columns of the list tables (portal.tables.ColumnChoice), saved per user (TablePreference)."""

import pytest
from django.test import Client
from django.urls import reverse

from inventory.models import Node
from inventory.tables import NodeTable
from planning.contracts.tables import ContractTable
from portal.models import TablePreference
from portal.roles import MANAGER, VIEWER
from tests.factories import make_node
from tests.helpers.accounts import make_user

NODES = "/inventory/nodes/"


def headers(response):
    """The names of the columns the page's table shows, in order."""
    table = response.context["table"]
    return [column.name for column in table.columns]


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def save(client, table="NodeTable", columns=(), next_url=NODES, **extra):
    return client.post(reverse("table_columns"), {"table": table, "columns": list(columns), "next": next_url, **extra})


@pytest.fixture
def users(db):
    return make_user("max", MANAGER), make_user("vera", VIEWER)


def test_the_defaults_leave_out_what_does_not_fit_and_the_menu_offers_it(users):
    make_node(hostname="dgx-a01", serial="SN-4711")
    page = client_for(users[1]).get(NODES)
    assert headers(page) == list(NodeTable.default_columns)
    html = page.content.decode()
    assert "SN-4711" not in html  # serial: not a default column
    assert 'name="columns" value="serial"' in html and 'id="column-menu"' in html


def test_a_saved_choice_changes_that_users_columns_only(users):
    manager, viewer = users
    make_node(hostname="dgx-a01", serial="SN-4711")
    mine = client_for(manager)
    answer = save(mine, columns=["serial", "state"], **{"position-serial": "1", "position-state": "2"},
                  next_url=f"{NODES}?state=in_service&sort=-hostname&page=1")
    assert answer.status_code == 302 and answer["Location"] == f"{NODES}?state=in_service&sort=-hostname&page=1"
    page = mine.get(NODES)
    assert headers(page) == ["select", "hostname", "serial", "state"]  # the required ones first, then in order
    assert "SN-4711" in page.content.decode()
    assert headers(client_for(viewer).get(NODES)) == list(NodeTable.default_columns)

    # The numbers set the order; saving again replaces the choice.
    save(mine, columns=["serial", "state", "site"],
         **{"position-hostname": "3", "position-serial": "2", "position-state": "1", "position-site": "9"})
    assert headers(mine.get(NODES)) == ["select", "state", "serial", "hostname", "site"]
    assert TablePreference.objects.get(user=manager).columns == ["select", "state", "serial", "hostname", "site"]


def test_reset_brings_the_defaults_back(users):
    manager = users[0]
    client = client_for(manager)
    save(client, columns=["serial"])
    assert headers(client.get(NODES)) == ["select", "hostname", "serial"]
    answer = save(client, action="reset", next_url=f"{NODES}?q=dgx")
    assert answer.status_code == 302 and answer["Location"] == f"{NODES}?q=dgx"
    assert not TablePreference.objects.filter(user=manager).exists()
    assert headers(client.get(NODES)) == list(NodeTable.default_columns)


def test_exports_keep_every_column(users):
    make_node(hostname="dgx-a01", serial="SN-4711")
    client = client_for(users[0])
    save(client, columns=["state"])
    header = client.get(f"{NODES}?_export=csv").content.decode().splitlines()[0].split(",")
    assert len(header) == len(NodeTable.base_columns) - 1  # all but the row checkboxes
    assert {"Hostname", "Site", "Position (U)", "Serial", "Asset tag"} <= set(header)


@pytest.mark.parametrize("data, error", [
    ({"table": "NoSuchTable", "columns": ["serial"]}, "“NoSuchTable” is not a table whose columns can be chosen."),
    # A table without a column choice (the ticket queue leaves out fixed columns for everyone).
    ({"table": "TicketTable", "columns": ["title"]}, "“TicketTable” is not a table whose columns can be chosen."),
    ({"columns": ["serial"]}, "“” is not a table whose columns can be chosen."),
    ({"table": "NodeTable", "columns": ["serial", "password"]}, "This table has no column &#x27;password&#x27;."),
    # A contract column posted for the node table: refused, not stored.
    ({"table": "NodeTable", "columns": ["vendor"]}, "This table has no column &#x27;vendor&#x27;."),
    ({"table": "NodeTable", "columns": ["serial"], "position-serial": "first"}, "must be a whole number"),
])
def test_bad_input_is_refused_with_a_clear_message(users, data, error):
    answer = client_for(users[0]).post(reverse("table_columns"), {"next": NODES, **data})
    assert answer.status_code == 400
    assert error in answer.content.decode()
    assert not TablePreference.objects.exists()


def test_a_redirect_elsewhere_is_not_followed(users):
    answer = save(client_for(users[0]), columns=["serial"], next_url="https://evil.example/")
    assert answer.status_code == 302 and answer["Location"] == reverse("home")


def test_saving_needs_the_csrf_token(users):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users[0])
    assert save(client, columns=["serial"]).status_code == 403
    assert not TablePreference.objects.exists()


def test_a_get_is_not_allowed(users):
    assert client_for(users[0]).get(reverse("table_columns")).status_code == 405


@pytest.mark.parametrize("stored", [
    {"serial": True},  # not a list
    "serial",
    [1, None, ["serial"], {"a": 1}],  # no column names
    ["removed_column"],  # a column the table no longer has
    ["hostname"],  # only a required column
])
def test_a_stored_choice_the_table_cannot_use_shows_the_defaults(users, stored):
    manager = users[0]
    TablePreference.objects.create(user=manager, table="NodeTable", columns=stored)
    page = client_for(manager).get(NODES)
    assert page.status_code == 200
    assert headers(page) == list(NodeTable.default_columns)


def test_unknown_names_in_a_stored_choice_are_skipped(users):
    manager = users[0]
    TablePreference.objects.create(user=manager, table="NodeTable", columns=["gone", "serial", 3, "serial"])
    assert headers(client_for(manager).get(NODES)) == ["select", "hostname", "serial"]


def test_a_link_sorted_by_a_column_this_user_hides_opens_unsorted(users):
    # A colleague's link (?sort=partition) for someone who hides the partition: django-tables2 ignores the sort.
    manager = users[0]
    for hostname, partition in (("dgx-a01", "train"), ("dgx-a02", "infer")):
        make_node(hostname=hostname, partition=partition)
    client = client_for(manager)
    assert [r.record.hostname for r in client.get(f"{NODES}?sort=partition").context["table"].paginated_rows] == [
        "dgx-a02", "dgx-a01"]
    save(client, columns=["state"])
    page = client.get(f"{NODES}?sort=partition")
    assert page.status_code == 200
    assert [row.record.hostname for row in page.context["table"].paginated_rows] == ["dgx-a01", "dgx-a02"]


def test_every_table_with_a_choice_renders_with_its_defaults_and_a_saved_choice(users):
    manager = users[0]
    client = client_for(manager)
    pages = {"NodeTable": NODES, "ContractTable": "/planning/contracts/",
             "CapacityPlanTable": "/planning/capacity-plans/", "GPUModelTable": "/inventory/gpu-models/",
             "ChangeTable": "/changes/"}
    for name, url in pages.items():
        page = client.get(url)
        assert page.status_code == 200, url
        assert f'name="table" value="{name}"' in page.content.decode(), url
    save(client, table="ContractTable", columns=["owner", "currency"], next_url="/planning/contracts/")
    assert headers(client.get("/planning/contracts/")) == ["reference", "owner", "currency"]
    assert set(ContractTable.default_columns) <= set(ContractTable.base_columns)


def test_the_change_log_shows_the_chosen_columns(users):
    manager = users[0]
    client = client_for(manager)
    make_node(hostname="dgx-a01")
    page = client.get("/changes/").content.decode()
    assert "dgx-a01" in page and "<th" in page and "Created" in page
    save(client, table="ChangeTable", columns=["who"], next_url="/changes/")
    page = client.get("/changes/")
    assert [column.name for column in page.context["table"].columns] == ["when", "who", "target"]  # table order
    assert "Created" not in page.content.decode().split("<tbody")[1]


def test_the_node_list_reads_the_choice_in_one_query_however_many_rows(users, django_assert_max_num_queries):
    manager = users[0]
    client = client_for(manager)
    save(client, columns=["serial", "state", "site", "rack", "node_model"])
    make_node(hostname="dgx-a01")
    client.get(NODES)
    with django_assert_max_num_queries(40) as few:
        client.get(NODES)
    for i in range(20):
        make_node(hostname=f"dgx-b{i:02}")
    with django_assert_max_num_queries(len(few)):
        page = client.get(NODES)
    assert len(page.context["table"].page.object_list) == Node.objects.count()
