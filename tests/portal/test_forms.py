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


@pytest.mark.django_db
@pytest.mark.parametrize("value", [None, "", "chosen"])
def test_select_of_model_choices_draws_djangos_markup_in_one_query(value):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inventory.models import Site
    from tests import factories as f

    sites = [f.make_site(name=name) for name in ("b & c", "a <site>", "z")]
    chosen = value == "chosen"
    value = sites[1].pk if chosen else value
    field = forms.ModelChoiceField(queryset=Site.objects.order_by("name"), required=False, empty_label="All sites")
    django = forms.Select(choices=field.choices).render("site", value, {"id": "id_site"})
    # Django's own iteration reads a queryset through a server-side cursor on PostgreSQL; ours in one query.
    with CaptureQueriesContext(connection) as queries:
        ours = Select(choices=field.choices).render("site", value, {"id": "id_site"})
    assert len(queries) == 1 and not queries[0]["sql"].startswith("DECLARE"), queries.captured_queries
    assert parse_html(ours) == parse_html(django)
    assert (f'<option value="{sites[1].pk}" selected>' in ours) == chosen


def test_select_with_option_groups_is_drawn_by_django():
    choices = [("", "Any"), ("GPUs", [("h100", "H100"), ("a100", "A100")])]
    ours = Select(choices=choices).render("model", "a100")
    assert parse_html(ours) == parse_html(forms.Select(choices=choices).render("model", "a100"))
    assert "<optgroup" in ours


@pytest.mark.parametrize("value", [None, [], ["a"], ["a", "<b>", "3"], ["missing"]])
@pytest.mark.parametrize("attrs", [{"id": "id_state", "required": False}, {}, {"id": "x", "data-x": 'q"uote'}])
def test_checkboxes_draw_the_markup_of_djangos_checkboxes(value, attrs):
    from portal.forms import CheckboxSelectMultiple

    widget_attrs = {"class": "inline-choices"}
    ours = CheckboxSelectMultiple(attrs=widget_attrs, choices=CHOICES[1:]).render("state", value, attrs)
    django = forms.CheckboxSelectMultiple(attrs=widget_attrs, choices=CHOICES[1:]).render("state", value, attrs)
    assert ours == django  # byte for byte: the list pages' HTML is unchanged


def test_checkboxes_with_option_groups_are_drawn_by_django():
    from portal.forms import CheckboxSelectMultiple

    choices = [("GPUs", [("h100", "H100"), ("a100", "A100")])]
    ours = CheckboxSelectMultiple(choices=choices).render("model", ["a100"], {"id": "id_model"})
    assert ours == forms.CheckboxSelectMultiple(choices=choices).render("model", ["a100"], {"id": "id_model"})
    assert "<label>GPUs</label>" in ours
