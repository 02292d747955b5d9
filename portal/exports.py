"""List exports (``?_export=csv``): the formats offered, and text cells a spreadsheet would run as formulas.

Only formats that need nothing beyond tablib itself are offered; any other ``_export`` value is refused with
a 400 page that names the ones there are (tablib's xlsx, ods, xls and yaml writers need extra packages).

CSV and TSV files are opened by spreadsheets, which run a cell starting with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return as a formula (``=HYPERLINK(...)`` in a node name, say). As OWASP recommends, such a text
cell is written with a leading single quote and in double quotes; numbers (stored as numbers) are written
as they are, so ``-3`` stays a number.
"""

from django.shortcuts import render
from django_tables2.export import TableExport

EXPORT_PARAM = "_export"
FORMATS = {"csv": "CSV", "tsv": "TSV", "json": "JSON"}  # format -> button label
SPREADSHEET_FORMATS = {"csv": ",", "tsv": "\t"}  # text formats a spreadsheet opens -> their delimiter
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralised(value):
    """A text value a spreadsheet would not run: formula-like text gets a leading ``'``; others unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


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
