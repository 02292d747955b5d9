"""Inventory pages. Each model's list and detail page are declarations over the generic views in
``portal.generic``; ``urls.py`` registers the whole set in one line per model."""

from django import forms
from django.contrib import messages
from django.db import transaction
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View

from portal.forms import object_id
from portal.generic import (
    ModelPermissionMixin,
    ObjectImportView,
    ObjectListView,
    ObjectView,
    RelatedTable,
    url_name,
)

from . import filters, lifecycle, querysets, tables
from . import forms as inventory_forms
from .goodput.views import GPUModelGoodputMixin, NodeGoodputMixin
from .models import (
    GPU,
    Fabric,
    GPUModel,
    LifecycleState,
    Node,
    NodeModel,
    Rack,
    Site,
)
from .telemetry.views import GPUOwnHealthMixin, NodeGPUChartsMixin, NodeHealthMixin

# --- Lifecycle: one object from its page, or many from a list -------------------------------------


class TransitionForm(forms.Form):
    to = forms.ChoiceField(label="New state", choices=LifecycleState.choices)
    reason = forms.CharField(max_length=500, required=False)
    # The state the page showed: a move made from a state that has changed since is refused, not applied.
    current = forms.ChoiceField(choices=LifecycleState.choices, required=False)


class LifecycleListView(ObjectListView):
    """A list with a bulk lifecycle change for the selected rows."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        model = self.get_queryset().model
        if self.request.user.has_perm("inventory.change_state", model):
            context["bulk_url"] = reverse(url_name(model, "bulk_transition"))
            context["states"] = LifecycleState.choices
        return context


class LifecycleObjectView(ObjectView):
    """Adds the lifecycle record and the states the object may move to."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        obj = self.object
        context["lifecycle"] = obj.transitions.select_related("user")[:50]
        # The list's figure, from the same annotation (the queryset is ``querysets.nodes()`` / ``gpus()``).
        context["in_state_for"] = lifecycle.time_in_state(getattr(obj, "state_since", None))
        context["allowed_states"] = [(s, LifecycleState(s).label) for s in lifecycle.allowed_targets(obj.state)]
        context["transition_url"] = reverse(url_name(type(obj), "transition"), args=[obj.pk])
        return context


class TransitionView(ModelPermissionMixin, View):
    """POST: move one node or GPU to another state, or say why the rules refuse it."""

    permission_action = "change"
    model = None

    def get_queryset(self):
        return self.model.objects.all()

    def post(self, request, pk):
        obj = get_object_or_404(self.model, pk=pk)
        form = TransitionForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Choose a state: " + "; ".join(form.errors.get("to", [])))
        else:
            try:
                lifecycle.transition(obj, form.cleaned_data["to"], request.user, form.cleaned_data["reason"],
                                     expected=form.cleaned_data["current"])
            except forms.ValidationError as error:
                messages.error(request, " ".join(error.message_dict["to"]))
            else:
                messages.success(request, f"{obj} is now {obj.get_state_display().lower()}.")
        return HttpResponseRedirect(obj.get_absolute_url())


class BulkTransitionView(ModelPermissionMixin, View):
    """POST from a list page: move the selected rows; report each one the rules refuse."""

    permission_action = "change"
    model = None

    def get_queryset(self):
        return self.model.objects.all()

    def post(self, request):
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = reverse(url_name(self.model, "list"))
        form = TransitionForm(request.POST)
        selected = [pk for pk in map(object_id, request.POST.getlist("select")) if pk]
        if not selected or not form.is_valid():
            messages.error(request, "Select at least one row and a new state.")
            return HttpResponseRedirect(back)
        target = form.cleaned_data["to"]
        with transaction.atomic():
            moved, refused = lifecycle.bulk_transition(
                self.model.objects.filter(pk__in=selected), target, request.user, form.cleaned_data["reason"]
            )
        if moved:
            plural = self.model._meta.verbose_name_plural if len(moved) > 1 else self.model._meta.verbose_name
            messages.success(request, f"{len(moved)} {plural} now {LifecycleState(target).label.lower()}.")
        for obj, reason in refused:
            messages.error(request, f"{obj}: {reason}")
        return HttpResponseRedirect(back)


# --- Catalog ---------------------------------------------------------------------------------------


class GPUModelListView(ObjectListView):
    queryset = querysets.gpu_models()
    filterset_class = filters.GPUModelFilterSet
    table_class = tables.GPUModelTable


class GPUModelView(GPUModelGoodputMixin, ObjectView):
    queryset = GPUModel.objects.all()
    template_name = "inventory/gpumodel_detail.html"


class NodeModelListView(ObjectListView):
    queryset = querysets.node_models()
    filterset_class = filters.NodeModelFilterSet
    table_class = tables.NodeModelTable


class NodeModelView(ObjectView):
    queryset = NodeModel.objects.all()
    related_tables = [
        RelatedTable("Nodes", tables.NodeTable, lambda o: querysets.node_rows().filter(node_model=o),
                     "inventory:node_list", "node_model"),
    ]


# --- Places ----------------------------------------------------------------------------------------


class SiteListView(ObjectListView):
    queryset = querysets.sites()
    filterset_class = filters.SiteFilterSet
    table_class = tables.SiteTable
    importable = True


class SiteView(ObjectView):
    queryset = Site.objects.all()
    template_name = "inventory/site_detail.html"  # with the panels other modules add (its GPUs: capacity)
    related_tables = [
        RelatedTable("Racks", tables.RackTable, lambda o: querysets.racks().filter(site=o),
                     "inventory:rack_list", "site"),
        RelatedTable("Nodes", tables.NodeTable, lambda o: querysets.node_rows().filter(site=o),
                     "inventory:node_list", "site"),
        RelatedTable("Storage", tables.StorageSystemTable, lambda o: querysets.storage_systems().filter(site=o)),
        RelatedTable("Switches", tables.SwitchTable, lambda o: querysets.switches().filter(**{o._meta.model_name: o}),
                     "inventory:switch_list", "site"),
    ]


class SiteImportView(ObjectImportView):
    model = Site
    form_class = inventory_forms.SiteImportForm
    match_on = {"name": "name"}


class RackListView(ObjectListView):
    queryset = querysets.racks()
    filterset_class = filters.RackFilterSet
    table_class = tables.RackTable
    importable = True


class RackView(ObjectView):
    queryset = Rack.objects.select_related("site")
    related_tables = [
        RelatedTable("Nodes", tables.NodeTable, lambda o: querysets.node_rows().filter(rack=o).order_by("-position"),
                     "inventory:node_list", "rack"),
    ]


class RackImportView(ObjectImportView):
    model = Rack
    form_class = inventory_forms.RackImportForm
    match_on = {"site__name": "site", "name": "name"}


# --- Compute ---------------------------------------------------------------------------------------


class NodeListView(LifecycleListView):
    queryset = querysets.node_rows()
    filterset_class = filters.NodeListFilterSet
    table_class = tables.NodeTable
    table_template_name = "inventory/node_table.html"  # redraws the partition select with the table
    importable = True


class NodeView(NodeGoodputMixin, NodeHealthMixin, NodeGPUChartsMixin, LifecycleObjectView):
    queryset = querysets.nodes()
    template_name = "inventory/telemetry/node_detail.html"
    related_tables = [
        RelatedTable("GPUs", tables.GPUTable, lambda o: querysets.gpu_rows().filter(node=o), "inventory:gpu_list",
                     "node"),
        RelatedTable("Fabric attachments", tables.FabricAttachmentTable,
                     lambda o: querysets.fabric_attachments().filter(node=o)),
    ]


class NodeImportView(ObjectImportView):
    model = Node
    form_class = inventory_forms.NodeImportForm
    match_on = {"hostname": "hostname"}


class GPUListView(LifecycleListView):
    queryset = querysets.gpu_rows()
    filterset_class = filters.GPUFilterSet
    table_class = tables.GPUTable
    importable = True


class GPUView(GPUOwnHealthMixin, LifecycleObjectView):
    """The generic page plus "Report a problem", open tickets, its MIG instances and its XID events."""

    queryset = querysets.gpus()
    template_name = "inventory/gpu_detail.html"
    xid_events_shown = 20

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.request.user.has_perm("inventory.read_telemetry"):
            context["mig_instances"] = list(self.object.mig_instances.all())
            context["xid_events"] = list(self.object.xid_events.all()[:self.xid_events_shown])
        return context


class GPUImportView(ObjectImportView):
    model = GPU
    form_class = inventory_forms.GPUImportForm
    match_on = {"serial": "serial"}


# --- Network and storage ---------------------------------------------------------------------------


class FabricListView(ObjectListView):
    queryset = querysets.fabrics()
    filterset_class = filters.FabricFilterSet
    table_class = tables.FabricTable


class FabricView(ObjectView):
    queryset = Fabric.objects.select_related("site")
    related_tables = [
        RelatedTable("Switches", tables.SwitchTable, lambda o: querysets.switches().filter(**{o._meta.model_name: o}),
                     "inventory:switch_list", "fabric"),
        RelatedTable("Attached nodes", tables.FabricAttachmentTable,
                     lambda o: querysets.fabric_attachments().filter(**{o._meta.model_name: o}),
                     "inventory:fabricattachment_list", "fabric"),
    ]


class SwitchListView(ObjectListView):
    queryset = querysets.switches()
    filterset_class = filters.SwitchFilterSet
    table_class = tables.SwitchTable


class SwitchView(ObjectView):
    queryset = querysets.switches()
    related_tables = [
        RelatedTable("Attached nodes", tables.FabricAttachmentTable,
                     lambda o: querysets.fabric_attachments().filter(**{o._meta.model_name: o}),
                     "inventory:fabricattachment_list", "switch"),
    ]


class FabricAttachmentListView(ObjectListView):
    queryset = querysets.fabric_attachments()
    filterset_class = filters.FabricAttachmentFilterSet
    table_class = tables.FabricAttachmentTable


class FabricAttachmentView(ObjectView):
    queryset = querysets.fabric_attachments()


class StorageSystemListView(ObjectListView):
    queryset = querysets.storage_systems()
    filterset_class = filters.StorageSystemFilterSet
    table_class = tables.StorageSystemTable


class StorageSystemView(ObjectView):
    queryset = querysets.storage_systems()
