"""Who may do what with partition moves (see ``portal.policy``).

- ``inventory.propose_partition_move``: managers and admins (``inventory.add_partitionmove``).
- ``inventory.decide_partition_move``: approve (which does the move) or reject a proposed one: managers and admins
  (``inventory.change_partitionmove``), never its proposer (four eyes). ``workflow`` checks it again on the move's
  row once locked.
- ``inventory.withdraw_partition_move``: its proposer, or a manager, while it is proposed.
"""

import rules

from portal.policy import has_model_perm


@rules.predicate
def not_its_proposer(user, move):
    return move is None or move.proposed_by_id != user.pk


@rules.predicate
def its_proposer(user, move):
    return move is not None and move.proposed_by_id == user.pk


@rules.predicate
def proposed(user, move):
    return move is None or move.is_proposed


decides_moves = has_model_perm("inventory.change_partitionmove")

rules.add_perm("inventory.propose_partition_move", has_model_perm("inventory.add_partitionmove"))
rules.add_perm("inventory.decide_partition_move", decides_moves & not_its_proposer & proposed)
rules.add_perm("inventory.withdraw_partition_move", (its_proposer | decides_moves) & proposed)
