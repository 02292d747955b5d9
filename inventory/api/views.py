"""One viewset per inventory model: queryset (with the joins and counts its serializer shows, so a
list costs the same few queries for 5 rows or 500), serializer and filter set. Nodes and GPUs add
the lifecycle actions. Telemetry's viewsets are in ``telemetry/api/views.py``."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, serializers
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.exceptions import Conflict
from portal.api.viewsets import ChangePermission, PortalModelViewSet, changes_object

from .. import capacity, filters, lifecycle, querysets
from . import serializers as api

# --- Lifecycle actions ------------------------------------------------------------------------------


class LifecycleActionsMixin:
    """``POST {id}/transition/`` (``{"to": ..., "reason": ...}``, needs the change permission) and
    ``GET {id}/transitions/`` (the lifecycle records, newest first) for a node or GPU viewset."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The answer is the viewset's own serializer; document it per model.
        model = cls.serializer_class.Meta.model._meta.verbose_name
        extend_schema_view(
            transition=extend_schema(
                summary=f"Change the {model}'s lifecycle state",
                description=(
                    f"Moves the {model} to another lifecycle state if the lifecycle rules allow it, and records "
                    "who, when, from, to and why. `state` cannot be changed with PUT or PATCH."
                ),
                request=api.TransitionSerializer,
                responses={
                    200: cls.serializer_class,
                    400: OpenApiResponse(description='Refused, e.g. `{"to": ["Cannot go from Retired to ..."]}`.'),
                    409: OpenApiResponse(description="`from_state` is no longer the stored state: `detail` and "
                                                     "`state` (the current one) say so; nothing changed."),
                },
            ),
            transitions=extend_schema(
                summary=f"The {model}'s lifecycle records",
                description="Every lifecycle change, newest first: from, to, who and why.",
                responses=api.StateTransitionSerializer(many=True),
                filters=False,
            ),
        )(cls)

    def get_serializer_class(self):
        # The request bodies and answers of the actions (also what the browsable API's forms show).
        if self.action == "transition":
            return api.TransitionSerializer
        if self.action == "transitions":
            return api.StateTransitionSerializer
        return super().get_serializer_class()

    @action(detail=True, methods=["post"], permission_classes=[ChangePermission])
    @changes_object
    def transition(self, request, pk=None):
        obj = self.get_object()
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            # transition locks the row, so two concurrent transitions cannot both start from the same state.
            lifecycle.transition(obj, data["to"], request.user, data["reason"], expected=data["from_state"])
        except lifecycle.StaleState as stale:
            raise Conflict(stale.message_dict["to"][0], state=stale.current) from stale
        except DjangoValidationError as error:
            raise serializers.ValidationError(serializers.as_serializer_error(error)) from error
        return Response(self.serializer_class(obj, context=self.get_serializer_context()).data)

    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def transitions(self, request, pk=None):
        obj = self.get_object()
        return Response(self.get_serializer(obj.transitions.all(), many=True).data)


# --- Viewsets -------------------------------------------------------------------------------------


class GPUModelViewSet(PortalModelViewSet):
    """GPU models of the hardware catalog (memory, bandwidth, TFLOP/s, TDP), with how many GPUs of each
    the inventory holds."""

    queryset = querysets.gpu_models()
    serializer_class = api.GPUModelSerializer
    filterset_class = filters.GPUModelFilterSet


class NodeModelViewSet(PortalModelViewSet):
    """Node (server) models of the hardware catalog: CPU, RAM, GPU slots, power and height, with how many
    nodes of each."""

    queryset = querysets.node_models()
    serializer_class = api.NodeModelSerializer
    filterset_class = filters.NodeModelFilterSet


class SiteViewSet(PortalModelViewSet):
    """Data centre sites with their power and cooling capacity, and how many racks and nodes each holds."""

    queryset = querysets.sites()
    serializer_class = api.SiteSerializer
    filterset_class = filters.SiteFilterSet


class RackViewSet(PortalModelViewSet):
    """Racks of a site: height and power budget, and how many nodes each holds."""

    queryset = querysets.racks()
    serializer_class = api.RackSerializer
    filterset_class = filters.RackFilterSet


class NodeViewSet(LifecycleActionsMixin, PortalModelViewSet):
    """GPU nodes: place (site, rack, position), model, lifecycle state, partition and owner team. `state` is set on
    creation; change it afterwards with the `transition` action."""

    queryset = querysets.nodes()
    serializer_class = api.NodeSerializer
    filterset_class = filters.NodeFilterSet
    values_list = True


class GPUViewSet(LifecycleActionsMixin, PortalModelViewSet):
    """GPUs, installed in a node's slot or spare (no node). `state` is set on creation; change it afterwards with
    the `transition` action."""

    queryset = querysets.gpus()
    serializer_class = api.GPUSerializer
    filterset_class = filters.GPUFilterSet
    values_list = True


class FabricViewSet(PortalModelViewSet):
    """Network fabrics (InfiniBand, RoCE, Ethernet) with their link speed, switches and attached nodes."""

    queryset = querysets.fabrics()
    serializer_class = api.FabricSerializer
    filterset_class = filters.FabricFilterSet


class SwitchViewSet(PortalModelViewSet):
    """Fabric switches: ports, uplinks and oversubscription, and where they are."""

    queryset = querysets.switches()
    serializer_class = api.SwitchSerializer
    filterset_class = filters.SwitchFilterSet


class FabricAttachmentViewSet(PortalModelViewSet):
    """A node's connection to a fabric: ports and speed per port (bandwidth = ports × speed)."""

    queryset = querysets.fabric_attachments()
    serializer_class = api.FabricAttachmentSerializer
    filterset_class = filters.FabricAttachmentFilterSet


class StorageSystemViewSet(PortalModelViewSet):
    """Storage systems of a site: kind, tier, capacity, use and throughput."""

    queryset = querysets.storage_systems()
    serializer_class = api.StorageSystemSerializer
    filterset_class = filters.StorageSystemFilterSet


# --- Reports --------------------------------------------------------------------------------------------


class ReadsNodes(permissions.BasePermission):
    """Fleet counts: an authenticated user who may read the nodes (an account without a role may not)."""

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.has_perm("inventory.view_node"))


class CapacityView(APIView):
    """The capacity model (``inventory.capacity``): a scope's GPUs by what they can do now, the figure the home page
    and every other page count the fleet with."""

    permission_classes = [ReadsNodes]

    @extend_schema(
        summary="GPUs by capacity state, for the fleet or a scope, optionally per site, partition or GPU model",
        description="A GPU is in service when it and its node are; out of service when either is degraded or in "
                    "repair; in burn-in when either is delivered or in burn-in; retired GPUs (or GPUs of retired "
                    "nodes) are not counted in `owned` or `total`. `rented` is the part of `in_service` on nodes an "
                    "active rental contract covers, until `rented_until`. `says` is the count in words.",
        parameters=[api.CapacityQuerySerializer],
        responses={200: api.CapacitySerializer,
                   400: OpenApiResponse(description="An unknown site, GPU model or grouping (field errors).")},
        filters=False,
    )
    def get(self, request):
        params = api.CapacityQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        scope, group_by = params.scope(), params.validated_data.get("group_by")
        groups = capacity.count_by(group_by, **scope) if group_by else {}
        answer = {
            "scope": scope, "fleet": capacity.count(**scope).as_dict(), "group_by": group_by,
            "groups": [{"key": key, **counts.as_dict()} for key, counts in
                       sorted(groups.items(), key=lambda item: (item[0] is None, str(item[0])))],
        }
        return Response(api.CapacitySerializer(answer).data)

