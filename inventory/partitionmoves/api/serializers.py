"""Partition moves over REST."""

from rest_framework import serializers

from ...models import Node
from ..models import PartitionMove


class PartitionMoveSerializer(serializers.ModelSerializer):
    """A move; on ``POST`` the nodes (by hostname), ``to_partition``, ``reason`` and optionally the
    ``recommendation`` it carries out. The nodes move from the partition they are in."""

    url = serializers.HyperlinkedIdentityField(view_name="inventory-api:partitionmove-detail")
    nodes = serializers.SlugRelatedField(slug_field="hostname", many=True, queryset=Node.objects.all())
    proposed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = PartitionMove
        fields = ["id", "url", "status", "nodes", "from_partition", "to_partition", "reason", "recommendation",
                  "proposed_by", "decided_by", "decided_at", "decision_comment", "created", "updated"]
        read_only_fields = ["status", "from_partition", "decided_at", "decision_comment"]


class PartitionMoveDecisionSerializer(serializers.Serializer):
    comment = serializers.CharField(allow_blank=True, default="", max_length=2000)
