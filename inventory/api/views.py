"""One viewset per inventory model: queryset (with the joins and counts its serializer shows, so a
list costs the same few queries for 5 rows or 500), serializer and filter set. Nodes and GPUs add
the lifecycle actions."""

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.exceptions import Conflict
from portal.api.viewsets import ChangePermission, PortalModelViewSet

from .. import filters, lifecycle, querysets
from ..tasks import PULL_NOT_QUEUED, queue_pull_now
from ..telemetry import queries as telemetry_queries
from ..telemetry.filters import GPUHourlyFilterSet, TelemetrySourceFilterSet, UnknownSeriesFilterSet
from ..telemetry.models import GPUHourly, TelemetrySource
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


class GPUViewSet(LifecycleActionsMixin, PortalModelViewSet):
    """GPUs, installed in a node's slot or spare (no node). `state` is set on creation; change it afterwards with
    the `transition` action."""

    queryset = querysets.gpus()
    serializer_class = api.GPUSerializer
    filterset_class = filters.GPUFilterSet


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


# --- Telemetry ------------------------------------------------------------------------------------


class TelemetrySourceViewSet(PortalModelViewSet):
    """Telemetry sources (Prometheus with DCGM exporter series, exporter scrape, Slurm accounting) and the state of
    their pulls. `auth_token` is write-only; the status fields are written by the pulls only. `POST {id}/pull/`
    queues a pull now."""

    queryset = querysets.telemetry_sources()
    serializer_class = api.TelemetrySourceSerializer
    filterset_class = TelemetrySourceFilterSet

    @extend_schema(
        summary="Queue a pull of the source now",
        request=None,
        responses={202: inline_serializer("PullQueued", {"detail": serializers.CharField()}),
                   409: OpenApiResponse(description="The source is disabled.")},
    )
    @action(detail=True, methods=["post"], permission_classes=[ChangePermission])
    def pull(self, request, pk=None):
        source = self.get_object()
        if not source.enabled:
            raise Conflict(f"{source} is disabled; enable it to pull it.")
        if not queue_pull_now(source.pk):  # recorded as due: still accepted, run by the next poll
            return Response({"detail": PULL_NOT_QUEUED}, status=202)
        return Response({"detail": f"Pull of {source} queued."}, status=202)


class UnknownSeriesViewSet(viewsets.ReadOnlyModelViewSet):
    """Series reported by telemetry sources that match no GPU in the inventory (neither by UUID nor by hostname and
    GPU index): add or fix the GPUs, and the next pull matches them."""

    queryset = querysets.unknown_series()
    serializer_class = api.UnknownSeriesSerializer
    filterset_class = UnknownSeriesFilterSet
    ordering = ["pk"]
    ordering_fields = "__all__"


class GPUHourlyViewSet(viewsets.ReadOnlyModelViewSet):
    """The hourly telemetry rollups of each GPU, for exports and reporting tools: filter by GPU, node, site and
    hour range; read long ranges with cursor pages (``?cursor=``), which stay stable while new hours arrive."""

    queryset = GPUHourly.objects.select_related("gpu")
    serializer_class = api.GPUHourlySerializer
    filterset_class = GPUHourlyFilterSet
    ordering = ["pk"]
    ordering_fields = ["pk", "hour", "util_mean", "power_mean_w"]


class SlurmJobViewSet(viewsets.ReadOnlyModelViewSet):
    """Jobs from Slurm accounting sources (written by their pulls): submit, start and end times, partition, account
    (team), nodes and allocated GPUs, with each job's queue wait and GPU-hours. Newest submissions first."""

    queryset = querysets.slurm_jobs().select_related("source")
    serializer_class = api.SlurmJobSerializer
    filterset_fields = ["source", "partition", "account", "state", "user", "cluster"]
    ordering = ["-submit_time", "-pk"]
    ordering_fields = "__all__"


class CanViewTelemetry(permissions.BasePermission):
    """Telemetry figures: an authenticated user who may read telemetry (``inventory.policy``)."""

    def has_permission(self, request, view):
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm("inventory.read_telemetry"))


ID_GROUPS = {"site", "gpu_model", "node"}  # groups whose key is an object id


class UtilizationView(APIView):
    """GPU utilization per site, partition, GPU model, team or node over a range, for procurement and reporting
    tools: the figures of the utilization dashboard."""

    permission_classes = [CanViewTelemetry]

    @extend_schema(
        summary="Utilization, idle GPU-hours and idle cost per group",
        description=(
            "Mean utilization (weighted by hours), GPU-hours observed, idle GPU-hours (GPU-hours × (1 − "
            "utilization / 100)) and their cost (× the idle GPU-hour cost) per group. Hours without data are "
            "left out, never counted as idle; `stale_sources` lists the sources whose data is incomplete."
        ),
        parameters=[api.UtilizationQuerySerializer],
        responses={200: api.UtilizationSerializer,
                   400: OpenApiResponse(description='Unknown parameter, e.g. `{"range": ["Unknown range ..."]}`.')},
        filters=False,
    )
    def get(self, request):
        params = api.UtilizationQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        group_by, range_key = params.validated_data["group_by"], params.validated_data["range"]
        now = timezone.now()
        groups = telemetry_queries.utilization_by(group_by, range_key, params.filters(), now=now)
        span = telemetry_queries.get_range(range_key)
        answer = {
            "group_by": group_by,
            "range": range_key,
            "rollup": "daily" if span.daily else "hourly",
            "start": span.start(now),
            "end": now,
            "currency": settings.COST_CURRENCY,
            "idle_gpu_hour_cost": settings.IDLE_GPU_HOUR_COST,
            "groups": [{**g, "id": g["key"] if group_by in ID_GROUPS else None} for g in groups],
            "stale_sources": telemetry_queries.stale_sources(),
        }
        return Response(api.UtilizationSerializer(answer, context={"request": request}).data)


class AllocationsView(APIView):
    """Allocated GPU-hours per team (Slurm account) or partition over a range, from Slurm accounting: the figures
    of the utilization dashboard's Slurm allocations charts, with the multi-node share and queue waits of each
    partition."""

    permission_classes = [CanViewTelemetry]

    @extend_schema(
        summary="Allocated GPU-hours, jobs, multi-node share and queue wait per team or partition",
        description=(
            "Allocated GPU-hours: allocated GPUs × the part of each job's run inside the range (jobs still running "
            "count until now). `group_by=partition` adds the share of GPU-hours from jobs on more than one node and "
            "the p50/p95 queue wait of the jobs started in the range; those fields are null for teams. Filters: "
            "`partition` and `team` (the Slurm account); jobs record no site or GPU model."
        ),
        parameters=[api.AllocationQuerySerializer],
        responses={200: api.AllocationsSerializer,
                   400: OpenApiResponse(description='Unknown parameter, e.g. `{"range": ["Unknown range ..."]}`.')},
        filters=False,
    )
    def get(self, request):
        params = api.AllocationQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        group_by, range_key = params.validated_data["group_by"], params.validated_data["range"]
        now = timezone.now()
        answer = {
            "group_by": group_by,
            "range": range_key,
            "start": telemetry_queries.get_range(range_key).start(now),
            "end": now,
            "groups": telemetry_queries.allocations(group_by, range_key, params.filters(), now=now),
            "stale_sources": [source for source in telemetry_queries.stale_sources()
                              if source.kind == TelemetrySource.Kind.SLURM],
        }
        return Response(api.AllocationsSerializer(answer, context={"request": request}).data)
