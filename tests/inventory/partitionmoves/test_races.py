"""Partition moves raced against a live server on PostgreSQL: two managers approve at once (from the API and the
page), the proposer tries too, another rejects. Whatever arrives together, the stored outcome is one some serial
order reaches: one decision, never by the proposer; when approved, each node moved once (one history record of
the change per node)."""

from functools import partial

import pytest

from inventory.models import LifecycleState, Node, PartitionMove
from inventory.partitionmoves import workflow
from portal.roles import MANAGER
from tests.factories import make_node
from tests.helpers.races import Portal, race

pytestmark = pytest.mark.django_db(transaction=True)

M = PartitionMove
TRIALS = 4


@pytest.fixture
def people(live_server):
    return [Portal(live_server.url, name, MANAGER) for name in ("alice", "bob", "carol")]


def api_call(manager, move, action):
    return partial(manager.api, "POST", f"/api/inventory/partition-moves/{move.pk}/{action}/",
                   {"comment": f"{action} race"})


def page_call(manager, move, action):
    return partial(manager.post_page, manager.session(), f"/inventory/partition-moves/{move.pk}/decide/",
                   {"action": action, "comment": f"{action} race"})


def assert_a_serial_outcome(move, hostnames):
    move.refresh_from_db()
    assert move.status != M.Status.PROPOSED
    assert move.status == M.Status.WITHDRAWN or move.decided_by_id != move.proposed_by_id  # four eyes
    partitions = set(Node.objects.filter(hostname__in=hostnames).values_list("partition", flat=True))
    changes = [r for r in Node.history.filter(hostname__in=hostnames, partition=move.to_partition)]
    if move.status == M.Status.DONE:
        assert partitions == {move.to_partition} and len(changes) == len(hostnames)  # each node moved once
        assert all(r.history_change_reason.startswith(f"Partition move #{move.pk}: ") for r in changes)
    else:
        assert partitions == {move.from_partition} and not changes
    return move


@pytest.mark.parametrize("call", [api_call, page_call], ids=["api", "page"])
def test_two_approvals_at_once_make_one_move(people, call):
    alice, bob, carol = people
    for trial in range(TRIALS):
        hostnames = [f"race-{call.__name__[:3]}-{trial}-{i}" for i in range(2)]
        nodes = [make_node(hostname=h, partition="research", state=LifecycleState.IN_SERVICE) for h in hostnames]
        move = workflow.propose(alice.user, nodes, f"train-{trial}", "race")
        answers = race(call(bob, move, "approve"), call(carol, move, "approve"), call(alice, move, "approve"))
        if call is api_call:  # one approval wins; the other finds it done (400); the proposer is refused (403), or
            # finds it done first (400)
            assert sorted(a.status_code for a in answers) in ([200, 400, 400], [200, 400, 403]), answers
        assert assert_a_serial_outcome(move, hostnames).status == M.Status.DONE
        assert move.decided_by_id in (bob.user.pk, carol.user.pk)


def test_approve_and_reject_at_once_decide_once(people):
    alice, bob, carol = people
    for trial in range(TRIALS):
        hostnames = [f"race-mixed-{trial}-{i}" for i in range(2)]
        nodes = [make_node(hostname=h, partition="research", state=LifecycleState.IN_SERVICE) for h in hostnames]
        move = workflow.propose(alice.user, nodes, "train", "race")
        race(api_call(bob, move, "approve"), page_call(carol, move, "reject"), api_call(alice, move, "withdraw"))
        assert_a_serial_outcome(move, hostnames)
