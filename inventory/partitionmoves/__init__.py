"""Moves of nodes between Slurm partitions (issue 37): proposed, approved by a manager other than the proposer,
done (each node's partition changed, the change in its history). ``workflow`` is the one service pages and API call:
``propose``, ``approve``, ``reject``, ``withdraw``."""
