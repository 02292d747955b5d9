"""``/api/tokens/``: API tokens listed and revoked. Everyone sees and revokes their own; an admin
(``portal.view_apitoken`` / ``portal.delete_apitoken``: admins only, ``portal.roles.ADMIN_ONLY_MODELS``) everyone's,
``?user=<username>`` for one user's. The key itself is never shown again: tokens are made on the Tokens page."""

import django_filters
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated

from portal.models import APIToken


class APITokenSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    is_expired = serializers.BooleanField(read_only=True)

    class Meta:
        model = APIToken
        fields = ["id", "user", "name", "prefix", "created", "expires", "last_used", "is_expired"]
        read_only_fields = fields


class APITokenFilterSet(django_filters.FilterSet):
    user = django_filters.CharFilter(field_name="user__username", help_text="The tokens of this user (username).")

    class Meta:
        model = APIToken
        fields = ["user"]


class APITokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                      viewsets.GenericViewSet):
    """A user's API tokens (an admin: everyone's). DELETE revokes one: it stops working at once."""

    queryset = APIToken.objects.select_related("user").order_by("user__username", "-created", "pk")
    serializer_class = APITokenSerializer
    filterset_class = APITokenFilterSet
    permission_classes = [IsAuthenticated]
    ordering_fields = ["created", "last_used", "name"]

    def get_queryset(self):
        found = super().get_queryset()
        if self.request.user.has_perm("portal.view_apitoken"):
            return found
        return found.filter(user=self.request.user)

    def perform_destroy(self, token):
        if token.user_id != self.request.user.pk and not self.request.user.has_perm("portal.delete_apitoken"):
            raise PermissionDenied("Only an admin revokes another user's token.")
        token.delete()
