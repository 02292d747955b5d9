"""Allocations (read: with their use) and allocation requests (create, approve, reject, withdraw) over REST; every
change is ``workflow``'s, every figure ``usage``'s, and researchers read their own teams' only."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from portal.api.permissions import RolePermission
from portal.api.viewsets import OptimisticLocking, changes_object

from .. import sync, usage, workflow
from ..models import AllocationRequest, SlurmSync, TeamAllocation
from ..policy import may_act_on_requests, visible
from . import serializers as api


class ScopedMixin:
    def get_queryset(self):
        return visible(super().get_queryset(), self.request.user)


class TeamAllocationViewSet(ScopedMixin, viewsets.ReadOnlyModelViewSet):
    """Approved allocations with their `use` now (GPU-hours used, left, running GPUs, the burn rate and the day the
    budget runs out). Written only by approved requests (`allocation-requests/`)."""

    queryset = TeamAllocation.objects.select_related("team", "gpu_model").order_by("pk")
    serializer_class = api.TeamAllocationSerializer
    permission_classes = [RolePermission]
    filterset_fields = ["team", "partition", "gpu_model"]

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "figures": getattr(self, "figures", {})}

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        self.figures = usage.figures(page if page is not None else queryset)
        return page

    def retrieve(self, request, *args, **kwargs):
        allocation = self.get_object()
        self.figures = usage.figures([allocation])
        return Response(self.get_serializer(allocation).data)

    @extend_schema(summary="The allocation's day-by-day use, budget and projection",
                   responses={200: api.BurnDownSerializer})
    @action(detail=True, methods=["get"], url_path="burn-down", pagination_class=None, filter_backends=[])
    def burn_down(self, request, pk=None, **kwargs):
        drawn = usage.burn_down(self.get_object())
        return Response(api.BurnDownSerializer({**drawn, "use": drawn["figures"]}).data)


def refusal(error):
    """A ``workflow`` refusal as DRF's answer: field errors (400) or the reason (403)."""
    if isinstance(error, DjangoPermissionDenied):
        raise PermissionDenied(str(error))
    raise serializers.ValidationError(getattr(error, "message_dict", None) or {"detail": error.messages})


class AllocationRequestViewSet(ScopedMixin, OptimisticLocking, mixins.CreateModelMixin,
                               viewsets.ReadOnlyModelViewSet):
    """Requests for a new allocation, a change or a renewal: `POST` one (a team's managers, or managers), then a
    manager other than the requester approves it (two above `ALLOCATION_SECOND_APPROVAL_GPU_HOURS`), or one
    rejects it saying why, or the requester withdraws it."""

    queryset = AllocationRequest.objects.select_related("team", "requested_by", "decided_by").prefetch_related(
        "approvals__user").order_by("-pk")
    serializer_class = api.AllocationRequestSerializer
    permission_classes = [RolePermission]
    filterset_fields = ["status", "kind", "team"]

    def get_permissions(self):
        if self.action in ("create", "approve", "reject", "withdraw"):
            return []  # who may ask or decide depends on the team and the request: ``workflow`` checks it
        return super().get_permissions()

    def create(self, request, *args, **kwargs):
        if not request.user.is_authenticated or not may_act_on_requests(request.user):
            raise PermissionDenied("Only managers and the teams' own managers ask for allocations.")
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        terms = {name: data[name] for name in workflow.TERMS if name in data}
        try:
            pending = workflow.request(request.user, data.get("team"), data["reason"], kind=data.get("kind", "new"),
                                       allocation=data.get("allocation"), **terms)
        except (DjangoValidationError, DjangoPermissionDenied) as error:
            refusal(error)
        return Response(self.get_serializer(self.get_queryset().get(pk=pending.pk)).data,
                        status=status.HTTP_201_CREATED)

    def decide(self, request, service):
        if not request.user.is_authenticated or not may_act_on_requests(request.user):
            raise PermissionDenied("Only managers and the teams' own managers act on allocation requests.")
        body = api.DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            pending = service(self.get_object(), request.user, body.validated_data["comment"])
        except (DjangoValidationError, DjangoPermissionDenied) as error:
            refusal(error)
        return Response(self.get_serializer(self.get_queryset().get(pk=pending.pk)).data)

    responses = {200: api.AllocationRequestSerializer,
                 400: OpenApiResponse(description="Not pending, or the allocation would overlap another."),
                 403: OpenApiResponse(description="Not a manager, or the requester (four eyes).")}

    @extend_schema(summary="Approve a pending request (a manager, not its requester)", request=api.DecisionSerializer,
                   responses=responses)
    @action(detail=True, methods=["post"])
    @changes_object
    def approve(self, request, pk=None, **kwargs):
        return self.decide(request, workflow.approve)

    @extend_schema(summary="Reject a pending request, saying why", request=api.DecisionSerializer,
                   responses=responses)
    @action(detail=True, methods=["post"])
    @changes_object
    def reject(self, request, pk=None, **kwargs):
        return self.decide(request, workflow.reject)

    @extend_schema(summary="Withdraw a pending request (its requester or a manager)", request=api.DecisionSerializer,
                   responses=responses)
    @action(detail=True, methods=["post"])
    @changes_object
    def withdraw(self, request, pk=None, **kwargs):
        return self.decide(request, workflow.withdraw)



class SlurmSyncViewSet(OptimisticLocking, viewsets.ReadOnlyModelViewSet):
    """Looks at Slurm against the allocations in force, newest first: `POST` one (a manager: reads Slurm, stores the
    changes that would make it hold the allocations, the drift and the warnings; writes nothing), then `apply/` it
    (a manager: one verified `sacctmgr -i` call at a time; only the latest look). Read by those who read every
    team's allocations."""

    queryset = SlurmSync.objects.select_related("created_by", "approved_by").prefetch_related(
        "applied__applied_by").order_by("-created", "-pk")
    serializer_class = api.SlurmSyncSerializer
    permission_classes = [RolePermission]
    filterset_fields = ["status", "cluster"]

    def get_queryset(self):
        from ...policy import reads_whole_fleet

        return super().get_queryset() if reads_whole_fleet(self.request.user) else SlurmSync.objects.none()

    def get_permissions(self):
        return [] if self.action in ("create", "apply") else super().get_permissions()

    @extend_schema(summary="Look at Slurm now", request=None,
                   responses={201: api.SlurmSyncSerializer, 403: OpenApiResponse(description="Not a manager.")})
    def create(self, request, *args, **kwargs):
        if not request.user.has_perm("inventory.apply_slurm_sync"):
            raise PermissionDenied("Only managers look at Slurm for a new sync.")
        look = sync.propose(request.user)
        return Response(self.get_serializer(self.get_queryset().get(pk=look.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="Approve and apply the look's changes (the latest look only)", request=None,
                   responses={200: api.SlurmSyncSerializer,
                              400: OpenApiResponse(description="Not the latest look, or applied already."),
                              403: OpenApiResponse(description="Not a manager.")})
    @action(detail=True, methods=["post"])
    @changes_object
    def apply(self, request, pk=None, **kwargs):
        if not request.user.has_perm("inventory.apply_slurm_sync"):
            raise PermissionDenied("Only managers apply changes to Slurm.")
        try:
            done = sync.apply(self.get_object(), request.user)
        except (DjangoValidationError, DjangoPermissionDenied) as error:
            refusal(error)
        return Response(self.get_serializer(self.get_queryset().get(pk=done.pk)).data)
