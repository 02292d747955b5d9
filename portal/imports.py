"""CSV import: every row is validated and saved inside one transaction; if any row is bad, nothing is
kept and every bad row is reported as "row N, field: error". A preview runs the same way and always
rolls back, so what the preview shows is exactly what the import will do, rows that depend on each
other (e.g. two GPUs in one slot) included. Existing objects are matched by a natural key and updated.
"""

import csv
import io
from dataclasses import dataclass, field

from django import forms
from django.db import IntegrityError, transaction


class ImportForm(forms.ModelForm):
    """Base of a row form: knows who imports, for forms that record it (lifecycle changes)."""

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user


@dataclass
class RowResult:
    line: int
    action: str = ""  # "create" or "update"
    name: str = ""
    errors: list = field(default_factory=list)


@dataclass
class ImportResult:
    rows: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # "row N, field: message"
    committed: bool = False

    @property
    def created(self):
        return sum(1 for row in self.rows if row.action == "create" and not row.errors)

    @property
    def updated(self):
        return sum(1 for row in self.rows if row.action == "update" and not row.errors)


def read_csv(text):
    """Rows of a CSV text as dicts with trimmed keys and values (a UTF-8 BOM is tolerated)."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    columns = [c.strip() for c in (reader.fieldnames or [])]
    rows = [
        {(key or "").strip(): (value or "").strip() for key, value in row.items() if key}
        for row in reader
        if any((value or "").strip() for value in row.values() if isinstance(value, str))
    ]
    return columns, rows


def run_import(text, form_class, find_existing, *, commit, user=None):
    """Validate (and with ``commit`` save) every row; keep nothing unless every row is valid."""
    result = ImportResult()
    columns, rows = read_csv(text)
    known = set(form_class.base_fields)
    required = {name for name, f in form_class.base_fields.items() if f.required}
    if not columns:
        result.errors.append("The file is empty: the first line must name the columns.")
        return result
    unknown = [c for c in columns if c not in known]
    if unknown:
        result.errors.append(f"Unknown columns: {', '.join(unknown)}. Allowed: {', '.join(form_class.base_fields)}.")
    missing = sorted(required - set(columns))
    if missing:
        result.errors.append(f"Missing required columns: {', '.join(missing)}.")
    if not rows:
        result.errors.append("The file has no data rows.")
    if result.errors:
        return result

    with transaction.atomic():
        for line, data in enumerate(rows, start=2):  # line 1 is the header
            row = RowResult(line=line)
            instance = find_existing(data)
            row.action = "update" if instance else "create"
            form = form_class(data=data, instance=instance, user=user)
            if form.is_valid():
                try:
                    with transaction.atomic():
                        row.name = str(form.save())
                except IntegrityError as error:
                    row.errors.append(f"row {line}: {error}".splitlines()[0])
            else:
                for name, messages in form.errors.items():
                    where = "" if name == "__all__" else f", {name}"
                    row.errors += [f"row {line}{where}: {message}" for message in messages]
            row.name = row.name or data.get(next(iter(columns)), "")
            result.rows.append(row)
            result.errors += row.errors
        result.committed = commit and not result.errors
        if not result.committed:
            transaction.set_rollback(True)
    return result

