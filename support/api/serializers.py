from django.contrib.auth import get_user_model
from rest_framework import serializers

from inventory.models import Team
from portal.api.serializers import EnumChoiceField, PortalModelSerializer

from .. import rendering, sla, workflow
from ..models import Ticket, TicketComment

STAFF_FIELDS = ("priority", "assignee", "requester", "rma_number", "site", "switch", "storage_system")


class SlugRelatedField(serializers.SlugRelatedField):
    """DRF's, refusing a name with a NUL character before looking it up: PostgreSQL cannot hold one, so the
    lookup query itself would fail (a 500 instead of "no such user")."""

    def to_internal_value(self, data):
        if isinstance(data, str) and "\x00" in data:
            self.fail("does_not_exist", slug_name=self.slug_field, value=data.replace("\x00", "\\x00"))
        return super().to_internal_value(data)


class TicketSerializer(PortalModelSerializer):
    """A ticket. ``status`` changes through ``POST …/transition/``; researchers set what they report (title,
    description, category, node, GPU, one of their teams), support staff everything else."""

    category = EnumChoiceField(Ticket.Category, required=False)
    priority = EnumChoiceField(Ticket.Priority, required=False)
    status = EnumChoiceField(Ticket.Status, read_only=True)
    requester = SlugRelatedField(slug_field="username", queryset=get_user_model().objects.all(), required=False,
                                 allow_null=True)
    assignee = SlugRelatedField(slug_field="username", queryset=get_user_model().objects.all(), required=False,
                                allow_null=True)
    team = SlugRelatedField(slug_field="name", queryset=Team.objects.all(), required=False, allow_null=True)
    description_html = serializers.SerializerMethodField(help_text="The description as sanitised HTML.")
    sla_state = serializers.SerializerMethodField()
    sla_contract = serializers.StringRelatedField(allow_null=True)  # null: the default SLA policy applies
    # Read-only model fields lose ``blank`` in DRF, so the schema would not allow "" (a ticket a person opened).
    fault = EnumChoiceField(Ticket.Fault, read_only=True, allow_blank=True)

    class Meta:
        model = Ticket
        fields = ["id", "url", "display", "title", "description", "description_html", "category", "priority",
                  "status", "requester", "assignee", "team", "site", "node", "gpu", "switch", "storage_system",
                  "source", "fault", "rma_number", "opened", "response_due", "resolution_due", "first_response_at",
                  "paused_since", "paused_seconds", "resolved_at", "closed_at", "sla_state", "sla_contract",
                  "created", "updated"]
        read_only_fields = ["source", "fault", "opened", "response_due", "resolution_due", "first_response_at",
                            "paused_since", "paused_seconds", "resolved_at", "closed_at", "created", "updated"]

    def get_fields(self):
        fields = super().get_fields()
        request = self.context.get("request")
        if request is not None and not request.user.has_perm("support.work_tickets"):
            for name in STAFF_FIELDS:
                fields[name].read_only = True
            fields["team"].queryset = request.user.teams.all() if request.user.is_authenticated \
                else Team.objects.none()
        return fields

    def get_sla_state(self, ticket) -> str:
        return sla.state(ticket)

    def get_description_html(self, ticket) -> str:
        return str(rendering.render(ticket.description))

    def validate_assignee(self, user):
        if user is not None and not workflow.is_staff(user):
            raise serializers.ValidationError(f"{user.get_username()} is not support staff.")
        return user


class TicketTransitionSerializer(serializers.Serializer):
    status = EnumChoiceField(Ticket.Status)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    from_status = EnumChoiceField(Ticket.Status, required=False, allow_blank=True, default="",
                                  help_text="Optional: the status the client saw; if it is no longer the stored "
                                            "one, the move is refused with 409 and nothing changes.")


class SwapSerializer(serializers.Serializer):
    """An RMA swap: ``part`` gpu (``gpu``: the GPU replaced, in the ticket's node) or node (the ticket's node)."""

    part = serializers.ChoiceField(choices=["gpu", "node"])
    gpu = serializers.IntegerField(required=False)
    serial = serializers.CharField(max_length=100)
    uuid = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    asset_tag = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    rma_number = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")


class TicketCommentSerializer(serializers.ModelSerializer):
    ticket = serializers.PrimaryKeyRelatedField(queryset=Ticket.objects.all())
    author = serializers.CharField(source="author_name", read_only=True)

    class Meta:
        model = TicketComment
        fields = ["id", "ticket", "author", "body", "internal", "created"]
        read_only_fields = ["created"]

    def get_fields(self):
        fields = super().get_fields()
        request = self.context.get("request")
        if request is not None:
            fields["ticket"].queryset = Ticket.objects.visible_to(request.user)
            if not request.user.has_perm("support.internal_comments"):
                fields["internal"].read_only = True
        return fields


class MetricsSerializer(serializers.Serializer):
    """See ``support.metrics.summary``."""

    days = serializers.IntegerField()
    open = serializers.IntegerField()
    breached = serializers.IntegerField()
    open_by_category = serializers.ListField(child=serializers.DictField())
    open_by_site = serializers.ListField(child=serializers.DictField())
    open_by_priority = serializers.ListField(child=serializers.DictField())
    mean_time_to_resolve_hours = serializers.FloatField(allow_null=True)
    mean_time_to_resolve_by_category = serializers.ListField(child=serializers.DictField())
    sla_compliance = serializers.DictField()
    sla_compliance_by_priority = serializers.ListField(child=serializers.DictField())
