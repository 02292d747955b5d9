"""CSV import: every row is checked first and every bad row reported as "row N, field: error"; nothing is
written unless every row is valid. A preview runs the same checks and writes nothing, so what it shows is
what the import will do, rows that conflict with each other (two GPUs in one slot) included. Existing
objects are matched by a natural key and updated.

The checks run in bulk: one query finds the objects the rows update, one query per referenced model
resolves the names the rows use (``NamedChoiceField``), and uniqueness (fields and constraints, within
the file and against the database) is one query per key instead of one per row. New rows are then written
with ``bulk_create`` and changed ones with ``bulk_update``, each with their change records in bulk.

What the page tells beyond the errors (``portal.import_help``): a column may be named by the list's export header
(an exported file imports back; the columns an export has that are worked out are skipped), an unknown choice or
name is reported with the values the column takes, the first rows are shown as they will be stored, the form's
``warnings`` (a rack or site over its power) are shown before the confirmation, and ``template_csv`` is a file
whose example row imports cleanly.

``run_import`` writes either in one transaction (small files, in the request) or in batches of
``batch_rows`` that each commit (large files, in a Celery task: ``portal.tasks.run_import_job``), so an
import never holds the database (SQLite's one write lock) for long. A batched import that fails midway
deletes the rows it created and restores the ones it changed before it reports the failure.
"""

import copy
import time
from dataclasses import dataclass, field
from datetime import timedelta

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import DatabaseError, DataError, IntegrityError, connection, models, transaction

from . import history
from .csvread import NUL_MESSAGE, NUL_STAND_IN, decode, has_nul, read_csv  # noqa: F401 (read from here too)
from .exports import delimited
from .import_help import (
    EXAMPLE_PREFIX,
    PREVIEW_ROWS,
    AllowedCache,
    example_values,
    header_aliases,
    preview_cells,
    rename_columns,
)

QUERY_CHUNK = 2000  # names per ``__in`` query (SQLite limits the parameters of one statement)
ERRORS_KEPT = 1000  # errors a background import stores for its page


class NamedChoiceField(forms.ModelChoiceField):
    """A reference given by name; ``known`` (name -> object, filled by ``ImportForm.prefetch`` for all rows
    at once) spares the query per row."""

    known = None

    def to_python(self, value):
        if self.known is None or value in self.empty_values:
            return super().to_python(value)
        try:
            return self.known[str(value)]
        except KeyError:
            raise ValidationError(
                self.error_messages["invalid_choice"], code="invalid_choice", params={"value": value}
            ) from None


class ImportForm(forms.ModelForm):
    """Base of a row form: knows who imports (for forms that record it: lifecycle changes) and what the
    file refers to (``known``, from ``prefetch``). Uniqueness is checked for all rows together by
    ``run_import``, not per row."""

    resolved_fields = ()  # references the form's own clean() finds in ``known`` (not looked up again)

    def __init__(self, *args, user=None, known=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.known = known or {}
        for name, form_field in self.fields.items():
            if isinstance(form_field, NamedChoiceField) and name in self.known:
                form_field.known = self.known[name]

    @classmethod
    def prefetch(cls, rows):
        """{field: {name: object}} for every named reference the rows use, one query per field."""
        known = {}
        for name, form_field in cls.base_fields.items():
            if isinstance(form_field, NamedChoiceField):
                key = form_field.to_field_name or "pk"
                names = {data[name] for _, data in rows if data.get(name)}
                known[name] = {str(getattr(obj, key)): obj for obj in in_chunks(form_field.queryset, key, names)}
        return known

    @classmethod
    def check_rows(cls, valid):
        """Checks across rows no single row can make: ``[(form, field, message)]``. None by default."""
        return []

    @classmethod
    def warnings(cls, valid):
        """What the valid rows would do that is allowed but likely wrong (a site over its power): messages shown
        before the confirmation. None by default."""
        return []

    def validate_unique(self):
        pass  # run_import checks uniqueness for every row at once (check_unique)

    def _post_clean(self):
        """Django's ``ModelForm._post_clean`` less its queries per row: references the form resolved from
        ``known`` are not looked up again, and unique constraints are left to ``check_unique``."""
        exclude = self._get_validation_exclusions()
        exclude |= {name for name, f in self.fields.items() if isinstance(f, NamedChoiceField) and f.known is not None}
        exclude |= set(self.resolved_fields) if self.known else set()
        try:
            self.instance = forms.models.construct_instance(self, self.instance, self._meta.fields, self._meta.exclude)
        except ValidationError as error:
            self._update_errors(error)
        try:
            self.instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
        except ValidationError as error:
            self._update_errors(error)
        model = type(self.instance)
        for constraint in model._meta.constraints:
            if not isinstance(constraint, models.UniqueConstraint):
                try:
                    constraint.validate(model, self.instance, exclude=exclude)
                except ValidationError as error:
                    self._update_errors(error)

    def needs_own_save(self):
        """True when the row must be saved through ``save()`` (e.g. it records a lifecycle transition)."""
        return False


class SharedFields(dict):
    """A form's fields that every row's form uses as they are: a form copies its class's fields (a deep
    copy, querysets and choices included), which would cost more than checking the row."""

    def __deepcopy__(self, memo):
        return self


def sharing_fields(form_class):
    """A subclass of the row form whose instances share one copy of the fields (nothing a row form does
    changes its fields)."""
    shared = type(form_class.__name__, (form_class,), {"__module__": form_class.__module__})
    shared.base_fields = SharedFields(copy.deepcopy(form_class.base_fields))
    return shared


def in_chunks(queryset, key, values):
    values = sorted(values)
    for start in range(0, len(values), QUERY_CHUNK):
        yield from queryset.filter(**{f"{key}__in": values[start:start + QUERY_CHUNK]})


@dataclass
class RowResult:
    line: int
    action: str = ""  # "create" or "update"
    name: str = ""
    errors: list = field(default_factory=list)
    cells: list = None  # the first rows': [(value as stored, value before or None)] (``preview_cells``)


@dataclass
class ImportResult:
    rows: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # "row N, field: message"
    committed: bool = False
    created: int = 0
    updated: int = 0
    columns: list = field(default_factory=list)  # the preview's columns (the form's fields)
    skipped: list = field(default_factory=list)  # exported columns the import does not take, as the file names them
    warnings: list = field(default_factory=list)


# --- Checking -------------------------------------------------------------------------------------


def match_existing(model, match_on, rows):
    """{row number: object} for rows whose natural key (``match_on``: lookup -> column) names an existing
    object, found with one query."""
    keyed = {}
    for number, data in rows:
        key = tuple(data.get(column, "") for column in match_on.values())
        if all(key):
            keyed.setdefault(key, []).append(number)
    if not keyed:
        return {}
    lookups = list(match_on)
    queryset = model._default_manager.all()
    related = [lookup.rsplit("__", 1)[0] for lookup in lookups if "__" in lookup]
    if related:
        queryset = queryset.select_related(*related)
    for index, lookup in enumerate(lookups):
        queryset = queryset.filter(**{f"{lookup}__in": {key[index] for key in keyed}})
    found = {}
    for obj in queryset:
        key = tuple(str(follow(obj, lookup)) for lookup in lookups)
        for number in keyed.get(key, ()):
            found[number] = obj
    return found


def follow(obj, lookup):
    for part in lookup.split("__"):
        obj = getattr(obj, part)
    return obj


def unique_keys(model):
    """(field names, skip blanks, message) for each uniqueness rule of the model: unique fields and unique
    constraints (a conditional one is taken as ``unique_when_set``: blank values are not compared)."""
    keys = [((f.name,), False, None) for f in model._meta.concrete_fields if f.unique and not f.primary_key]
    for constraint in model._meta.constraints:
        if isinstance(constraint, models.UniqueConstraint) and constraint.fields and not constraint.expressions:
            message = constraint.violation_error_message
            if message == constraint.default_violation_error_message:
                message = None
            keys.append((tuple(constraint.fields), constraint.condition is not None, message))
    return keys


def check_unique(model, valid):
    """``[(form, field, message)]`` for rows that repeat a unique key of another row or of an object in the
    database (one query per key). Objects the file updates are compared with their new values."""
    problems = []
    updating = {form.instance.pk for form in valid if form.instance.pk}
    for names, skip_blank, message in unique_keys(model):
        attnames = [model._meta.get_field(name).attname for name in names]
        seen = {}
        for form in valid:
            key = tuple(getattr(form.instance, attname) for attname in attnames)
            if any(value is None or (skip_blank and value == "") for value in key):
                continue
            if key in seen:
                problems.append((form, names[-1], f"{' and '.join(names)} the same as in row {seen[key].row_number}."))
            else:
                seen[key] = form
        if not seen:
            continue
        taken = model._default_manager.exclude(pk__in=updating)
        values = {key[0] for key in seen}
        existing = set()
        for start in range(0, len(values), QUERY_CHUNK):
            chunk = sorted(values, key=str)[start:start + QUERY_CHUNK]
            existing.update(tuple(row) for row in taken.filter(**{f"{attnames[0]}__in": chunk})
                            .values_list(*attnames))
        for key in existing & seen.keys():
            form = seen[key]
            text = message or form.instance.unique_error_message(model, names).messages[0]
            problems.append((form, names[-1], text))
    return problems


def row_errors(number, form, allowed=None):
    """"row N, field: message" for each error of the row's form; an unknown choice or name with the values the
    column takes (``allowed``: an ``AllowedCache``)."""
    found = []
    for name, errors in form.errors.as_data().items():
        for error in errors:
            for message in error.messages:
                if error.code == "invalid_choice" and allowed is not None and name in form.fields:
                    message = allowed.message(name, form.fields[name], error, message)
                found.append(f"row {number}{'' if name == NON_FIELD_ERRORS else f', {name}'}: {message}")
    return found


# --- Writing --------------------------------------------------------------------------------------


class Undo:
    """What a batched import wrote, so a failure midway can take it back: the objects and change records
    it created, and the field values of the objects it changed as they were before."""

    def __init__(self, model):
        self.model, self.created, self.records, self.before = model, [], [], []

    def run(self, fields):
        history_model = self.model.history.model
        with transaction.atomic():
            self.model._default_manager.filter(pk__in=self.created).delete()
            if self.before:
                self.model._default_manager.bulk_update(self.before, fields)
            # The objects were new: every change record of theirs (the deletion's too) is this import's.
            history_model.objects.filter(id__in=self.created).delete()
            history_model.objects.filter(pk__in=self.records).delete()


# SQLite has one write lock for the whole database, and a writer waiting on it retries about every 100 ms (its busy
# handler): batches committed back to back would keep it waiting until the last one. A pause a little longer than
# that after each batch lets it in. PostgreSQL locks rows, not the database: no pause there.
SQLITE_PAUSE_S = 0.12


def let_others_write():
    if connection.vendor == "sqlite":
        time.sleep(SQLITE_PAUSE_S)


def write(model, valid, user, batch_rows, progress, undo=None):
    """Create and update the objects of the valid row forms, ``batch_rows`` at a time, each batch with its
    change records. Rows that need their own ``save()`` (lifecycle transitions) are saved last, one by one."""
    own = [form for form in valid if form.instance.pk and form.needs_own_save()]
    creates = [form.instance for form in valid if not form.instance.pk]
    updates = [form for form in valid if form.instance.pk and not form.needs_own_save()]
    fields = update_fields(model, valid)
    attrs = {"request_id": history.change_request_id()}
    history_user = user if user is not None and user.is_authenticated else None
    done = 0
    for start in range(0, len(creates), batch_rows):
        batch = creates[start:start + batch_rows]
        with transaction.atomic():
            model._default_manager.bulk_create(batch)
            records = model.history.bulk_history_create(batch, default_user=history_user,
                                                        custom_historical_attrs=attrs)
        if undo is not None:
            undo.created += [obj.pk for obj in batch]
            undo.records += [record.pk for record in records]
            let_others_write()
        done += len(batch)
        progress("writing", done)
    for start in range(0, len(updates), batch_rows):
        batch = updates[start:start + batch_rows]
        objects = [form.instance for form in batch]
        for obj in objects:
            for auto in (f for f in model._meta.concrete_fields if getattr(f, "auto_now", False)):
                auto.pre_save(obj, add=False)
        with transaction.atomic():
            model._default_manager.bulk_update(objects, fields)
            records = model.history.bulk_history_create(objects, update=True, default_user=history_user,
                                                        custom_historical_attrs=attrs)
        if undo is not None:
            undo.before += [form.before for form in batch]
            undo.records += [record.pk for record in records]
            let_others_write()
        done += len(batch)
        progress("writing", done)
    if own:
        with transaction.atomic():
            for form in own:
                form.save()
        done += len(own)
        progress("writing", done)


def update_fields(model, valid):
    """The model fields the row forms set, plus the ones saved automatically (``updated``)."""
    names = set()
    for form in valid[:1]:
        names = {f.name for f in model._meta.concrete_fields if f.name in form.cleaned_data and not f.primary_key}
    names |= {f.name for f in model._meta.concrete_fields if getattr(f, "auto_now", False)}
    return sorted(names)


# --- The import -----------------------------------------------------------------------------------


def run_import(text, form_class, match_on, *, commit, user=None, batch_rows=None, progress=None, table_class=None):
    """Check every row (and with ``commit`` write them all); write nothing unless every row is valid.

    ``batch_rows``: write in batches of this many rows, each committed (the caller is not in a transaction);
    without it everything is written in one transaction. ``progress(phase, rows done)`` is told how far the
    checks ("checking") and the writes ("writing") are. ``table_class``: the list's table, whose export headers
    the file may use."""
    model = form_class._meta.model
    progress = progress or (lambda phase, done: None)
    result = ImportResult(columns=list(form_class.base_fields))
    columns, rows, read_errors = read_csv(text)
    columns, rows, result.skipped, header_errors = rename_columns(columns, rows, *header_aliases(form_class,
                                                                                                 table_class))
    result.errors += header_errors
    known_columns = set(form_class.base_fields)
    required = {name for name, f in form_class.base_fields.items() if f.required}
    if not columns:
        result.errors += read_errors or ["The file is empty: the first line must name the columns."]
        return result
    unknown = [c for c in columns if c not in known_columns]
    if unknown:
        result.errors.append(f"Unknown columns: {', '.join(unknown)}. Allowed: {', '.join(form_class.base_fields)}.")
    missing = sorted(required - set(columns))
    if missing:
        result.errors.append(f"Missing required columns: {', '.join(missing)}.")
    if not rows and not read_errors:
        result.errors.append("The file has no data rows.")
    if result.errors:
        return result
    result.errors += read_errors

    existing = match_existing(model, match_on, rows)
    known = form_class.prefetch(rows)
    form_class = sharing_fields(form_class)
    valid, by_number, allowed = [], {}, AllowedCache()
    for count, (number, data) in enumerate(rows, start=1):
        row = RowResult(line=number)
        instance = existing.get(number)
        before = copy.copy(instance) if instance is not None else None
        row.action = "update" if instance else "create"
        form = form_class(data=data, instance=instance, user=user, known=known)
        form.row_number, form.before = number, before
        if form.is_valid():
            valid.append(form)
            if count <= PREVIEW_ROWS:
                row.cells = preview_cells(form, result.columns)
        else:
            row.errors += row_errors(number, form, allowed)
            if count <= PREVIEW_ROWS:  # as the file has them
                row.cells = [(data.get(name, ""), None) for name in result.columns]
        row.name = " / ".join(data.get(column, "") for column in match_on.values()) or data.get(columns[0], "")
        result.rows.append(row)
        by_number[number] = row
        if count % 500 == 0:
            progress("checking", count)
    progress("checking", len(rows))
    for form, name, message in [*check_unique(model, valid), *form_class.check_rows(valid)]:
        by_number[form.row_number].errors.append(f"row {form.row_number}, {name}: {message}")
    for row in result.rows:
        result.errors += row.errors
    result.errors.sort(key=error_order)
    result.warnings = form_class.warnings(valid) if valid else []
    result.created = sum(1 for row in result.rows if row.action == "create" and not row.errors)
    result.updated = sum(1 for row in result.rows if row.action == "update" and not row.errors)
    if not commit or result.errors:
        return result

    if batch_rows is None:
        try:
            with transaction.atomic():
                write(model, valid, user, len(valid) or 1, progress)
        except (IntegrityError, DataError, ValidationError) as error:  # a lost connection is the 503's business
            result.errors.append(f"Writing failed, nothing was imported: {first_line(error)}")
            return result
    else:
        undo = Undo(model)
        try:
            write(model, valid, user, batch_rows, progress, undo)
        except (DatabaseError, ValidationError) as error:
            undo.run(update_fields(model, valid))
            result.errors.append(f"Writing failed after {len(undo.created) + len(undo.before)} rows; those were "
                                 f"taken back, nothing was imported: {first_line(error)}")
            return result
    result.committed = True
    return result


def template_csv(form_class, match_on):
    """A template file: the columns the import takes and an example row (``example_values``) checked as a preview
    is, its optional values that do not pass left blank; the header alone where no row would pass."""
    row = example_values(form_class)
    while True:
        text = delimited([list(row), list(row.values())], ",")
        errors = run_import(text, form_class, match_on, commit=False).errors
        if not errors:
            return text
        bad = {error.split(", ", 1)[1].split(":", 1)[0] for error in errors if error.startswith("row 2, ")}
        optional = [name for name, value in row.items() if value and not form_class.base_fields[name].required
                    and not value.startswith(EXAMPLE_PREFIX)]  # a name made up for the example is its key
        blank = [name for name in optional if name in bad] or optional  # else what the error's field depends on
        if not blank:
            return delimited([list(row)], ",")
        row.update(dict.fromkeys(blank, ""))


def preview_first_rows(text, view):
    """The first ``PREVIEW_ROWS`` rows of a large file as they will be stored (checked as ``run_import`` checks
    them, writing nothing): what a background preview's page shows besides its counts."""
    columns, rows, _ = read_csv(text)
    first = [[data.get(column, "") for column in columns] for _, data in rows[:PREVIEW_ROWS]]
    return run_import(delimited([columns, *first], ","), view.form_class, view.match_on, commit=False,
                      table_class=view.list_table_class())


def error_order(message):
    """Errors by row number; file-level ones (no row) first."""
    if message.startswith("row "):
        digits = message[4:].split(",", 1)[0].split(":", 1)[0]
        if digits.isdigit():
            return (int(digits), message)
    return (0, message)


def first_line(error):
    return (str(error).splitlines() or [type(error).__name__])[0]


# --- Large files: a Celery task (portal.tasks.run_import_job) ---------------------------------------


class TakenOver(Exception):
    """Another run took the job over (this one had stopped moving for longer than ``IMPORT_STALL_SECONDS`` and was
    thought dead): this run stops at once and leaves the job and the rows it wrote to the other."""


def claim_job(job_id, now=None):
    """Start a run of the ``ImportJob``: the job, its ``attempts`` counting this run, or None when there is nothing
    to run: it is gone or finished, or another run moved it within ``IMPORT_STALL_SECONDS`` (a broker delivering
    the task twice, a visibility timeout shorter than the import). A job checking or writing that has not moved for
    longer is taken over: its worker died. After ``IMPORT_MAX_ATTEMPTS`` runs it fails instead, saying what stays
    written. The job's row is locked while deciding, so of two workers claiming it at once one runs it."""
    from django.conf import settings
    from django.db.models import Q
    from django.utils import timezone

    from .models import ImportJob

    now = now or timezone.now()
    state = ImportJob.State
    stalled = Q(state__in=[state.CHECKING, state.WRITING],
                progressed__lt=now - timedelta(seconds=settings.IMPORT_STALL_SECONDS))
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().filter(Q(state=state.QUEUED) | stalled, pk=job_id).first()
        if job is None:
            return None
        if job.attempts >= settings.IMPORT_MAX_ATTEMPTS:
            job.state, job.finished, job.errors = state.FAILED, now, [given_up(job)]
            job.save(update_fields=["state", "finished", "errors"])
            return None
        job.attempts += 1
        job.state, job.done, job.progressed = state.CHECKING, 0, now
        job.save(update_fields=["attempts", "state", "done", "progressed"])
    return job


def given_up(job):
    """Why a job whose runs kept stopping failed, and what of it stays written."""
    stopped = f"The import stopped {job.attempts} times without finishing (its worker died or hung) and was given up"
    if not job.written:
        return f"{stopped}; nothing was imported."
    return (f"{stopped}: at least {job.written} of {job.total} rows had been written and stay. Import the same file "
            f"again to write the rest: the rows already written are found by their {job_key(job)} and updated, not "
            f"repeated.")


def job_key(job):
    from django.utils.module_loading import import_string

    return " and ".join(import_string(job.importer).match_on.values())


def run_job(job, batch_rows):
    """Run a claimed ``ImportJob`` (``claim_job``): its progress is saved as it goes (one short write per 500 rows
    checked and per batch written, which also tells ``claim_job`` that this run is alive), and its outcome (counts,
    errors) when it ends. Raises ``TakenOver`` if another run took the job over meanwhile."""
    from django.utils import timezone
    from django.utils.module_loading import import_string

    view = import_string(job.importer)
    mine = type(job).objects.filter(pk=job.pk, attempts=job.attempts)  # the job, while this run still has it
    # Rows an earlier run wrote before its worker died (at least: it may have died between a batch's commit and
    # its progress): they stay whatever this run does.
    earlier = job.written

    def progress(phase, done):
        moved = {"state": phase, "done": done, "progressed": timezone.now()}
        if phase == "writing":
            moved["written"] = max(earlier, done)
        if not mine.update(**moved):
            raise TakenOver(f"import #{job.pk}: run {job.attempts} was taken over")

    result = run_import(job.text, view.form_class, view.match_on, commit=job.commit, user=job.user,
                        batch_rows=batch_rows, progress=progress, table_class=view.list_table_class())
    errors = result.errors[:ERRORS_KEPT]
    if earlier and not result.committed and job.commit:
        errors.append(f"An earlier run of this import, stopped when its worker died, had written at least {earlier} "
                      f"rows; they stay.")
    if not mine.update(state=job.State.DONE, done=job.total, errors=errors, warnings=result.warnings,
                       created_count=result.created, updated_count=result.updated, finished=timezone.now(),
                       progressed=timezone.now(),
                       written=result.created + result.updated if result.committed else earlier):
        raise TakenOver(f"import #{job.pk}: run {job.attempts} was taken over")
    job.refresh_from_db()
    return result
