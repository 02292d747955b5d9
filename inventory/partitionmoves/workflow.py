"""Moves of nodes between partitions: the one service the pages and the API call.

    proposed → done       (a manager other than the proposer approves: the nodes' partition changes)
             → rejected   (such a manager, saying why)
             → withdrawn  (its proposer or a manager)

Each decision locks the move's row first and checks its status and who acts on the row as stored then; approving
also locks the nodes' rows and checks each is still in the partition the move takes it from, so that two approvals
racing make one move, and a node moved meanwhile by hand is not moved twice.
"""

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from ..models import LifecycleState, Node
from .models import PartitionMove

M = PartitionMove


@transaction.atomic
def propose(user, nodes, to_partition, reason, from_partition=None, recommendation=None):
    """A proposed move of ``nodes`` (all in one partition: ``from_partition``, by default theirs) to
    ``to_partition``. Raises ``PermissionDenied`` or ``ValidationError`` (by field)."""
    if not user.has_perm("inventory.propose_partition_move"):
        raise PermissionDenied("Only managers propose moves between partitions.")
    nodes = list(Node.objects.filter(pk__in=[getattr(n, "pk", n) for n in nodes]).order_by("hostname"))
    if not nodes:
        raise ValidationError({"nodes": "Name the nodes to move."})
    partitions = sorted({n.partition for n in nodes})
    if from_partition is None:
        if len(partitions) > 1:
            raise ValidationError({"nodes": "The nodes are in several partitions ("
                                            + ", ".join(p or "(none)" for p in partitions) + "): move one at a time."})
        from_partition = partitions[0]
    elsewhere = [n.hostname for n in nodes if n.partition != from_partition]
    if elsewhere:
        raise ValidationError({"nodes": f"Not in partition {from_partition or '(none)'}: {', '.join(elsewhere)}."})
    retired = [n.hostname for n in nodes if n.state == LifecycleState.RETIRED]
    if retired:
        raise ValidationError({"nodes": f"Retired, in no partition's service: {', '.join(retired)}."})
    to_partition = (to_partition or "").strip()
    if not to_partition:
        raise ValidationError({"to_partition": "Name the partition the nodes move to."})
    if to_partition == from_partition:
        raise ValidationError({"to_partition": f"The nodes are in {to_partition} already."})
    if not (reason or "").strip():
        raise ValidationError({"reason": "Say why the nodes move: the second manager reads it."})
    pending = set(M.objects.filter(status=M.Status.PROPOSED, nodes__in=nodes).values_list("nodes__hostname", flat=True))
    pending &= {n.hostname for n in nodes}
    if pending:
        raise ValidationError({"nodes": f"Already in a proposed move: {', '.join(sorted(pending))}."})
    move = M(from_partition=from_partition, to_partition=to_partition, reason=reason.strip(),
             recommendation=recommendation, proposed_by=user)
    move.full_clean()
    move._change_reason = "Proposed"
    move.save()
    move.nodes.set(nodes)
    return move


def _locked(move):
    return M.objects.select_for_update().get(pk=move.pk)


def _check_decider(move, user):
    if not user.has_perm("inventory.decide_partition_move", move):
        if not move.is_proposed:
            raise ValidationError(f"The move is {move.get_status_display().lower()}; only a proposed one can be "
                                  "decided.")
        if move.proposed_by_id == user.pk:
            raise PermissionDenied("Four eyes: a move is approved by a manager other than its proposer.")
        raise PermissionDenied("Only managers approve or reject moves between partitions.")


@transaction.atomic
def approve(move, user, comment=""):
    """Approve a proposed move and do it: each node's partition changes, with the move in its history. Returns the
    move as stored after it."""
    move = _locked(move)
    _check_decider(move, user)
    nodes = list(Node.objects.select_for_update().filter(partition_moves=move).order_by("pk"))
    moved_away = [n.hostname for n in nodes if n.partition != move.from_partition]
    if moved_away:
        raise ValidationError(f"No longer in partition {move.from_partition or '(none)'}: {', '.join(moved_away)}. "
                              "Reject this move and propose another.")
    reason = f"Partition move #{move.pk}: {move.from_partition or '(none)'} → {move.to_partition}, approved by {user}"
    for node in nodes:
        node.partition = move.to_partition
        node._change_reason = reason
        node.save(update_fields=["partition", "updated"])
    return _decide(move, M.Status.DONE, user, comment)


@transaction.atomic
def reject(move, user, comment):
    """A manager's rejection of a proposed move, with the reason (required)."""
    if not (comment or "").strip():
        raise ValidationError({"comment": "Say why the move is rejected: its proposer reads it."})
    move = _locked(move)
    _check_decider(move, user)
    return _decide(move, M.Status.REJECTED, user, comment)


@transaction.atomic
def withdraw(move, user, comment=""):
    """Its proposer (or a manager) takes back a proposed move."""
    move = _locked(move)
    if not user.has_perm("inventory.withdraw_partition_move", move):
        if not move.is_proposed:
            raise ValidationError(f"The move is {move.get_status_display().lower()} already.")
        raise PermissionDenied("Only its proposer or a manager withdraws a move.")
    return _decide(move, M.Status.WITHDRAWN, user, comment)


def _decide(move, status, user, comment):
    move.status, move.decided_by, move.decided_at = status, user, timezone.now()
    move.decision_comment = (comment or "").strip()
    move._change_reason = f"proposed → {status}"
    move.save()
    return move
