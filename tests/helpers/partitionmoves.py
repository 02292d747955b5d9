"""Partition moves for the battery: ``n`` proposed moves of two nodes each, made in bulk."""

from inventory.models import PartitionMove
from tests import factories as f


def make_partition_moves(n):
    user = f.UserFactory()
    nodes = [f.make_node(partition="research"), f.make_node(partition="research")]
    moves = PartitionMove.objects.bulk_create(
        [PartitionMove(from_partition="research", to_partition="train", reason="battery", proposed_by=user)
         for _ in range(n)])
    through = PartitionMove.nodes.through
    through.objects.bulk_create([through(partitionmove=move, node=node) for move in moves for node in nodes])
    return moves
