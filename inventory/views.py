"""Inventory pages. Each model's list and detail page are declarations over the generic views in
``portal.generic``; ``urls.py`` registers the whole set in one line per model."""

from django import forms
from django.contrib import messages
from django.db import transaction
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View

from portal.generic import (
    ModelPermissionMixin,
    ObjectImportView,
    ObjectListView,
    ObjectView,
    RelatedTable,
    url_name,
)

from . import filters, lifecycle, tables
from . import forms as inventory_forms
from .models import (
    GPU,
    Fabric,
    FabricAttachment,
    GPUModel,
    LifecycleState,
    Node,
    NodeModel,
    Rack,
    Site,
    StorageSystem,
    Switch,
)

NODE_COLUMNS = ("site", "rack", "node_model")

# --- Lifecycle: one object from its page, or many from a list -------------------------------------


class TransitionForm(forms.Form):
    to = forms.ChoiceField(label="New state", choices=LifecycleState.choices)
    reason = forms.CharField(max_length=500, required=False)


class LifecycleListView(ObjectListView):
    """A list with a bulk lifecycle change for the selected rows."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        model = self.get_queryset().model
        if self.request.user.has_perm(f"inventory.change_{model._meta.model_name}"):
            context["bulk_url"] = reverse(url_name(model, "bulk_transition"))
            context["states"] = LifecycleState.choices
        return context


class LifecycleObjectView(ObjectView):
    """Adds the lifecycle record and the states the object may move to."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        obj = self.object
        context["lifecycle"] = obj.transitions.select_related("user")[:50]
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
                lifecycle.transition(obj, form.cleaned_data["to"], request.user, form.cleaned_data["reason"])
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
        selected = [pk for pk in request.POST.getlist("select") if pk.isdigit()]
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
    queryset = GPUModel.objects.annotate(gpu_count=Count("gpus"))
    filterset_class = filters.GPUModelFilterSet
    table_class = tables.GPUModelTable


class GPUModelView(ObjectView):
    queryset = GPUModel.objects.all()


class NodeModelListView(ObjectListView):
    queryset = NodeModel.objects.annotate(node_count=Count("nodes"))
    filterset_class = filters.NodeModelFilterSet
    table_class = tables.NodeModelTable


class NodeModelView(ObjectView):
    queryset = NodeModel.objects.all()
    related_tables = [
        RelatedTable("Nodes", tables.NodeTable, lambda o: node_rows().filter(node_model=o), "inventory:node_list",
                     "node_model"),
    ]


# --- Places ----------------------------------------------------------------------------------------


def node_rows():
    return Node.objects.select_related(*NODE_COLUMNS).annotate(gpu_count=Count("gpus"))


def gpu_rows():
    return GPU.objects.select_related("node", "gpu_model")


class SiteListView(ObjectListView):
    queryset = Site.objects.annotate(rack_count=Count("racks", distinct=True), node_count=Count("nodes", distinct=True))
    filterset_class = filters.SiteFilterSet
    table_class = tables.SiteTable
    importable = True


class SiteView(ObjectView):
    queryset = Site.objects.all()
    related_tables = [
        RelatedTable("Racks", tables.RackTable, lambda o: o.racks.annotate(node_count=Count("nodes")),
                     "inventory:rack_list", "site"),
        RelatedTable("Nodes", tables.NodeTable, lambda o: node_rows().filter(site=o), "inventory:node_list", "site"),
        RelatedTable("Storage", tables.StorageSystemTable, lambda o: o.storage_systems.select_related("site")),
        RelatedTable("Switches", tables.SwitchTable, lambda o: o.switches.select_related("fabric", "site", "rack"),
                     "inventory:switch_list", "site"),
    ]


class SiteImportView(ObjectImportView):
    model = Site
    form_class = inventory_forms.SiteImportForm
    match_on = {"name": "name"}


class RackListView(ObjectListView):
    queryset = Rack.objects.select_related("site").annotate(node_count=Count("nodes"))
    filterset_class = filters.RackFilterSet
    table_class = tables.RackTable
    importable = True


class RackView(ObjectView):
    queryset = Rack.objects.select_related("site")
    related_tables = [
        RelatedTable("Nodes", tables.NodeTable, lambda o: node_rows().filter(rack=o).order_by("-position"),
                     "inventory:node_list", "rack"),
    ]


class RackImportView(ObjectImportView):
    model = Rack
    form_class = inventory_forms.RackImportForm
    match_on = {"site__name": "site", "name": "name"}


# --- Compute ---------------------------------------------------------------------------------------


class NodeListView(LifecycleListView):
    queryset = node_rows()
    filterset_class = filters.NodeFilterSet
    table_class = tables.NodeTable
    importable = True


class NodeView(LifecycleObjectView):
    queryset = Node.objects.select_related(*NODE_COLUMNS)
    related_tables = [
        RelatedTable("GPUs", tables.GPUTable, lambda o: gpu_rows().filter(node=o), "inventory:gpu_list", "node"),
        RelatedTable("Fabric attachments", tables.FabricAttachmentTable,
                     lambda o: o.fabric_attachments.select_related("node", "fabric", "switch")),
    ]


class NodeImportView(ObjectImportView):
    model = Node
    form_class = inventory_forms.NodeImportForm
    match_on = {"hostname": "hostname"}


class GPUListView(LifecycleListView):
    queryset = gpu_rows()
    filterset_class = filters.GPUFilterSet
    table_class = tables.GPUTable
    importable = True


class GPUView(LifecycleObjectView):
    queryset = GPU.objects.select_related("node", "gpu_model")


class GPUImportView(ObjectImportView):
    model = GPU
    form_class = inventory_forms.GPUImportForm
    match_on = {"serial": "serial"}


# --- Network and storage ---------------------------------------------------------------------------


class FabricListView(ObjectListView):
    queryset = Fabric.objects.select_related("site").annotate(
        switch_count=Count("switches", distinct=True), attachment_count=Count("attachments", distinct=True)
    )
    filterset_class = filters.FabricFilterSet
    table_class = tables.FabricTable


class FabricView(ObjectView):
    queryset = Fabric.objects.select_related("site")
    related_tables = [
        RelatedTable("Switches", tables.SwitchTable, lambda o: o.switches.select_related("fabric", "site", "rack"),
                     "inventory:switch_list", "fabric"),
        RelatedTable("Attached nodes", tables.FabricAttachmentTable,
                     lambda o: o.attachments.select_related("node", "fabric", "switch"),
                     "inventory:fabricattachment_list", "fabric"),
    ]


class SwitchListView(ObjectListView):
    queryset = Switch.objects.select_related("fabric", "site", "rack")
    filterset_class = filters.SwitchFilterSet
    table_class = tables.SwitchTable


class SwitchView(ObjectView):
    queryset = Switch.objects.select_related("fabric", "site", "rack")
    related_tables = [
        RelatedTable("Attached nodes", tables.FabricAttachmentTable,
                     lambda o: o.attachments.select_related("node", "fabric", "switch"),
                     "inventory:fabricattachment_list", "switch"),
    ]


class FabricAttachmentListView(ObjectListView):
    queryset = FabricAttachment.objects.select_related("node", "fabric", "switch")
    filterset_class = filters.FabricAttachmentFilterSet
    table_class = tables.FabricAttachmentTable


class FabricAttachmentView(ObjectView):
    queryset = FabricAttachment.objects.select_related("node", "fabric", "switch")


class StorageSystemListView(ObjectListView):
    queryset = StorageSystem.objects.select_related("site")
    filterset_class = filters.StorageSystemFilterSet
    table_class = tables.StorageSystemTable


class StorageSystemView(ObjectView):
    queryset = StorageSystem.objects.select_related("site")
