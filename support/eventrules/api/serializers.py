"""Notification rules over REST."""

from django.contrib.auth import get_user_model
from rest_framework import serializers

from inventory.models import Team
from planning.models import Webhook
from portal.api.serializers import COMMON, TIMESTAMPS, PortalModelSerializer

from ..models import XID_CLASSES, EventKind, NotificationRule
from ..policy import teams_for


class NotificationRuleSerializer(PortalModelSerializer):
    """A rule: a user's own (``owner``: whoever made it) or a team's (``team``: one the user manages; managers: any).
    ``events`` and ``xid_classes`` are lists of their choices; ``webhook`` (an id) only for the webhook channel."""

    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all(), required=False,
                                        allow_null=True)
    events = serializers.ListField(child=serializers.ChoiceField(choices=EventKind.choices), min_length=1,
                                   max_length=len(EventKind.choices))
    xid_classes = serializers.ListField(child=serializers.ChoiceField(choices=XID_CLASSES), required=False,
                                        max_length=len(XID_CLASSES))
    webhook = serializers.PrimaryKeyRelatedField(queryset=Webhook.objects.all(), required=False, allow_null=True)

    class Meta:
        model = NotificationRule
        fields = [*COMMON, "name", "owner", "team", "events", "xid_classes", "channel", "webhook", "digest",
                  "enabled", *TIMESTAMPS]

    def get_fields(self):
        fields = super().get_fields()
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            fields["team"].queryset = teams_for(user)
            fields["webhook"].queryset = (Webhook.objects.filter(enabled=True) if user.has_perm("planning.view_webhook")
                                          else Webhook.objects.none())
        return fields

    def validate(self, attrs):
        user = self.context["request"].user
        if "events" in attrs:
            attrs["events"] = list(dict.fromkeys(attrs["events"]))
        if "xid_classes" in attrs:
            attrs["xid_classes"] = list(dict.fromkeys(attrs["xid_classes"]))
        if attrs.get("team") is not None:
            attrs["owner"] = None
        elif self.instance is None or ("team" in attrs and self.instance.team_id is not None):
            attrs["owner"] = get_user_model().objects.get(pk=user.pk)  # a new rule, or a team's made one's own
        return super().validate(attrs)
