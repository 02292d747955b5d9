"""List exports: every format offered downloads on every list page, any other is a 400 naming those that exist,
and text a spreadsheet would run as a formula is neutralised in CSV and TSV (numbers stay numbers)."""

import csv
import io
import json
from decimal import Decimal

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from portal.exports import FORMATS
from portal.generic import ObjectListView
from tests.factories import build_site, make_node, make_site

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+1", "@SUM(A1)", "-2+3", "\tx", "\rx"]


def list_pages(patterns=None, prefix=""):
    """The path of every list page built on ``ObjectListView`` (none of them takes an argument)."""
    found = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            found += list_pages(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern) and "<" not in str(entry.pattern):
            view = getattr(entry.callback, "view_class", None)
            if view is not None and issubclass(view, ObjectListView):
                found.append("/" + prefix + str(entry.pattern))
    return found


LIST_PAGES = list_pages()


def test_every_list_page_is_found():
    assert "/inventory/nodes/" in LIST_PAGES and "/support/tickets/" in LIST_PAGES and len(LIST_PAGES) >= 15


@pytest.mark.parametrize("path", LIST_PAGES)
def test_each_format_offered_downloads_and_others_are_refused(client, admin_user, path):
    client.force_login(admin_user)
    make_node(hostname="exported-node")
    page = client.get(path)
    assert page.status_code == 200
    # The buttons offer exactly the formats that work.
    offered = [label for label in FORMATS.values() if f">Export {label}</a>" in page.content.decode()]
    assert offered == list(FORMATS.values())
    for export_format in FORMATS:
        response = client.get(path, {"_export": export_format})
        assert response.status_code == 200, (path, export_format)
        assert response["Content-Disposition"].endswith(f'.{export_format}"')
        if export_format == "json":
            json.loads(response.content)
        else:
            assert response.content.decode()  # a header line at least
    for export_format in ("xlsx", "xls", "ods", "yaml", "latex", "html", ""):
        refused = client.get(path, {"_export": export_format})
        assert refused.status_code == 400, (path, export_format)
        assert "The formats there are: csv, tsv, json" in refused.content.decode()


def rows_of(response, delimiter):
    return list(csv.reader(io.StringIO(response.content.decode(), newline=""), delimiter=delimiter))


@pytest.mark.parametrize(("export_format", "delimiter"), [("csv", ","), ("tsv", "\t")])
def test_formula_like_names_are_neutralised(manager_client, export_format, delimiter):
    site = make_site(name="plain site")
    for index, name in enumerate(FORMULAS):
        make_node(site=site, hostname=f"{name}-{index}")
    response = manager_client.get(reverse("inventory:node_list"), {"_export": export_format})
    rows = rows_of(response, delimiter)
    hostname = rows[0].index("Hostname")
    exported = sorted(row[hostname] for row in rows[1:])
    assert exported == sorted(f"'{name}-{index}" for index, name in enumerate(FORMULAS))
    # Each neutralised cell is in double quotes in the file itself.
    text = response.content.decode()
    assert '"\'=HYPERLINK(""http://x"",""y"")-0"' in text
    assert "\"'+1+1-1\"" in text and "\"'@SUM(A1)-2\"" in text and "\"'-2+3-3\"" in text
    assert "plain site" in text and "\"plain site\"" not in text  # other text is written as before


def test_numbers_stay_numbers(manager_client):
    # Saved without validation: the form would refuse a negative capacity, but the export must not care.
    build_site(name="-2+3", power_capacity_kw=Decimal("-5.0"), cooling_capacity_kw=Decimal("12.5")).save()
    response = manager_client.get(reverse("inventory:site_list"), {"_export": "csv"})
    header, row = rows_of(response, ",")
    assert row[header.index("Name")] == "'-2+3"
    assert row[header.index("Power capacity (kW)")] == "-5.0"
    assert ",-5.0,12.5," in response.content.decode()


def test_json_export_keeps_the_names_as_they_are(manager_client):
    make_site(name="=1+1")
    response = manager_client.get(reverse("inventory:site_list"), {"_export": "json"})
    assert [row["Name"] for row in json.loads(response.content)] == ["=1+1"]
