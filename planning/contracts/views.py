"""Contract pages: declarations over the generic views in ``portal.generic``, plus document upload and
download, the uncovered-assets list and dismissing a renewal alert."""

from types import SimpleNamespace

from django.contrib import messages
from django.db import transaction
from django.http import FileResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.views import View

from portal.generic import ModelPermissionMixin, ObjectEditView, ObjectListView, ObjectView

from . import costs, coverage, filters, tables
from .forms import ContractDocumentForm, ContractForm, SLATermFormSet
from .models import Contract, ContractDocument, RenewalAlert

TIMELINE_LIMIT = 100


def timeline_data(contracts, today):
    """The timeline chart's JSON: one bar per contract from start to end (open-ended ones to today + a
    year), coloured by kind, and today's marker."""
    horizon = today.replace(year=today.year + 1)
    return {
        "today": today.isoformat(),
        "kinds": dict(Contract.Kind.choices),
        "bars": [
            {"label": str(c), "kind": c.kind, "start": c.start.isoformat(), "end": (c.end or horizon).isoformat(),
             "open_ended": c.end is None, "url": c.get_absolute_url()}
            for c in contracts
        ],
    }


class ContractListView(ObjectListView):
    queryset = Contract.objects.select_related("owner")
    filterset_class = filters.ContractFilterSet
    table_class = tables.ContractTable
    template_name = "planning/contract_list.html"
    table_template_name = "planning/contract_table.html"  # the table and the timeline of the same contracts

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        contracts = context["filter"].qs.order_by("start", "vendor")[:TIMELINE_LIMIT]
        context["timeline"] = timeline_data(contracts, timezone.localdate())
        context["table_template_name"] = self.table_template_name
        return context


COVERAGE = [  # (title, relation, select_related) shown on the detail page
    ("Sites", "sites", ()), ("Racks", "racks", ("site",)), ("Nodes", "nodes", ("site",)),
    ("GPUs", "gpus", ("node",)), ("Switches", "switches", ("site",)), ("Storage", "storage_systems", ("site",)),
]
COVERAGE_LIMIT = 50


class ContractView(ObjectView):
    queryset = Contract.objects.select_related("owner", "rented_gpu_model")
    template_name = "planning/contract_detail.html"

    @property
    def hidden_fields(self):
        """The rented GPUs only mean something on a rental contract; elsewhere they were a confusing "0" and "—"."""
        hidden = ObjectView.hidden_fields
        if self.object.kind == Contract.Kind.RENTAL:
            return hidden
        return (*hidden, "rented_gpus", "rented_gpu_model")

    def get_context_data(self, upload_form=None, **kwargs):
        context = super().get_context_data(**kwargs)
        contract, user = self.object, self.request.user
        covered = []
        for title, relation, related in COVERAGE:
            objects = getattr(contract, relation).select_related(*related)
            count = objects.count()
            if count:
                covered.append({"title": title, "objects": objects[:COVERAGE_LIMIT], "count": count,
                                "more": max(0, count - COVERAGE_LIMIT)})
        context.update(
            sla_terms=contract.sla_terms.all(),
            covered=covered,
            documents=contract.documents.select_related("uploaded_by"),
            alerts=contract.renewal_alerts.all(),
            gpu_hour_cost=costs.contract_gpu_hour_cost(contract),
            upload_form=upload_form or (ContractDocumentForm() if user.has_perm("planning.add_contractdocument")
                                        else None),
        )
        return context


class ContractEditView(ObjectEditView):
    """Add or edit a contract with its coverage and SLA terms (one formset row per priority)."""

    queryset = Contract.objects.all()
    form_class = ContractForm
    template_name = "planning/contract_edit.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.setdefault("sla_formset", SLATermFormSet(instance=self.object, prefix="sla"))
        return context

    def post(self, request, *args, **kwargs):
        self.object = self.get_object()
        form = self.get_form()
        formset = SLATermFormSet(request.POST, instance=form.instance, prefix="sla")
        if form.is_valid() and formset.is_valid():
            with transaction.atomic():
                response = self.form_valid(form)
                formset.instance = self.object
                formset.save()
            return response
        return self.render_to_response(self.get_context_data(form=form, sla_formset=formset), status=400)


class ContractDocumentUploadView(ContractView):
    """POST a document to a contract; a refused file re-renders the contract page with the form's errors."""

    http_method_names = ["post"]

    def get_permission_required(self):
        return ["planning.add_contractdocument"]

    def post(self, request, pk):
        self.object = self.get_object()
        form = ContractDocumentForm(request.POST, request.FILES,
                                    instance=ContractDocument(contract=self.object, uploaded_by=request.user))
        if not form.is_valid():
            return self.render_to_response(self.get_context_data(upload_form=form), status=400)
        document = form.save()
        messages.success(request, f"Uploaded {document.name}.")
        return HttpResponseRedirect(f"{self.object.get_absolute_url()}#documents")


class ContractDocumentDownloadView(ModelPermissionMixin, View):
    """Documents are served through this view (never a public media URL): it needs the view permission."""

    def get_queryset(self):
        return ContractDocument.objects.all()

    def get(self, request, pk):
        document = get_object_or_404(ContractDocument, pk=pk)
        return FileResponse(document.file.open("rb"), as_attachment=True, filename=document.name,
                            content_type=document.content_type)


class ContractDocumentDeleteView(ModelPermissionMixin, View):
    permission_action = "delete"

    def get_queryset(self):
        return ContractDocument.objects.all()

    def post(self, request, pk):
        document = get_object_or_404(ContractDocument.objects.select_related("contract"), pk=pk)
        document.file.delete(save=False)
        document.delete()
        messages.success(request, f"Deleted {document.name}.")
        return HttpResponseRedirect(f"{document.contract.get_absolute_url()}#documents")


class UncoveredNodeListView(ObjectListView):
    """In-service nodes without an active support contract or past their warranty, with the reason."""

    filterset_class = filters.UncoveredNodeFilterSet
    table_class = tables.UncoveredNodeTable
    opts = SimpleNamespace(verbose_name="uncovered node", verbose_name_plural="uncovered nodes")

    def get_queryset(self):
        return coverage.uncovered_nodes()

    def get_permission_required(self):
        # Which nodes lack support says what the contracts cover: for readers of contracts, not every node reader.
        return ["inventory.view_node", "planning.view_contract"]

    def get_export_filename(self, export_format):
        return f"uncovered-nodes.{export_format}"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(opts=self.opts, add_url=None, import_url=None)
        return context


class RenewalAlertDismissView(ModelPermissionMixin, View):
    permission_action = "change"

    def get_queryset(self):
        return RenewalAlert.objects.all()

    def post(self, request, pk):
        alert = get_object_or_404(RenewalAlert.objects.select_related("contract"), pk=pk)
        alert.dismissed = True
        alert.save(update_fields=["dismissed"])
        messages.success(request, f"Dismissed the renewal alert for {alert.contract}.")
        return HttpResponseRedirect(reverse("home"))

