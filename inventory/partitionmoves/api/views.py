"""Partition moves over REST: propose, approve (which does the move), reject, withdraw; every change is
``workflow``'s."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from portal.api.permissions import RolePermission
from portal.api.viewsets import OptimisticLocking, changes_object

from .. import workflow
from ..models import PartitionMove
from . import serializers as api


def refusal(error):
    """A ``workflow`` refusal as DRF's answer: field errors (400) or the reason (403)."""
    if isinstance(error, DjangoPermissionDenied):
        raise PermissionDenied(str(error))
    raise serializers.ValidationError(getattr(error, "message_dict", None) or {"detail": error.messages})


class PartitionMoveViewSet(OptimisticLocking, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Moves of nodes between Slurm partitions: `POST` one (a manager), then a manager other than its proposer
    approves it (the nodes' partition changes, each node's history says so) or rejects it saying why, or its
    proposer withdraws it."""

    queryset = (PartitionMove.objects.select_related("proposed_by", "decided_by").prefetch_related("nodes")
                .order_by("-pk"))
    serializer_class = api.PartitionMoveSerializer
    permission_classes = [RolePermission]
    filterset_fields = ["status", "from_partition", "to_partition", "recommendation"]

    def create(self, request, *args, **kwargs):
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            move = workflow.propose(request.user, data["nodes"], data["to_partition"], data["reason"],
                                    recommendation=data.get("recommendation"))
        except (DjangoValidationError, DjangoPermissionDenied) as error:
            refusal(error)
        return Response(self.get_serializer(self.get_queryset().get(pk=move.pk)).data,
                        status=status.HTTP_201_CREATED)

    def decide(self, request, service):
        # The role's permission (a POST: add) is checked before the lookup; who may decide this move, by
        # ``workflow`` on its locked row.
        body = api.PartitionMoveDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            move = service(self.get_object(), request.user, body.validated_data["comment"])
        except (DjangoValidationError, DjangoPermissionDenied) as error:
            refusal(error)
        return Response(self.get_serializer(self.get_queryset().get(pk=move.pk)).data)

    responses = {200: api.PartitionMoveSerializer,
                 400: OpenApiResponse(description="Not proposed, or a node is no longer where the move takes it from."),
                 403: OpenApiResponse(description="Not a manager, or the proposer (four eyes).")}

    @extend_schema(summary="Approve a proposed move and do it (a manager, not its proposer)",
                   request=api.PartitionMoveDecisionSerializer, responses=responses)
    @action(detail=True, methods=["post"])
    @changes_object
    def approve(self, request, pk=None, **kwargs):
        return self.decide(request, workflow.approve)

    @extend_schema(summary="Reject a proposed move, saying why", request=api.PartitionMoveDecisionSerializer,
                   responses=responses)
    @action(detail=True, methods=["post"])
    @changes_object
    def reject(self, request, pk=None, **kwargs):
        return self.decide(request, workflow.reject)

    @extend_schema(summary="Withdraw a proposed move (its proposer or a manager)",
                   request=api.PartitionMoveDecisionSerializer, responses=responses)
    @action(detail=True, methods=["post"])
    @changes_object
    def withdraw(self, request, pk=None, **kwargs):
        return self.decide(request, workflow.withdraw)
