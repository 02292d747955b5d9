"""The list of partition moves."""

import django_tables2 as tables

from portal.tables import PortalTable

from .models import PartitionMove


class PartitionMoveTable(PortalTable):
    move = tables.Column(accessor="pk", verbose_name="#", linkify=True)
    created = tables.DateTimeColumn("Y-m-d H:i", verbose_name="Proposed")
    status = tables.Column()
    node_list = tables.Column("Nodes", accessor="pk", orderable=False)  # rendered from the prefetched nodes
    from_partition = tables.Column("From", default="(none)")
    to_partition = tables.Column("To")
    proposed_by = tables.Column("By")
    decided_by = tables.Column("Decided by")
    recommendation = tables.Column("Recommendation")

    class Meta:
        model = PartitionMove
        fields = ()
        sequence = ("move", "created", "status", "node_list", "from_partition", "to_partition", "proposed_by",
                    "decided_by", "recommendation")
        empty_text = "No moves between partitions yet: propose one, or from a recommendation's \"Move these nodes\"."

    def render_node_list(self, record):
        return ", ".join(node.hostname for node in record.nodes.all())

    def value_node_list(self, record):
        return self.render_node_list(record)
