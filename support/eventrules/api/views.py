"""``/api/support/notification-rules/``: a user's own rules and their teams' (every rule for those who read them
all); ``POST …/<id>/test/`` sends a test message. Who may read and change which rule is ``policy``'s: changing
another's rule is a 403, not a 404."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response

from portal.api.viewsets import PortalModelViewSet, changes_object

from .. import delivery
from ..filters import NotificationRuleFilterSet
from ..models import NotificationRule
from ..policy import visible
from .serializers import NotificationRuleSerializer


class RulePermission(BasePermission):
    def has_permission(self, request, view):
        user = request.user
        if not user or not user.is_authenticated:
            return False
        return user.has_perm("support.read_rule" if request.method in SAFE_METHODS else "support.subscribe")

    def has_object_permission(self, request, view, obj):
        return request.user.has_perm("support.read_rule" if request.method in SAFE_METHODS else "support.edit_rule",
                                     obj)


class NotificationRuleViewSet(PortalModelViewSet):
    """Notification rules: which events (`events`, `xid_classes`) reach whom (`owner` or `team`), how (`channel`:
    email, or webhook with `webhook`) and when (`digest`: none, hourly, daily)."""

    queryset = NotificationRule.objects.select_related("owner", "team", "webhook")
    serializer_class = NotificationRuleSerializer
    filterset_class = NotificationRuleFilterSet
    permission_classes = [RulePermission]

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.request.method in SAFE_METHODS:
            return visible(queryset, self.request.user)
        return queryset  # a write on a rule one may not change: a 403 from the object check

    @extend_schema(summary="Send a test message through the rule's channel", request=None,
                   responses={200: OpenApiResponse(description="What was sent"),
                              400: OpenApiResponse(description="Nowhere to send it")})
    @action(detail=True, methods=["post"], filter_backends=[])
    @changes_object  # changes nothing, but with an If-Match it tests the rule as the client last read it
    def test(self, request, pk=None, **kwargs):
        rule = self.get_object()
        try:
            return Response({"detail": delivery.send_test(rule)})
        except ValueError as error:
            raise ValidationError({"detail": [str(error)]}) from error
