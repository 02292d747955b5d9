"""The node list's partition filter: a select of the fleet's partitions, narrowed by the chosen site (redrawn with
the table when the site changes, as on the utilization dashboard); the API refuses a partition the site has not."""

import pytest
from django.urls import reverse

from tests.factories import make_node, make_site

pytestmark = pytest.mark.django_db
NODES = reverse("inventory:node_list")
API = "/api/inventory/nodes/"
TABLE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "object-table"}


@pytest.fixture
def fleet():
    alpha, beta = make_site(name="alpha"), make_site(name="beta")
    make_node(site=alpha, hostname="a-train", partition="train")
    make_node(site=alpha, hostname="a-infer", partition="infer")
    make_node(site=beta, hostname="b-infer", partition="infer")
    make_node(site=beta, hostname="b-none", partition="")
    return {"alpha": alpha, "beta": beta}


def partition_select(html):
    field = html.split('id="filter-partition"')[1].split("</div>")[0]
    return field, field.split("<select")[1].split("</select>")[0]


def hostnames(response):
    return sorted(row.record.hostname for row in response.context["table"].page.object_list)


def test_the_select_offers_the_fleets_partitions_then_the_chosen_sites(viewer_client, fleet):
    _field, select = partition_select(viewer_client.get(NODES).content.decode())
    assert select.count("<option") == 3  # "All partitions", infer, train: each once, none for the empty one
    assert '<option value="" selected>All partitions</option>' in select
    assert select.index('"infer"') < select.index('"train"')

    response = viewer_client.get(NODES, {"site": fleet["beta"].pk, "partition": "infer"})
    _field, select = partition_select(response.content.decode())
    assert '<option value="infer" selected>infer</option>' in select and "train" not in select
    assert hostnames(response) == ["b-infer"]


def test_choosing_a_site_redraws_the_partitions_with_the_table(viewer_client, fleet):
    response = viewer_client.get(NODES, {"site": fleet["beta"].pk}, **TABLE)
    html = response.content.decode()
    field, select = partition_select(html)
    assert 'hx-swap-oob="true"' in field and '"infer"' in select and "train" not in select
    assert 'class="filters' not in html  # the table (with its columns menu) only, plus the select out of band
    assert hostnames(response) == ["b-infer", "b-none"]
    # The full page draws the select once, in the filters, not out of band.
    page = viewer_client.get(NODES, {"site": fleet["beta"].pk}).content.decode()
    assert page.count('id="filter-partition"') == 1 and "hx-swap-oob" not in partition_select(page)[0]


def test_a_partition_left_from_another_site_is_dropped_on_the_page(viewer_client, fleet):
    """What the URL keeps when the site changes: the site's nodes, not an empty list."""
    response = viewer_client.get(NODES, {"site": fleet["beta"].pk, "partition": "train"}, **TABLE)
    assert hostnames(response) == ["b-infer", "b-none"]
    assert "All partitions</option>" in partition_select(response.content.decode())[1]
    # Without a site any partition filters (case-insensitively, as before).
    assert hostnames(viewer_client.get(NODES, {"partition": "TRAIN"})) == ["a-train"]


def test_the_api_answers_400_for_a_partition_the_site_has_not(viewer_api, fleet):
    answer = viewer_api.get(API, {"site": fleet["beta"].pk, "partition": "train"})
    assert answer.status_code == 400
    assert answer.json() == {
        "partition": [f"No node of site {fleet['beta'].pk} is in partition 'train'; its partitions: infer."]
    }
    answer = viewer_api.get(API, {"site": fleet["beta"].pk, "partition": "Infer"})
    assert answer.status_code == 200 and [n["hostname"] for n in answer.json()["results"]] == ["b-infer"]
    answer = viewer_api.get(API, {"partition": "train"})
    assert answer.status_code == 200 and [n["hostname"] for n in answer.json()["results"]] == ["a-train"]


def test_the_list_keeps_a_constant_number_of_queries(viewer_client, fleet, django_assert_max_num_queries):
    params = {"site": fleet["alpha"].pk, "partition": "train"}
    viewer_client.get(NODES, params)
    with django_assert_max_num_queries(30) as few:
        viewer_client.get(NODES, params)
    for i in range(20):
        make_node(site=fleet["alpha"], hostname=f"a-more-{i}", partition=f"p{i}")
    with django_assert_max_num_queries(len(few)):
        response = viewer_client.get(NODES, params)
    assert hostnames(response) == ["a-train"]
