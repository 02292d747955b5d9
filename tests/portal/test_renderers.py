"""The API's JSON renderer (orjson) writes what DRF's ``JSONRenderer`` writes: the same bytes for any answer whose
floats are written alike (0.0001 to 1e16), the same values for every other float; indented answers and what
orjson refuses go through DRF's renderer."""

import datetime
import decimal
import json
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from portal.api.renderers import PortalJSONRenderer
from tests.factories import make_site

UTC = datetime.UTC
PLAIN_FLOATS = st.floats(min_value=1e-4, max_value=1e15, allow_nan=False) | st.just(0.0)
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
           | st.text() | st.sampled_from(["caf\u00e9", "line\u2028break", "para\u2029", "\x00\x1f\"\\"])
           | PLAIN_FLOATS | PLAIN_FLOATS.map(lambda f: -f)
           | st.datetimes(timezones=st.sampled_from([UTC, datetime.timezone(datetime.timedelta(hours=5, minutes=30))]))
           | st.dates() | st.times() | st.decimals(min_value=-10**12, max_value=10**12, places=3) | st.uuids()
           | st.timedeltas())


def containers(children):
    """Lists, tuples and dicts, also as the serializers return them (``ReturnList``, ``ReturnDict``)."""
    return (st.lists(children, max_size=4) | st.tuples(children, children)
            | st.dictionaries(st.text(max_size=8), children, max_size=4).map(lambda d: ReturnDict(d, serializer=None))
            | st.lists(children, max_size=4).map(lambda items: ReturnList(items, serializer=None)))


DATA = st.recursive(SCALARS, containers, max_leaves=30)


def both(data, media_type="application/json", context=None):
    return (PortalJSONRenderer().render(data, media_type, context or {}),
            JSONRenderer().render(data, media_type, context or {}))


@settings(max_examples=300, deadline=None)
@given(DATA)
def test_the_same_bytes_as_drf(data):
    ours, drf = both(data)
    assert ours == drf


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=10))
def test_every_float_reads_back_as_the_same_number(values):
    ours, drf = both({"values": values})
    assert json.loads(ours) == json.loads(drf) == {"values": values}


def test_indented_answers_and_what_orjson_refuses_go_through_drf():
    when = datetime.datetime(2026, 12, 6, 10, 0, 0, 123456, tzinfo=UTC)
    data = {"n": 2**70, "when": when, "d": decimal.Decimal("1.5")}
    ours, drf = both(data)
    assert ours == drf and ours.startswith(b'{"n":1180591620717411303424,"when":"2026-12-06T10:00:00.123456Z"')
    ours, drf = both({1: "a", "u": uuid.UUID(int=1)}, "application/json; indent=2")
    assert ours == drf and b"\n  " in ours
    assert both(None) == (b"", b"")


def test_an_api_answer_is_drfs(viewer_api):
    make_site(name="Z\u00fcrich \u2028 north")
    response = viewer_api.get("/api/inventory/sites/")
    assert response.status_code == 200 and response.json()["results"][0]["name"] == "Z\u00fcrich \u2028 north"
    assert response.content == JSONRenderer().render(response.data, "application/json", {})
    assert b"\\u2028" in response.content
