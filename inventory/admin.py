"""Django admin for the inventory: every model with its change history (django-simple-history).

The lifecycle state of a node or GPU is read-only once it exists; it changes through the "Move to ..."
actions, which go through ``inventory.lifecycle`` like the rest of the portal. Lifecycle records
(``StateTransition``) are read-only.
"""

from django.contrib import admin, messages
from django.contrib.contenttypes.admin import GenericTabularInline
from django.contrib.contenttypes.prefetch import GenericPrefetch
from simple_history.admin import SimpleHistoryAdmin

from portal.admin import ReadOnlyMixin

from .lifecycle import bulk_transition
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
    StateTransition,
    StorageSystem,
    Switch,
)
from .statements import admin as statement_admin  # noqa: F401
from .teams import admin as teams_admin  # noqa: F401
from .telemetry import admin as telemetry_admin  # noqa: F401  (Django's autodiscovery imports <app>.admin only)

TIMESTAMPS = ("created", "updated")


class TransitionInline(ReadOnlyMixin, GenericTabularInline):
    model = StateTransition
    fields = ("created", "from_state", "to_state", "username", "reason")
    readonly_fields = fields
    extra = 0
    ordering = ("-created", "-pk")
    verbose_name_plural = "lifecycle"


def transition_action(target):
    label = LifecycleState(target).label

    @admin.action(description=f"Move selected to {label.lower()}", permissions=["change"])
    def action(modeladmin, request, queryset):
        moved, refused = bulk_transition(
            queryset.select_related(None).order_by(), target, user=request.user, reason="Django admin"
        )
        if moved:
            modeladmin.message_user(request, f"{len(moved)} moved to {label.lower()}.", messages.SUCCESS)
        for obj, message in refused:
            modeladmin.message_user(request, f"{obj}: {message}", messages.WARNING)

    action.__name__ = f"move_to_{target}"
    return action


class LifecycleAdmin(SimpleHistoryAdmin):
    actions = [transition_action(state) for state in LifecycleState.values]
    inlines = [TransitionInline]

    def get_readonly_fields(self, request, obj=None):
        fields = (*super().get_readonly_fields(request, obj), *TIMESTAMPS)
        return (*fields, "state") if obj is not None else fields


# --- Catalog -------------------------------------------------------------------------------------


@admin.register(GPUModel)
class GPUModelAdmin(SimpleHistoryAdmin):
    list_display = ("name", "vendor", "form_factor", "memory_gb", "memory_bandwidth_tbs", "bf16_tflops",
                    "fp8_tflops", "tdp_w", "nvlink_gbs")
    list_filter = ("vendor", "form_factor")
    search_fields = ("name", "vendor")
    readonly_fields = TIMESTAMPS


@admin.register(NodeModel)
class NodeModelAdmin(SimpleHistoryAdmin):
    list_display = ("name", "vendor", "cpu_cores", "ram_gb", "gpu_slots", "max_power_w", "height_u")
    list_filter = ("vendor", "gpu_slots")
    search_fields = ("name", "vendor")
    readonly_fields = TIMESTAMPS


# --- Places --------------------------------------------------------------------------------------


@admin.register(Site)
class SiteAdmin(SimpleHistoryAdmin):
    list_display = ("name", "location", "power_capacity_kw", "cooling_capacity_kw")
    search_fields = ("name", "location")
    readonly_fields = TIMESTAMPS


@admin.register(Rack)
class RackAdmin(SimpleHistoryAdmin):
    list_display = ("name", "site", "height_u", "power_budget_kw")
    list_filter = ("site",)
    list_select_related = ("site",)
    search_fields = ("name", "site__name")
    autocomplete_fields = ("site",)
    readonly_fields = TIMESTAMPS


# --- Compute -------------------------------------------------------------------------------------


class GPUInline(admin.TabularInline):
    model = GPU
    fields = ("slot", "gpu_model", "serial", "uuid", "state")
    readonly_fields = ("state",)
    autocomplete_fields = ("gpu_model",)
    ordering = ("slot",)
    extra = 0


class FabricAttachmentInline(admin.TabularInline):
    model = FabricAttachment
    fields = ("fabric", "switch", "ports", "speed_gbps")
    autocomplete_fields = ("fabric", "switch")
    extra = 0


@admin.register(Node)
class NodeAdmin(LifecycleAdmin):
    list_display = ("hostname", "state", "site", "rack", "position", "node_model", "partition", "owner_team",
                    "serial", "asset_tag", "warranty_end")
    list_filter = ("state", "site", "node_model", "partition", "owner_team")
    list_select_related = ("site", "rack__site", "node_model", "owner_team")
    search_fields = ("hostname", "serial", "asset_tag", "partition", "owner_team__name")
    autocomplete_fields = ("site", "rack", "node_model")
    date_hierarchy = "warranty_end"
    inlines = [GPUInline, FabricAttachmentInline, TransitionInline]


@admin.register(GPU)
class GPUAdmin(LifecycleAdmin):
    list_display = ("__str__", "state", "gpu_model", "node", "slot", "serial", "uuid")
    list_filter = ("state", "gpu_model", "node__site")
    list_select_related = ("node", "gpu_model")
    search_fields = ("serial", "uuid", "node__hostname")
    autocomplete_fields = ("node", "gpu_model")


@admin.register(StateTransition)
class StateTransitionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("created", "content_type", "object_id", "obj", "from_state", "to_state", "username", "reason")
    list_filter = ("to_state", "from_state", "content_type")
    list_select_related = ("content_type",)
    search_fields = ("username", "reason")
    date_hierarchy = "created"

    def get_queryset(self, request):
        # One query per kind of object for the "obj" column, not one per row.
        return super().get_queryset(request).prefetch_related(
            GenericPrefetch("obj", [Node.objects.all(), GPU.objects.select_related("node")])
        )


# --- Network and storage -------------------------------------------------------------------------


@admin.register(Fabric)
class FabricAdmin(SimpleHistoryAdmin):
    list_display = ("name", "kind", "link_speed_gbps", "site")
    list_filter = ("kind", "site")
    list_select_related = ("site",)
    search_fields = ("name", "description")
    autocomplete_fields = ("site",)
    readonly_fields = TIMESTAMPS


@admin.register(Switch)
class SwitchAdmin(SimpleHistoryAdmin):
    list_display = ("name", "fabric", "site", "rack", "model", "ports", "uplinks", "oversubscription_ratio")
    list_filter = ("fabric", "site", "model")
    list_select_related = ("fabric", "site", "rack__site")
    search_fields = ("name", "serial", "model")
    autocomplete_fields = ("fabric", "site", "rack")
    readonly_fields = TIMESTAMPS


@admin.register(FabricAttachment)
class FabricAttachmentAdmin(SimpleHistoryAdmin):
    list_display = ("node", "fabric", "switch", "ports", "speed_gbps", "bandwidth_gbps")
    list_filter = ("fabric", "speed_gbps")
    list_select_related = ("node", "fabric", "switch")
    search_fields = ("node__hostname", "fabric__name", "switch__name")
    autocomplete_fields = ("node", "fabric", "switch")
    readonly_fields = TIMESTAMPS


@admin.register(StorageSystem)
class StorageSystemAdmin(SimpleHistoryAdmin):
    list_display = ("name", "site", "kind", "tier", "capacity_tb", "used_tb", "used_percent", "read_gbs",
                    "write_gbs")
    list_filter = ("kind", "tier", "site")
    list_select_related = ("site",)
    search_fields = ("name",)
    autocomplete_fields = ("site",)
    readonly_fields = TIMESTAMPS
