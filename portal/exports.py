"""List exports (``?_export=csv``): the formats offered, and text cells a spreadsheet would run as formulas.

Only formats that need nothing beyond tablib itself are offered; any other ``_export`` value is refused with
a 400 page that names the ones there are (tablib's xlsx, ods, xls and yaml writers need extra packages).

CSV and TSV files are opened by spreadsheets, which run a cell starting with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return as a formula (``=HYPERLINK(...)`` in a node name, say). As OWASP recommends, such a text
cell is written with a leading single quote and in double quotes; numbers (stored as numbers) are written
as they are, so ``-3`` stays a number. ``plain_text`` takes the quote off again when such a file is imported, so a
file exported and imported back stores what it was exported from.

Cells are plain values, never markup: a column's ``value`` (or the table's ``value_<column>``) where it has one, a
date or time in ISO 8601 (times with their offset), and, as a last resort, the text of a render method's HTML. A
column may name its header in files apart from the page's (``export_header``: a duration's unit, "In state for
(days)"). The import (``portal.imports``) accepts these headers, so an exported file imports back unchanged.
"""

import datetime
import html

from django.shortcuts import render
from django.utils import timezone
from django.utils.encoding import force_str
from django.utils.html import strip_tags
from django_tables2 import DateColumn, DateTimeColumn
from django_tables2.export import TableExport
from django_tables2.utils import Accessor
from tablib import Dataset

EXPORT_PARAM = "_export"
FORMATS = {"csv": "CSV", "tsv": "TSV", "json": "JSON"}  # format -> button label
SPREADSHEET_FORMATS = {"csv": ",", "tsv": "\t"}  # text formats a spreadsheet opens -> their delimiter
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTED_STARTS = (*FORMULA_STARTS, "'")  # a text that begins with the quote gets one too, so the quote reads back


def neutralised(value):
    """A text value a spreadsheet would not run: formula-like text (and text that begins with ``'``) gets a leading
    ``'``; others unchanged."""
    if isinstance(value, str) and value.startswith(QUOTED_STARTS):
        return "'" + value
    return value


def plain_text(value):
    """The text ``neutralised`` was given: a leading ``'`` before a formula start or another ``'`` taken off."""
    if len(value) > 1 and value[0] == "'" and value[1:].startswith(QUOTED_STARTS):
        return value[1:]
    return value


def iso(value):
    """A date or time in ISO 8601 (an aware time in the portal's time zone, to the second); others unchanged."""
    if isinstance(value, datetime.datetime):
        if timezone.is_aware(value):
            value = timezone.localtime(value)
        return value.isoformat(timespec="seconds")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return value


def export_header(bound_column):
    return force_str(getattr(bound_column.column, "export_header", None) or bound_column.header, strings_only=True)


def export_value(table, row, bound_column):
    """A cell as files hold it: the column's plain value, ISO dates and times, no markup."""
    column = bound_column.column
    if isinstance(column, DateColumn | DateTimeColumn) and not hasattr(table, f"value_{bound_column.name}"):
        value = Accessor(bound_column.accessor).resolve(row.record, quiet=True)  # not the page's format
    else:
        value = row.get_cell_value(bound_column.name)
    if hasattr(value, "__html__"):  # a render method's HTML: its text (a name's "<" is data and stays)
        value = html.unescape(strip_tags(value.__html__()))
    return force_str(iso(value), strings_only=True)


def delimited(rows, delimiter):
    """CSV/TSV text of ``rows`` (CRLF line ends, as tablib writes them); neutralised cells always quoted."""

    def cell(value):
        if value is None:
            return ""
        safe = neutralised(value)
        text = str(safe)
        if safe is not value or any(c in text for c in (delimiter, '"', "\r", "\n")):
            return '"' + text.replace('"', '""') + '"'
        return text

    return "".join(delimiter.join(cell(value) for value in row) + "\r\n" for row in rows)


class SafeTableExport(TableExport):
    """django-tables2's export limited to ``FORMATS``, with CSV and TSV written by ``delimited``."""

    @classmethod
    def is_valid_format(cls, export_format):
        return export_format in FORMATS

    def table_to_dataset(self, table, exclude_columns, dataset_kwargs=None):
        """django-tables2's ``as_values`` with ``export_header`` and ``export_value``."""
        exclude_columns = exclude_columns or ()
        columns = [column for column in table.columns.iterall()
                   if not (column.column.exclude_from_export or column.name in exclude_columns)]
        model = getattr(table._meta, "model", None)
        dataset = Dataset(**{"title": model._meta.verbose_name_plural.title() if model else "Export Data",
                             **(dataset_kwargs or {})})
        dataset.headers = [export_header(column) for column in columns]
        for row in table.rows:
            dataset.append([export_value(table, row, column) for column in columns])
        return dataset

    def export(self):
        if self.format in SPREADSHEET_FORMATS:
            rows = [self.dataset.headers or [], *self.dataset]
            return delimited(rows, SPREADSHEET_FORMATS[self.format])
        return super().export()


def export_links(request):
    """(label, URL) of an export of the list as filtered now, one per format offered."""
    query = request.GET.copy()
    query.pop("page", None)
    links = []
    for export_format, label in FORMATS.items():
        query[EXPORT_PARAM] = export_format
        links.append((label, f"?{query.urlencode()}"))
    return links


def refuse_format(request, export_format):
    """The 400 page for an ``_export`` value that is not offered, naming the formats there are."""
    context = {"export_format": export_format, "formats": list(FORMATS), "links": export_links(request)}
    return render(request, "portal/export_format.html", context, status=400)
