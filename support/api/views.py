"""Tickets, comments and support metrics over REST (``/api/support/``). Rows are what the user may see: a
researcher's own and their teams' tickets, and never internal comments unless support staff."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import SAFE_METHODS, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from inventory.api.serializers import GPUSerializer, NodeSerializer
from inventory.models import GPU
from portal.api.exceptions import Conflict
from portal.api.permissions import RolePermission
from portal.api.viewsets import PortalModelViewSet, changes_object
from portal.forms import whole_number

from .. import faults, metrics, rma, workflow
from ..filters import TicketCommentFilterSet, TicketFilterSet
from ..models import Ticket, TicketComment
from . import serializers as api


class TicketPermission(RolePermission):
    """Reading needs ``support.read_ticket`` (researchers: rows limited by the queryset), a status move
    ``support.change_status`` (the workflow decides which), other posts the model's ``add`` permission; edits
    and deletes the model's ``change`` / ``delete`` permissions."""

    def has_permission(self, request, view):
        user = request.user
        if not user or not user.is_authenticated:
            return False
        if request.method in SAFE_METHODS:
            return user.has_perm("support.read_ticket")
        if request.method == "POST":
            if getattr(view, "action", None) == "transition":
                return user.has_perm("support.change_status")
            if getattr(view, "action", None) == "assign_to_me":  # as choosing an assignee (a PATCH): staff who edit
                return user.has_perm("support.edit_ticket")
            return user.has_perm(f"support.add_{view.queryset.model._meta.model_name}")
        return super().has_permission(request, view)


class TicketViewSet(PortalModelViewSet):
    """Support tickets with their SLA clock. Filters as on the queues: `queue` (mine, team, unassigned,
    breaching), `status`, `priority`, `category`, `open`, `sla` (breached, soon, at_risk), `assignee`, `team`,
    `site`, `node`, `gpu`, `q`."""

    serializer_class = api.TicketSerializer
    filterset_class = TicketFilterSet
    permission_classes = [TicketPermission]
    queryset = Ticket.objects.all()

    def get_queryset(self):
        return Ticket.objects.visible_to(self.request.user).select_related(
            "requester", "assignee", "team", "sla_contract")

    def perform_create(self, serializer):
        user = self.request.user
        ticket = Ticket(**serializer.validated_data)
        with transaction.atomic():
            workflow.open_ticket(ticket, user)
        serializer.instance = self.get_queryset().get(pk=ticket.pk)

    def perform_update(self, serializer):
        ticket = serializer.instance
        try:
            # edit locks the row first: a bulk PATCH reads it unlocked, the change applies to the row as stored.
            workflow.edit(ticket, self.request.user, serializer.validated_data, "Edited through the API")
        except DjangoValidationError as error:
            raise ValidationError(error.message_dict) from error
        serializer.instance = self.get_queryset().get(pk=ticket.pk)

    @extend_schema(summary="Change a ticket's status", request=api.TicketTransitionSerializer,
                   responses={200: api.TicketSerializer,
                              400: OpenApiResponse(description="Not allowed now; `status` says why."),
                              409: OpenApiResponse(description="`from_status` is no longer the ticket's status: "
                                                               "`detail` and `status` (the current one) say so.")})
    @action(detail=True, methods=["post"])
    @changes_object
    def transition(self, request, pk=None, format=None):
        ticket = self.get_object()
        body = api.TicketTransitionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            # change_status locks the row and checks the move against the status as stored.
            workflow.change_status(ticket, data["status"], request.user, data["note"], expected=data["from_status"])
        except workflow.StaleStatus as stale:
            raise Conflict(stale.message_dict["status"][0], status=stale.current) from stale
        except DjangoValidationError as error:
            return Response(error.message_dict, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(self.get_queryset().get(pk=ticket.pk)).data)

    @extend_schema(summary="Assign the ticket to yourself", request=None,
                   responses={200: api.TicketSerializer,
                              400: OpenApiResponse(description="Not allowed; `assignee` says why.")})
    @action(detail=True, methods=["post"], url_path="assign-to-me")
    @changes_object
    def assign_to_me(self, request, pk=None, format=None):
        ticket = self.get_object()
        self.require(request, "support.edit_ticket", ticket)
        try:
            workflow.assign(ticket, request.user, request.user)  # the page's "Assign to me" calls the same
        except DjangoValidationError as error:
            return Response(error.message_dict, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(self.get_queryset().get(pk=ticket.pk)).data)

    def require(self, request, permission, obj=None):
        if not request.user.has_perm(permission, obj):
            self.permission_denied(request)

    @extend_schema(summary="Record an RMA swap of the ticket's GPU or node", request=api.SwapSerializer,
                   responses={201: OpenApiResponse(description="The new GPU or node."),
                              400: OpenApiResponse(description="Refused; nothing was changed.")})
    @action(detail=True, methods=["post"])
    @changes_object
    def swap(self, request, pk=None, format=None):
        self.require(request, "support.rma_swap")  # before the lookup; a ticket without a node: 400 below
        ticket = self.get_object()
        body = api.SwapSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            new = rma.swap(ticket, data["part"], data["serial"], request.user,
                           gpu=GPU.objects.filter(pk=data.get("gpu")).first(), uuid=data["uuid"],
                           asset_tag=data["asset_tag"], rma_number=data["rma_number"])
        except DjangoValidationError as error:
            raise ValidationError(error.message_dict) from error
        serializer = GPUSerializer if data["part"] == "gpu" else NodeSerializer
        return Response(serializer(new, context={"request": request}).data, status=201)

    @extend_schema(summary="Return the resolved ticket's degraded node or GPU to service", request=None,
                   responses={200: api.TicketSerializer,
                              400: OpenApiResponse(description="Nothing to return to service."),
                              409: OpenApiResponse(description="Someone returned it (or moved it) meanwhile; "
                                                               "nothing was changed.")})
    @action(detail=True, methods=["post"], url_path="return-to-service")
    @changes_object
    def return_to_service(self, request, pk=None, format=None):
        ticket = self.get_object()
        asset = faults.returnable_asset(ticket)
        if asset is None:
            return Response({"detail": "The ticket is open, or its asset is not degraded or in repair."},
                            status=status.HTTP_400_BAD_REQUEST)
        self.require(request, "support.return_to_service", asset)
        if faults.return_to_service(ticket, request.user) is None:  # someone did it (or reopened it) meanwhile
            asset.refresh_from_db(fields=["state"])
            raise Conflict(f"Nothing was changed: {asset} is now {asset.get_state_display().lower()}.",
                           state=asset.state, status=ticket.status)
        return Response(self.get_serializer(self.get_queryset().get(pk=ticket.pk)).data)


class TicketCommentViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Comments on the tickets the user may see; internal ones for support staff only. Filter by `ticket`."""

    serializer_class = api.TicketCommentSerializer
    filterset_class = TicketCommentFilterSet
    permission_classes = [TicketPermission]
    queryset = TicketComment.objects.all()
    ordering = ["created", "pk"]

    def get_queryset(self):
        user = self.request.user
        comments = TicketComment.objects.filter(ticket__in=Ticket.objects.visible_to(user))
        if not user.has_perm("support.internal_comments"):
            comments = comments.filter(internal=False)
        return comments

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = workflow.add_comment(data["ticket"], self.request.user, data["body"],
                                                   internal=data.get("internal", False))


class MetricsView(APIView):
    """Open tickets by category, site and priority; mean time to resolve and SLA compliance over `days`."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[OpenApiParameter("days", int, description="Window for resolved tickets (90).")],
                   responses=api.MetricsSerializer)
    def get(self, request):
        if not request.user.has_perm("support.read_every_ticket"):
            return Response({"detail": "You do not have permission to perform this action."}, status=403)
        days = request.query_params.get("days", "")
        days = whole_number(days, 1, 3650) or metrics.DEFAULT_DAYS
        return Response(metrics.summary(days))
