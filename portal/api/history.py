"""The change records (django-simple-history) over the API: an object's history
(``GET .../{id}/history/``, on every model's API) and every change of a request or user across models
(``GET /api/changes/``)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal import changelog
from portal.forms import whole_number

from .pagination import PortalCursorPagination, PortalPagination

TYPES = {"+": "created", "~": "changed", "-": "deleted"}
MAX_CHANGES = 500


class ChangeRecordSerializer(serializers.Serializer):
    history_id = serializers.IntegerField(read_only=True)
    date = serializers.DateTimeField(source="history_date", read_only=True)
    type = serializers.SerializerMethodField()
    user = serializers.SerializerMethodField()
    reason = serializers.CharField(source="history_change_reason", read_only=True, allow_null=True)
    request_id = serializers.CharField(read_only=True)

    @extend_schema_field({"type": "string", "enum": list(TYPES.values())})
    def get_type(self, record):
        return TYPES[record.history_type]

    @extend_schema_field({"type": "string", "nullable": True})
    def get_user(self, record):
        return record.history_user.get_username() if record.history_user_id else None


class ObjectChangeSerializer(ChangeRecordSerializer):
    values = serializers.SerializerMethodField(help_text="The object's stored fields after this change.")

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_values(self, record):
        fields = record.instance_type._meta.concrete_fields
        return {f.attname: serializers.ModelField(f).to_representation(record) for f in fields
                if hasattr(record, f.attname)}


class AnyChangeSerializer(ChangeRecordSerializer):
    model = serializers.SerializerMethodField()
    object_id = serializers.IntegerField(source="id", read_only=True)
    object = serializers.CharField(source="shown", read_only=True)  # loaded by changelog.recent_changes

    def get_model(self, record) -> str:
        return record.model_opts.label_lower


class NewestFirstCursor(PortalCursorPagination):
    ordering = "-history_id"


class HistoryPagination(PortalPagination):
    """An object's change records, newest first, by page number or ``?cursor=``."""

    cursor_class = NewestFirstCursor


class ChangesView(APIView):
    """Every change over the models you may view: of one request (``request_id``, the ``X-Request-ID`` of
    the answer that made them), of one user, or of one model; newest first."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Change records across models",
        parameters=[
            OpenApiParameter("request_id", OpenApiTypes.STR, description="All changes made by one request."),
            OpenApiParameter("user", OpenApiTypes.STR, description="Changes made by this username."),
            OpenApiParameter("model", OpenApiTypes.STR, description="One model, e.g. `inventory.node`."),
            OpenApiParameter("limit", OpenApiTypes.INT,
                             description=f"At most this many (1-{MAX_CHANGES}, default 200)."),
        ],
        responses={200: AnyChangeSerializer(many=True)},
    )
    def get(self, request):
        params = request.query_params
        models = changelog.tracked_models(request.user)
        if params.get("model"):
            models = [m for m in models if m._meta.label_lower == params["model"]]
            if not models:
                raise ValidationError({"model": [f"No model {params['model']!r} with a history that you may view."]})
        limit = params.get("limit", "200")
        if whole_number(limit, 1, MAX_CHANGES) is None:  # not isdigit(): "²" is a digit int() refuses
            raise ValidationError({"limit": [f"A whole number from 1 to {MAX_CHANGES}."]})
        records = changelog.recent_changes(
            models, username=params.get("user") or None, request_id=params.get("request_id") or None, limit=int(limit),
        )
        return Response(AnyChangeSerializer(records, many=True).data)
