"""Large API lists read with ``.values()`` (``portal.api.rows``): the same JSON as the full serializer, row for
row, with every filter, ordering, trimming and pagination; serializers it cannot read fall back to themselves."""

from datetime import date

import pytest
from rest_framework import fields
from rest_framework.test import APIRequestFactory

from inventory import querysets
from inventory.api import serializers as api
from inventory.api.views import GPUViewSet, NodeViewSet
from portal.api.rows import values_rows
from tests import factories as f

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    """Nodes in racks and not, with and without serial and warranty; GPUs installed, spare, without serial."""
    rack = f.make_rack(height_u=42)
    node_model = f.make_node_model()
    nodes = [
        f.make_node(rack=rack, position=1, node_model=node_model, warranty_end=date(2020, 1, 31), partition="a"),
        f.make_node(rack=rack, position=9, node_model=node_model, serial="", asset_tag="AT-2", state="in_service"),
        f.make_node(site=rack.site, node_model=node_model, owner_team="ml"),
        f.make_node(),
    ]
    f.make_gpu(node=nodes[0])
    f.make_gpu(node=nodes[0], serial="")
    f.make_gpu(node=nodes[2], state="in_service")
    f.make_gpu()  # a spare
    f.make_gpu(serial="", uuid="")  # a spare known by its id alone
    return nodes


QUERIES = [
    "", "?page_size=2", "?page_size=2&page=2", "?state=in_service", "?q=gpu", "?brief=1",
    "?fields=id,url,display,site,state", "?ordering=-rack,-id", "?ordering=-warranty_end,id", "?ordering=-node,id",
    "?cursor=", "?cursor=&page_size=2&ordering=-site,-id",
]


@pytest.mark.parametrize("viewset, endpoint", [(NodeViewSet, "nodes"), (GPUViewSet, "gpus")])
@pytest.mark.parametrize("query", QUERIES)
def test_values_list_answers_the_serializers_json(manager_api, fleet, monkeypatch, viewset, endpoint, query):
    def both(url):
        answers = []
        for values_list in (True, False):
            monkeypatch.setattr(viewset, "values_list", values_list)
            response = manager_api.get(url)
            assert response.status_code == 200, response.content
            answers.append(response.json())
        return answers

    fast, full = both(f"/api/inventory/{endpoint}/{query}")
    assert fast == full
    assert full["results"]
    if full.get("next"):  # the next page (page number or cursor) too
        fast, full = both(full["next"])
        assert fast == full


def test_values_list_runs_no_serializer_per_row(manager_api, fleet, monkeypatch):
    def refuse(self, instance):
        raise AssertionError("a serializer field read a row")

    monkeypatch.setattr(fields.Field, "get_attribute", refuse)
    for endpoint in ("nodes", "gpus"):
        assert manager_api.get(f"/api/inventory/{endpoint}/").status_code == 200


def test_a_field_without_a_column_keeps_the_serializer(manager):
    request = APIRequestFactory().get("/api/inventory/storage-systems/")
    request.user, request.query_params = manager, request.GET
    context = {"request": request}
    # used_percent is a model property; a rack's display reads its site.
    assert values_rows(api.StorageSystemSerializer(context=context), querysets.storage_systems()) is None
    assert values_rows(api.RackSerializer(context=context), querysets.racks()) is None
    assert values_rows(api.NodeSerializer(context=context), querysets.nodes()) is not None


def test_postgresql_writes_a_timestamp_as_drf_does():
    """``UTCIsoText`` (the lists' timestamps written by PostgreSQL) against DRF's own ``DateTimeField`` in UTC, for any
    instant a ``DateTimeField`` holds, with and without microseconds, given in any time zone."""
    from datetime import datetime, timedelta, timezone

    from django.db import connection
    from django.db.models import Value
    from django.db.models.fields import DateTimeField
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from inventory.models import Site
    from portal.api.rows import UTCIsoText

    if connection.vendor != "postgresql":
        pytest.skip("UTCIsoText is PostgreSQL's (the lists format timestamps in Python elsewhere)")
    f.make_site()
    drf = fields.DateTimeField()

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.datetimes(datetime(2, 1, 1), datetime(9998, 12, 31), timezones=st.builds(
        timezone, st.integers(-14 * 60, 14 * 60).map(lambda minutes: timedelta(minutes=minutes)))), st.booleans())
    def check(moment, whole_second):
        moment = moment.replace(microsecond=0) if whole_second else moment
        written = Site.objects.annotate(t=UTCIsoText(Value(moment, output_field=DateTimeField()))).values_list(
            "t", flat=True)[0]
        assert written == drf.to_representation(moment)

    check()
