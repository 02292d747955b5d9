"""The telemetry API: sources (with "pull now"), unknown series, hourly rollups and Slurm jobs, and the
utilization and allocations reports. Registered by ``inventory/api/urls.py`` under ``/api/inventory/``."""

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from inventory import querysets
from portal.api.exceptions import Conflict
from portal.api.viewsets import ChangePermission, PortalModelViewSet, changes_object

from .. import queries as telemetry_queries
from .. import slurm_figures
from ..filters import GPUHourlyFilterSet, TelemetrySourceFilterSet, UnknownSeriesFilterSet
from ..models import GPUHourly, TelemetrySource
from ..tasks import PULL_NOT_QUEUED, queue_pull_now
from . import serializers as api


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
    @changes_object
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
    (team), nodes and allocated GPUs, with each job's queue wait and GPU-hours. Newest submissions first. Researchers
    read their own teams' jobs only: every team's allocated GPU-hours are in `allocations/`."""

    queryset = querysets.slurm_jobs().select_related("source")
    serializer_class = api.SlurmJobSerializer
    filterset_fields = ["source", "partition", "account", "state", "user", "cluster"]
    ordering = ["-submit_time", "-pk"]
    ordering_fields = "__all__"

    def get_queryset(self):
        # A researcher reads their own teams' jobs only (``inventory.policy``); another team's is a 404.
        return super().get_queryset().visible_to(self.request.user)


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
            "utilization / 100)) and their cost (× each node's cost per GPU-hour from its contracts, else × "
            "`idle_gpu_hour_cost`: `idle_cost_basis` says which) per group. Hours without data are left out, "
            "never counted as idle; `stale_sources` lists the sources whose data is incomplete."
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
            "end": span.end(now),
            "currency": settings.COST_CURRENCY,
            "idle_gpu_hour_cost": settings.IDLE_GPU_HOUR_COST,
            "idle_cost_basis": telemetry_queries.idle_cost_basis(telemetry_queries.totals(groups)),
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
            "count until now), or inside the calendar month `month` (YYYY-MM: the monthly statements add up to "
            "it). `group_by=partition` adds the share of GPU-hours from jobs on more than one node and "
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
        month, now = params.validated_data.get("month"), timezone.now()
        start, end = slurm_figures.span(range_key, now, month)
        answer = {
            "group_by": group_by,
            "range": range_key if month is None else f"{month:%Y-%m}",
            "start": start,
            "end": end,
            "groups": slurm_figures.allocations(group_by, range_key, params.filters(), now=now, month=month),
            "stale_sources": [source for source in telemetry_queries.stale_sources()
                              if source.kind == TelemetrySource.Kind.SLURM],
        }
        return Response(api.AllocationsSerializer(answer, context={"request": request}).data)
