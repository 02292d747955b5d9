"""``/api/planning/recommendations/``: the expansion recommendations (read-only: the analysis writes them), with
``accept`` (makes a draft capacity plan linked back) and ``dismiss`` (reason required) for managers, and
``run`` to analyse now. The analysis is ``planning.recommendations.store``."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from portal.api.permissions import RolePermission
from portal.api.viewsets import ChangePermission, OptimisticLocking, changes_object

from .. import store
from ..models import Recommendation
from .serializers import (
    ExpansionRecommendationSerializer,
    RecommendationAcceptSerializer,
    RecommendationDismissSerializer,
    RecommendationRunSerializer,
)


class RecommendationViewSet(OptimisticLocking, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                            viewsets.GenericViewSet):
    """Recommendations from telemetry: capacity-, scheduling-, storage-, network- and memory-bound partitions and
    ageing nodes, each with its evidence and a suggested action. Filter by `status`, `kind`, `severity`,
    `partition`, `site`. Managers accept one (a draft capacity plan is created and linked; capacity-bound and
    ageing ones pre-fill its bill of materials) or dismiss it with a reason."""

    queryset = Recommendation.objects.select_related("site", "node_model", "decided_by")
    serializer_class = ExpansionRecommendationSerializer
    permission_classes = [RolePermission]
    filterset_fields = ["status", "kind", "severity", "partition", "site", "plan"]
    ordering_fields = ["detected_at", "created", "severity", "kind", "pk"]
    ordering = ["-detected_at", "-pk"]

    def decided(self, rec):
        return Response(self.get_serializer(self.get_queryset().get(pk=rec.pk)).data)

    @extend_schema(summary="Accept: make a draft capacity plan from the recommendation",
                   request=RecommendationAcceptSerializer,
                   responses={200: ExpansionRecommendationSerializer,
                              400: OpenApiResponse(description="Not open any more; `detail` says why.")})
    @action(detail=True, methods=["post"], permission_classes=[ChangePermission])
    @changes_object
    def accept(self, request, pk=None):
        body = RecommendationAcceptSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            rec = store.accept(self.get_object(), request.user, body.validated_data["comment"])
        except DjangoValidationError as error:
            return Response({"detail": error.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
        return self.decided(rec)

    @extend_schema(summary="Dismiss the recommendation, saying why", request=RecommendationDismissSerializer,
                   responses={200: ExpansionRecommendationSerializer,
                              400: OpenApiResponse(description="No reason, or not open any more.")})
    @action(detail=True, methods=["post"], permission_classes=[ChangePermission])
    @changes_object
    def dismiss(self, request, pk=None):
        body = RecommendationDismissSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            rec = store.dismiss(self.get_object(), request.user, body.validated_data["reason"])
        except DjangoValidationError as error:
            return Response({"detail": error.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
        return self.decided(rec)

    @extend_schema(summary="Run the analysis now", request=None, responses={200: RecommendationRunSerializer})
    @action(detail=False, methods=["post"])
    def run(self, request):
        return Response(RecommendationRunSerializer(store.run()).data)
