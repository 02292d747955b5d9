"""Recommendations (read-only) and the bodies and answers of their actions."""

from rest_framework import serializers

from portal.api.serializers import EnumChoiceField, PortalModelSerializer

from ..models import Recommendation

R = Recommendation


class ExpansionRecommendationSerializer(PortalModelSerializer):
    kind = EnumChoiceField(R.Kind, read_only=True)
    status = EnumChoiceField(R.Status, read_only=True)
    severity = EnumChoiceField(R.Severity, read_only=True)
    # null while there is no site / node model / decision: documented as nullable (allow_null).
    site_name = serializers.CharField(source="site.name", read_only=True, default=None, allow_null=True)
    node_model_name = serializers.CharField(source="node_model.name", read_only=True, default=None, allow_null=True)
    decided_by = serializers.CharField(source="decided_by.get_username", read_only=True, default=None,
                                       allow_null=True)
    evidence = serializers.JSONField(read_only=True, help_text='{"figures": [{"label", "value", "unit", "rule"}], '
                                                               '"chart": {"type", "title", "data"}, "ruled_out": '
                                                               '[...]}')
    ruled_out = serializers.SerializerMethodField(
        help_text='The differential: what the rule checked besides its finding, '
                  '[{"kind", "label", "why", "figures": [{"label", "value", "unit", "rule"}]}] (also in `evidence`).')

    def get_ruled_out(self, rec) -> list[dict]:
        return (rec.evidence or {}).get("ruled_out", [])

    class Meta:
        model = Recommendation
        fields = ["id", "url", "display", "key", "kind", "status", "severity", "title", "summary", "action",
                  "evidence", "ruled_out", "partition", "site", "site_name", "node", "node_model", "node_model_name",
                  "node_count", "node_price", "created", "updated", "detected_at", "decided_by", "decided_at",
                  "dismiss_reason", "plan"]
        read_only_fields = fields


class RecommendationAcceptSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="",
                                    help_text="Added to the new plan's description.")


class RecommendationDismissSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="Why the recommendation is dismissed (required).")


class RecommendationRunSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    resolved = serializers.IntegerField()
    skipped = serializers.IntegerField()
