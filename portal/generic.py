"""Generic views that every model's pages are built from, as NetBox does.

A model's list page is a few declarations (queryset, filterset, table); its detail page adds which
related objects to show. Edit and delete views take the model's form or queryset as arguments, and
``object_urls`` registers the whole set of pages for a model in one line.
"""

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.mixins import PermissionRequiredMixin
from django.core import signing
from django.db import connection, transaction
from django.db.models import BooleanField, FloatField, ProtectedError
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import path, resolve, reverse
from django.utils.functional import cached_property
from django.utils.http import urlencode
from django.utils.module_loading import import_string
from django.utils.text import capfirst
from django.views import View
from django.views.generic import DeleteView, DetailView, UpdateView
from django_filters.views import FilterView
from django_tables2 import RequestConfig, SingleTableMixin
from django_tables2.export import ExportMixin

from . import history, locking
from .exports import EXPORT_PARAM, SafeTableExport, export_links, refuse_format
from .filters import BoundedPaginator
from .forms import required_id
from .import_help import column_help, header_aliases
from .imports import decode, preview_first_rows, read_csv, run_import, template_csv
from .models import ImportJob
from .tables import ColumnChoice, saved_columns
from .tasks import enqueue, run_import_job

HISTORY_LIMIT = 25
RELATED_LIMIT = 25


def permission_name(model, action):
    return f"{model._meta.app_label}.{action}_{model._meta.model_name}"


def url_name(model, action):
    return f"{model._meta.app_label}:{model._meta.model_name}_{action}"


class ModelPermissionMixin(PermissionRequiredMixin):
    """Requires ``<app>.<action>_<model>``; logged-in users without it get 403, not a redirect."""

    permission_action = "view"
    raise_exception = True

    def get_permission_required(self):
        return [permission_name(self.get_queryset().model, self.permission_action)]


class ObjectListView(ModelPermissionMixin, ExportMixin, SingleTableMixin, FilterView):
    """Sortable, filterable, paginated table; htmx requests get only the table; ``?_export=csv`` (or
    another of ``portal.exports.FORMATS``) downloads every filtered row."""

    template_name = "generic/object_list.html"
    table_template_name = "generic/object_table.html"
    paginate_by = None  # the table paginates (django-tables2); the view must not paginate a second time
    per_page = 50
    exclude_columns = ("select", "actions")
    importable = False
    addable = True  # False for rows the portal records itself (no add page)
    export_class = SafeTableExport

    def render_to_response(self, context, **kwargs):
        export_format = self.request.GET.get(EXPORT_PARAM)
        if export_format is not None and not self.export_class.is_valid_format(export_format):
            return refuse_format(self.request, export_format)
        return super().render_to_response(context, **kwargs)

    def table_only(self):
        htmx = getattr(self.request, "htmx", None)
        return bool(htmx and not htmx.history_restore_request and htmx.target == "object-table")

    def get_template_names(self):
        return [self.table_template_name] if self.table_only() else [self.template_name]

    def get_export_filename(self, export_format):
        return f"{self.get_queryset().model._meta.verbose_name_plural.replace(' ', '-')}.{export_format}"

    def get_table_pagination(self, table):
        return {"per_page": self.per_page, "paginator_class": BoundedPaginator}  # ?per_page=-1 was a 500

    def choosing_columns(self):
        """Whether the page shows the user's choice of columns: a table with a choice, not an export (the
        files keep every column, the same for everyone, so scripts reading them do not depend on who exported)."""
        return issubclass(self.get_table_class(), ColumnChoice) and EXPORT_PARAM not in self.request.GET

    @cached_property
    def saved_columns(self):
        return saved_columns(self.request.user, self.get_table_class())

    def get_table_kwargs(self):
        kwargs = super().get_table_kwargs()
        if self.choosing_columns():
            kwargs.update(self.get_table_class().column_kwargs(self.saved_columns))
        return kwargs

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        model = self.get_queryset().model
        user = self.request.user
        query = self.request.GET.copy()
        query.pop("page", None)
        query["_export"] = "csv"
        context.update(
            opts=model._meta,
            add_url=reverse(url_name(model, "add"))
            if self.addable and user.has_perm(permission_name(model, "add"))
            else None,
            import_url=reverse(url_name(model, "import"))
            if self.importable and user.has_perm(permission_name(model, "add"))
            else None,
            export_url=f"?{query.urlencode()}",
            export_links=export_links(self.request),
            active_filters=active_filters(context.get("filter")),
            fragment=self.table_only(),  # a table template may redraw a filter out of band with it
        )
        if self.choosing_columns():
            context["column_menu"] = self.get_table_class().column_menu(self.saved_columns,
                                                                        self.request.get_full_path())
        return context


def active_filters(filterset):
    """Chips for the filters in use: (label, value shown, URL without that filter)."""
    if filterset is None or not filterset.is_bound or not filterset.form.is_valid():
        return []
    chips = []
    data = filterset.data
    for name, value in filterset.form.cleaned_data.items():
        if value in (None, "", [], False) and not (value is False and data.get(name)):
            continue
        field = filterset.form.fields[name]
        if isinstance(value, list | tuple):
            choices = dict(field.choices) if hasattr(field, "choices") else {}
            shown = ", ".join(str(choices.get(v, v)) for v in value)
        else:
            shown = str(value)
        remaining = data.copy()
        remaining.pop(name, None)
        remaining.pop("page", None)
        chips.append((filterset.form[name].label, shown, f"?{remaining.urlencode()}"))  # label as the form shows it
    return chips


@dataclass
class RelatedTable:
    """A table of objects related to the one shown, with a link to the full filtered list."""

    title: str
    table_class: Any
    rows: Any  # callable(obj) -> queryset
    list_url: str | None = None  # URL name of the full list
    filter_param: str | None = None  # its filter that selects the related rows

    def build(self, obj, request):
        queryset = self.rows(obj)
        count = queryset.count()
        table = self.table_class(queryset[:RELATED_LIMIT], orderable=False, exclude=("select",), empty_text="None yet.")
        RequestConfig(request, paginate=False).configure(table)
        more = None
        if self.list_url and count > RELATED_LIMIT:
            more = f"{reverse(self.list_url)}?{urlencode({self.filter_param: obj.pk})}"
        return {"title": self.title, "table": table, "count": count, "more_url": more}


class ObjectView(ModelPermissionMixin, DetailView):
    """An object's fields, related objects, lifecycle record (nodes and GPUs) and change history."""

    template_name = "generic/object_detail.html"
    related_tables: list[RelatedTable] = []
    hidden_fields = ("id", "created", "updated")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        obj, user = self.object, self.request.user
        model = type(obj)
        context.update(
            opts=model._meta,
            fields=object_fields(obj, self.hidden_fields),
            related=[related.build(obj, self.request) for related in self.related_tables],
            history=history_rows(obj),
            can_edit=user.has_perm(permission_name(model, "change")),
            can_delete=user.has_perm(permission_name(model, "delete")),
        )
        return context


def object_fields(obj, hidden):
    """(label, value, link) for every concrete field, choice labels and related objects resolved."""
    rows = []
    for field in obj._meta.concrete_fields:
        if field.name in hidden:
            continue
        if field.is_relation:
            target = getattr(obj, field.name)
            link = target.get_absolute_url() if target is not None and hasattr(target, "get_absolute_url") else None
            rows.append((field.verbose_name, target, link))
        elif field.choices:
            rows.append((field.verbose_name, getattr(obj, f"get_{field.name}_display")(), None))
        elif isinstance(field, BooleanField):
            rows.append((field.verbose_name, "yes" if getattr(obj, field.name) else "no", None))
        elif isinstance(field, FloatField) and getattr(obj, field.name) is not None:
            rows.append((field.verbose_name, float_text(getattr(obj, field.name)), None))
        else:
            rows.append((field.verbose_name, getattr(obj, field.name), None))
    return rows


def float_text(value):
    """A float as people write it: "1,000" for 1000.0, "0.25", at most 4 decimals (a budget is not "1000.0")."""
    if math.isfinite(value) and value == int(value):
        return f"{int(value):,}"
    return f"{value:,.4f}".rstrip("0").rstrip(".")


def history_rows(obj):
    """The latest changes with the fields each changed: one query on the history table, one per many-to-many field
    and one per model the changes refer to, however long the history."""
    if not hasattr(obj, "history"):
        return []
    records = list(obj.history.select_related("history_user")[: HISTORY_LIMIT + 1])
    links = m2m_history(records)
    found = []
    for index, newer in enumerate(records[:HISTORY_LIMIT]):
        older = records[index + 1] if index + 1 < len(records) else None
        changes = []
        if older is not None and newer.history_type == "~":
            delta = newer.diff_against(older, excluded_fields=["updated", *links])
            changes = [(c.field, c.old, c.new, c.field) for c in delta.changes]
            for field, by_record in links.items():
                old, new = by_record.get(older.pk, []), by_record.get(newer.pk, [])
                if old != new:
                    changes.append((field, old, new, field))
        found.append((newer, changes))
    return readable(type(obj), found)


def m2m_history(records):
    """{many-to-many field: {history record id: its rows}} for the records' tracked many-to-many fields, one query
    per field for all the records (``diff_against`` would read two per field and record)."""
    if not any(record.history_type == "~" for record in records[:HISTORY_LIMIT]):
        return {}  # nothing to compare
    links = {}
    for field in records[0]._history_m2m_fields:
        target = field.m2m_reverse_field_name()
        rows = getattr(records[0], field.name).model.objects.filter(history__in=records).order_by(target)
        by_record = defaultdict(list)
        for row in rows.values("history_id", target):
            by_record[row.pop("history_id")].append(row)
        links[field.name] = by_record
    return links


def line_history_rows(model, limit=HISTORY_LIMIT, **parent):
    """The change records of an object's lines (a plan's workloads, say: ``plan_id=7``), deleted lines
    included, as ``history_rows`` makes them, each change named after its line; newest first."""
    records = model.history.filter(**parent).select_related("history_user").order_by("-history_date")[:limit]
    records = sorted(records, key=lambda r: (r.history_date, r.history_id))
    found, previous = [], {}
    for record in records:
        older, previous[record.id] = previous.get(record.id), record
        line = f"{capfirst(model._meta.verbose_name)} “{record.history_object}”"
        if older is not None and record.history_type == "~":
            changes = [(c.field, c.old, c.new, f"{line}: {c.field}") for c in record.diff_against(older).changes]
        else:
            changes = [(None, "", "added" if record.history_type == "+" else "removed", line)]
        found.append((record, changes))
    return readable(model, found)[::-1]


def readable(model, found):
    """``[(record, [(field, old, new, label)])]`` as the history template shows them: ``{"record", "changes":
    [(label, old, new)]}`` with values a person reads (``shown``); the objects the changes refer to are read in one
    query per model."""
    names = referenced_names(model, [change for _, changes in found for change in changes])
    return [{"record": record, "changes": [
        (label, shown(model, field, old, names), shown(model, field, new, names)) for field, old, new, label in changes
    ]} for record, changes in found]


def referenced_names(model, changes):
    """{(field name, key): the object's name} for every object a foreign key in ``changes`` refers to (by its
    ``to_field``: a node's owner team by name)."""
    wanted = defaultdict(set)
    for field_name, old, new, _ in changes:
        field = model._meta.get_field(field_name) if field_name else None
        if field is not None and field.is_relation and not field.many_to_many:
            wanted[field_name] |= {value for value in (old, new) if value is not None}
    names = {}
    for field_name, ids in wanted.items():
        field = model._meta.get_field(field_name)
        related = field.related_model._default_manager.select_related()
        targets = related.in_bulk(ids, field_name=field.target_field.attname)
        for pk, target in targets.items():
            names[(field_name, pk)] = str(target)
    return names


def shown(model, field_name, value, names):
    """A value from the history as a person reads it: choice labels, related objects by name (``#id``
    once deleted; ``names`` from ``referenced_names``), a many-to-many field (its history rows) as the ids it
    links to."""
    if field_name is None:  # a line added or removed: said in words already
        return value
    field = model._meta.get_field(field_name)
    if field.many_to_many:
        ids = sorted(row[field.m2m_reverse_field_name()] for row in value or [])
        return ", ".join(f"#{pk}" for pk in ids) or "none"
    if field.choices:
        return dict(field.flatchoices).get(value, value)
    if field.is_relation and value is not None:
        return names.get((field_name, value), f"#{value}")
    return value


VERSION_FIELD = "_version"
REASON_FIELD = "change_reason"


class VersionedFormMixin:
    """Optimistic locking for a model form: the form carries a signed snapshot of the values it was
    opened with (a hidden field), and a save over values someone else has changed since is refused with
    a message naming who changed what. The form then carries the new snapshot, so saving again is a
    deliberate overwrite. An edit may say why it is made: stored with the change record."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields[VERSION_FIELD] = forms.CharField(widget=forms.HiddenInput, required=False)
            self.initial[VERSION_FIELD] = locking.form_token(self.instance, self.fields)
            self.fields[REASON_FIELD] = forms.CharField(
                label="Reason for the change", required=False, max_length=history.REASON_MAX_LENGTH,
                help_text="Optional; shown in the history next to the change.",
            )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get(REASON_FIELD):
            self.instance._change_reason = cleaned[REASON_FIELD]  # read by django-simple-history on save
        token = cleaned.get(VERSION_FIELD)
        if self.instance.pk is None or not token:
            return cleaned
        current = type(self.instance)._default_manager
        if connection.in_atomic_block:
            current = current.select_for_update()  # nobody saves between this check and our save
        current = current.get(pk=self.instance.pk)
        try:
            changes = locking.changes_since(token, current)
        except signing.BadSignature as error:
            raise forms.ValidationError("The form's version stamp is damaged; open the form again.") from error
        if changes:
            self.data = self.data.copy()
            self.data[self.add_prefix(VERSION_FIELD)] = locking.form_token(current, self.fields)
            raise forms.ValidationError(locking.stale_message(current, changes), code="stale")
        return cleaned


class LockedEditMixin:
    """For an ``UpdateView``: its form gets ``VersionedFormMixin``, and a post is one transaction (the
    row is locked before it is read, until the save)."""

    def get_form_class(self):
        form_class = super().get_form_class()
        return type(form_class.__name__, (VersionedFormMixin, form_class), {"__module__": form_class.__module__})

    def post(self, request, *args, **kwargs):
        with transaction.atomic():
            if kwargs.get("pk") is not None:
                # Lock first: the object the form saves is then read as stored now, so what the form does not
                # show (a lifecycle state, a ticket's status) is not written back from a read made before a
                # concurrent change committed.
                model = self.get_queryset().model
                list(model._default_manager.select_for_update(of=("self",)).filter(pk=kwargs["pk"]).values_list("pk"))
            return super().post(request, *args, **kwargs)


class ObjectEditView(ModelPermissionMixin, LockedEditMixin, UpdateView):
    """Create (no pk in the URL) or edit an object with the model's form."""

    template_name = "generic/object_edit.html"

    def get_permission_required(self):
        action = "change" if "pk" in self.kwargs else "add"
        return [permission_name(self.get_queryset().model, action)]

    def get_object(self, queryset=None):
        return super().get_object(queryset) if "pk" in self.kwargs else None

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["opts"] = self.get_queryset().model._meta
        return context

    def form_valid(self, form):
        created = form.instance.pk is None
        response = super().form_valid(form)
        messages.success(self.request, f"{'Created' if created else 'Saved'} {self.object}.")
        return response


class ObjectDeleteView(ModelPermissionMixin, DeleteView):
    template_name = "generic/object_delete.html"
    permission_action = "delete"

    def get_success_url(self):
        return reverse(url_name(type(self.object), "list"))

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["opts"] = self.object._meta
        return context

    def form_valid(self, form):
        name = str(self.object)
        try:
            response = super().form_valid(form)
        except ProtectedError as error:
            blockers = ", ".join(str(o) for o in list(error.protected_objects)[:10])
            messages.error(self.request, f"{name} cannot be deleted while these refer to it: {blockers}.")
            return HttpResponseRedirect(self.object.get_absolute_url())
        messages.success(self.request, f"Deleted {name}.")
        return response


def object_urls(model, list_view, detail_view, form_class=None, *, edit_view=None, add_view=None, read_only=False,
                extra=()):
    """URL patterns for a model's pages: list, add, detail, edit, delete, plus ``extra`` views given as
    ``(suffix, view, action)``, e.g. ``("import/", NodeImportView.as_view(), "import")`` which becomes
    ``nodes/import/`` named ``node_import``. A suffix with ``<int:pk>`` acts on one object.

    Add and edit use ``ObjectEditView`` with ``form_class`` unless the model has its own form page: ``edit_view``
    (a view, ``as_view()``'s result) then adds and edits, and ``add_view`` adds when that is another page.
    ``read_only`` leaves out edit and delete (objects made elsewhere; an ``add_view`` may lead there)."""
    name = model._meta.model_name
    prefix = str(model._meta.verbose_name_plural).replace(" ", "-").lower()
    queryset = model.objects.all()
    if edit_view is None and not read_only:
        edit_view = ObjectEditView.as_view(queryset=queryset, form_class=form_class)
    add_view = add_view or edit_view
    patterns = [path(f"{prefix}/", list_view.as_view(), name=f"{name}_list")]
    if add_view is not None:
        patterns.append(path(f"{prefix}/add/", add_view, name=f"{name}_add"))
    patterns.append(path(f"{prefix}/<int:pk>/", detail_view.as_view(), name=f"{name}_detail"))
    if not read_only:
        patterns += [
            path(f"{prefix}/<int:pk>/edit/", edit_view, name=f"{name}_edit"),
            path(f"{prefix}/<int:pk>/delete/", ObjectDeleteView.as_view(queryset=queryset), name=f"{name}_delete"),
        ]
    patterns += [path(f"{prefix}/{suffix}", view, name=f"{name}_{action}") for suffix, view, action in extra]
    return patterns


class ImportUploadForm(forms.Form):
    csv_file = forms.FileField(label="CSV file", required=False)
    csv_text = forms.CharField(label="or paste CSV", required=False, widget=forms.Textarea(attrs={"rows": 8}))

    MAX_BYTES = 5 * 1024 * 1024

    def clean(self):
        cleaned = super().clean()
        upload = cleaned.get("csv_file")
        if upload:
            if upload.size > self.MAX_BYTES:
                raise forms.ValidationError("The file is larger than 5 MB; split it.")
            try:
                cleaned["csv_text"] = decode(upload.read())
            except ValueError as error:
                raise forms.ValidationError(str(error)) from error
        if not (cleaned.get("csv_text") or "").strip():
            raise forms.ValidationError("Choose a CSV file or paste CSV text.")
        return cleaned


class ObjectImportView(ModelPermissionMixin, View):
    """CSV import in two steps: a preview listing every row (and every bad row with its reason), then
    a confirmation that imports everything (``portal.imports``). A file of more than
    ``IMPORT_BACKGROUND_ROWS`` rows is previewed and imported by a Celery task whose page shows its progress."""

    template_name = "generic/object_import.html"
    permission_action = "add"
    model = None
    form_class = None  # an ``ImportForm`` for one row
    match_on: dict = {}  # natural key: model lookup -> CSV column, e.g. {"site__name": "site", "name": "name"}

    def get_queryset(self):
        return self.model.objects.all()

    @classmethod
    def importer_path(cls):
        return f"{cls.__module__}.{cls.__qualname__}"

    @classmethod
    def list_table_class(cls):
        """The table the model's list exports: a file may name the columns by its headers."""
        return getattr(resolve(reverse(url_name(cls.model, "list"))).func.view_class, "table_class", None)

    def render(self, request, form, result=None, status=200):
        aliases, skipped = header_aliases(self.form_class, self.list_table_class())
        context = {
            "opts": self.model._meta,
            "form": form,
            "result": result,
            "columns": column_help(self.form_class),
            "export_headers": sorted({header for header, name in aliases.items() if header != name.lower()}),
            "list_url": reverse(url_name(self.model, "list")),
            "template_url": f"{request.path}?template=csv",
        }
        return render(request, self.template_name, context, status=status)

    def get(self, request):
        if request.GET.get("template") == "csv":  # the columns and an example row that imports cleanly
            response = HttpResponse(template_csv(self.form_class, self.match_on),
                                    content_type="text/csv; charset=utf-8")
            name = self.model._meta.verbose_name_plural.replace(" ", "-")
            response["Content-Disposition"] = f'attachment; filename="{name}-template.csv"'
            return response
        return self.render(request, ImportUploadForm())

    def post(self, request):
        commit = "confirm" in request.POST
        if request.POST.get("job"):  # the confirmation of a preview that ran in the background
            previewed = get_object_or_404(ImportJob, pk=required_id(request.POST["job"], "job"), user=request.user,
                                          importer=self.importer_path())
            return self.start_job(request, previewed.text, previewed.total, commit)
        form = ImportUploadForm(request.POST, request.FILES)
        if not form.is_valid():
            return self.render(request, form, status=400)
        text = form.cleaned_data["csv_text"]
        rows = len(read_csv(text)[1])
        if rows > settings.IMPORT_BACKGROUND_ROWS:
            return self.start_job(request, text, rows, commit)
        result = run_import(text, self.form_class, self.match_on, commit=commit, user=request.user,
                            table_class=self.list_table_class())
        if result.committed:
            messages.success(
                request, f"Imported {result.created + result.updated} {self.model._meta.verbose_name_plural}: "
                f"{result.created} created, {result.updated} updated."
            )
            return HttpResponseRedirect(reverse(url_name(self.model, "list")))
        # Keep the text in the form so the confirmation re-posts exactly what was previewed.
        form = ImportUploadForm(initial={"csv_text": text})
        return self.render(request, form, result, status=400 if result.errors else 200)

    def start_job(self, request, text, rows, commit):
        job = ImportJob.objects.create(importer=self.importer_path(), user=request.user, text=text, commit=commit,
                                       total=rows)
        if not enqueue(run_import_job, job.pk):
            job.state, job.errors = ImportJob.State.FAILED, [
                "The background worker could not be reached, so nothing was imported; try again in a minute."]
            job.save(update_fields=["state", "errors"])
        return HttpResponseRedirect(reverse("import_job", args=[job.pk]))


class ImportJobView(View):
    """A background import's page (``fragment``: the part that htmx polls every second until the job ends)."""

    fragment = False

    def get(self, request, pk):
        job = get_object_or_404(ImportJob, pk=pk)
        if job.user_id != request.user.pk and not request.user.is_superuser:
            raise Http404("No such import.")
        view = import_string(job.importer)
        model = view.model
        context = {
            "job": job,
            "opts": model._meta,
            "running": job.state not in (ImportJob.State.DONE, ImportJob.State.FAILED),
            "import_url": reverse(url_name(model, "import")),
            "list_url": reverse(url_name(model, "list")),
        }
        if job.state == ImportJob.State.DONE and not job.commit and not job.errors:  # a preview to confirm
            context["result"] = preview_first_rows(job.text, view)
        template = "portal/import_progress.html" if self.fragment else "portal/import_job.html"
        return render(request, template, context)
