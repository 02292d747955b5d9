"""The node and GPU tables build their rows in Python (``portal.tables.PortalTable``): the pages show exactly
what django-tables2's per-cell rendering shows (links, badges, expired warranties, empty cells, sorting,
filters, pages), and the links are the routes' own."""

import re
from datetime import date

import pytest
from django.urls import reverse

from portal.tables import PortalTable
from tests import factories as f

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    rack = f.make_rack(height_u=42)
    nodes = [
        f.make_node(rack=rack, position=1, warranty_end=date(2020, 1, 31), partition="a&b <x>"),
        f.make_node(rack=rack, position=9, serial="", asset_tag="AT-2", state="in_service"),
        f.make_node(site=rack.site, owner_team="ml", warranty_end=date(2099, 1, 1), state="in_repair"),
    ]
    f.make_gpu(node=nodes[0])
    f.make_gpu(node=nodes[0], serial="")
    f.make_gpu()  # a spare
    return nodes


PAGES = [
    "/inventory/nodes/", "/inventory/nodes/?sort=-rack", "/inventory/nodes/?sort=warranty_end&per_page=2&page=2",
    "/inventory/nodes/?state=in_service", "/inventory/nodes/?q=AT-2", "/inventory/gpus/",
    "/inventory/gpus/?sort=-gpu", "/inventory/gpus/?sort=node",
]


def bodies(html):
    """The tables' bodies; the template's loop and body_html differ only in the line breaks around the rows."""
    return [" ".join(body.split()) for body in re.findall(r"<tbody.*?</tbody>", html, re.DOTALL)]


@pytest.mark.parametrize("url", PAGES)
def test_rows_built_in_python_match_the_template_loop(admin_client, fleet, monkeypatch, url):
    fast = admin_client.get(url).content.decode()
    monkeypatch.setattr(PortalTable, "body_html", lambda table: "")
    slow = admin_client.get(url).content.decode()
    assert bodies(fast) == bodies(slow)
    assert bodies(fast)


def test_the_node_page_related_gpu_table_matches(admin_client, fleet, monkeypatch):
    url = fleet[0].get_absolute_url()
    fast = admin_client.get(url).content.decode()
    monkeypatch.setattr(PortalTable, "body_html", lambda table: "")
    assert bodies(fast) == bodies(admin_client.get(url).content.decode())
    assert any("/gpu0" in body for body in bodies(fast))


def test_links_are_the_routes(admin_client, fleet):
    page = admin_client.get("/inventory/nodes/").content.decode()
    node = fleet[0]
    for obj, name in [(node, "inventory:node_detail"), (node.site, "inventory:site_detail"),
                      (node.rack, "inventory:rack_detail"), (node.node_model, "inventory:nodemodel_detail")]:
        assert f'<a href="{reverse(name, args=[obj.pk])}">' in page
    assert re.search(r'<span class="badge state-in_service">In service</span>', page)
    assert '<span class="expired" title="Warranty expired">2020-01-31</span>' in page
    assert "a&amp;b &lt;x&gt;" in page
