"""``/api/inventory/statements/`` (read; ``issue/`` for managers) and ``/api/inventory/rate-cards/`` (managers
write; a card that priced issued statements answers 400 to an edit). Registered by ``inventory/api/urls.py``."""

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Exists, OuterRef
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from portal.api.viewsets import PortalModelViewSet
from portal.filters import MonthFilter

from ..issuing import adjust, issue_month
from ..models import ClosedMonth, RateCard, Statement
from . import serializers as api


class ReadsStatements(permissions.BasePermission):
    """Someone who may read some statement (``statements.policy``); ``issue`` and ``adjust`` need
    ``inventory.issue_statements``."""

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if getattr(view, "action", None) in ("issue", "adjust"):
            return user.has_perm("inventory.issue_statements")
        return user.has_perm("inventory.read_statement")


class StatementFilterSet(django_filters.FilterSet):
    month = MonthFilter(method="in_month", help_text="YYYY-MM")
    team = django_filters.CharFilter(field_name="team__name", help_text="The team's name.")

    class Meta:
        model = Statement
        fields = ["month", "team"]

    def in_month(self, queryset, name, value):
        return queryset.filter(month=value)


class StatementViewSet(viewsets.ReadOnlyModelViewSet):
    """Issued monthly statements: GPU-hours by partition, GPU model and user, priced at the month's rate card, less
    the infrastructure's credit, with the corrections they carry. Researchers read their own teams' only."""

    permission_classes = [ReadsStatements]
    queryset = Statement.objects.select_related("team", "closed_month__rate_card").prefetch_related(
        "lines", "adjustment_rows__created_by")
    serializer_class = api.StatementSerializer
    filterset_class = StatementFilterSet
    ordering = ["-month", "team__name", "pk"]
    ordering_fields = ["month", "total", "gpu_hours"]

    def get_queryset(self):
        return super().get_queryset().visible_to(self.request.user)

    @extend_schema(
        summary="Issue a month's statements",
        description="Closes the month (one that has ended) and issues one statement per team, and one for the jobs "
                    "of no team; issuing it again answers the statements as they are (`issued` false).",
        request=api.IssueSerializer,
        responses={201: api.IssuedSerializer, 200: api.IssuedSerializer,
                   400: OpenApiResponse(description='`{"month": ["..."]}`: not a month, not ended, or no rate.')},
    )
    @action(detail=False, methods=["post"])
    def issue(self, request):
        params = api.IssueSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        try:
            closed, issued = issue_month(params.validated_data["month"], user=request.user)
        except DjangoValidationError as error:
            raise serializers.ValidationError(serializers.as_serializer_error(error)) from None
        answer = {"month": closed.month, "issued": issued, "fleet_gpu_hours": closed.fleet_gpu_hours,
                  "statements": self.get_queryset().filter(closed_month=closed)}
        return Response(api.IssuedSerializer(answer, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED if issued else status.HTTP_200_OK)

    @extend_schema(
        summary="Correct a closed month",
        description="Records an adjustment of a team's closed (issued) month; it lands on the team's next statement "
                    "issued, never on the closed one.",
        request=api.AdjustRequestSerializer,
        responses={201: api.AdjustmentSerializer,
                   400: OpenApiResponse(description='`{"month": ["..."]}`: not a closed month, or a bad field.')},
    )
    @action(detail=False, methods=["post"])
    def adjust(self, request):
        params = api.AdjustRequestSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        try:
            row = adjust(data["team"], data["month"], data["amount"], data["reason"], user=request.user,
                         gpu_hours=data.get("gpu_hours"))
        except DjangoValidationError as error:
            errors = serializers.as_serializer_error(error)
            if "corrects" in errors:
                errors["month"] = errors.pop("corrects")
            raise serializers.ValidationError(errors) from None
        return Response(api.AdjustmentSerializer(row).data, status=status.HTTP_201_CREATED)


class RateCardViewSet(PortalModelViewSet):
    queryset = RateCard.objects.prefetch_related("rates").annotate(
        used=Exists(ClosedMonth.objects.filter(rate_card=OuterRef("pk"))))  # ``in_use`` for every row in one query
    serializer_class = api.RateCardSerializer
    filterset_fields = ["currency", "effective_from"]
    ordering = ["-effective_from"]
