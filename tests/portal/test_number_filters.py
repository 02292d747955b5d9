"""``portal``'s ``decimals`` and ``whole`` filters write what ``floatformat`` and ``floatformat:0|intcomma`` write
(the dashboards use them for speed): compared on any number, halves and negative zero included."""

from decimal import Decimal

import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.template import engines
from django.template.defaultfilters import floatformat
from hypothesis import example, given
from hypothesis import strategies as st

from portal.templatetags.portal import decimals, whole

NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e7, max_value=1e7).map(lambda x: round(x, 2)),  # the dashboards' figures: 2 decimals
    st.integers(min_value=-10**22, max_value=10**22).map(lambda i: i / 200),  # halves, quarters, fifths...
    st.integers(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
)


@given(NUMBERS, st.integers(min_value=0, max_value=3))
@example(2772.5, 0)
@example(48.25, 1)
@example(-0.04, 1)
@example(-0.0, 0)
@example(Decimal("1E+30"), 2)
@example(0.125, 2)
def test_decimals_writes_what_floatformat_writes(number, places):
    assert decimals(number, places) == str(floatformat(number, places))


@given(NUMBERS)
@example(2772.5)
@example(-1234567.5)
@example(-0.4)
@example(999.5)
def test_whole_writes_what_floatformat_0_then_intcomma_write(number):
    assert whole(number) == intcomma(floatformat(number, 0))


@pytest.mark.parametrize("value", [None, "", "n/a", "12.34", float("nan"), float("inf"), 1e200, True])
def test_what_is_not_a_plain_figure_is_left_to_djangos_filters(value):
    assert decimals(value, 1) == str(floatformat(value, 1))
    assert whole(value) == intcomma(floatformat(value, 0))
    assert decimals(None, 1) == whole(None) == ""


def test_the_filters_in_a_template():
    text = "{% load portal %}{{ a|decimals:1 }} {{ b|whole }}|{{ c|decimals:1|default:'—' }}"
    template = engines["django"].from_string(text)
    assert template.render({"a": 48.25, "b": 1234567.5, "c": None}) == "48.3 1,234,568|—"
