"""``portal.forms.Select`` draws the markup of Django's select."""

import pytest
from django import forms
from django.test.html import parse_html

from portal.forms import Select

CHOICES = [("", "All"), ("a", "A & B"), ("<b>", "bold <b>"), (3, "three")]


@pytest.mark.parametrize("value", [None, "", "a", "<b>", 3, "missing"])
def test_select_draws_the_markup_of_djangos_select(value):
    field = forms.ChoiceField(choices=CHOICES, required=False)
    attrs = {"id": "id_x", "class": "wide", "required": True, "disabled": False}
    ours = Select(choices=field.choices).render("x", value, attrs)
    django = forms.Select(choices=field.choices).render("x", value, attrs)
    assert parse_html(ours) == parse_html(django)
