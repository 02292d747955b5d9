"""Lifecycle rules: allowed moves are made and recorded, everything else is refused and changes nothing."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError

from inventory.lifecycle import ALLOWED, allowed_targets, bulk_transition, check_transition, transition
from inventory.models import GPU, LifecycleState, Node, StateTransition
from tests.factories import make_gpu, make_node, make_rack

S = LifecycleState
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

ALLOWED_MOVES = sorted({(a, b) for a in S for b in allowed_targets(a)})
REFUSED_MOVES = sorted({(a, b) for a in S for b in S if b not in allowed_targets(a)})


def records_of(obj):
    return StateTransition.objects.filter(
        content_type=ContentType.objects.get_for_model(obj), object_id=obj.pk
    ).order_by("created", "pk")


def test_rules_table():
    assert allowed_targets(S.IN_SERVICE) == [S.DEGRADED, S.RETIRED]
    assert allowed_targets(S.DEGRADED) == [S.IN_SERVICE, S.IN_REPAIR, S.RETIRED]
    assert allowed_targets(S.RETIRED) == []
    assert set(ALLOWED) == set(S)  # every state has a rule


def test_whole_chain_is_walked_and_recorded(manager):
    node = make_node(state=S.ORDERED)
    chain = [S.DELIVERED, S.BURN_IN, S.IN_SERVICE, S.DEGRADED, S.IN_REPAIR, S.IN_SERVICE, S.DEGRADED, S.IN_SERVICE,
             S.RETIRED]
    for i, target in enumerate(chain):
        transition(node, target, user=manager, reason=f"step {i}")
    node.refresh_from_db()
    assert node.state == S.RETIRED
    records = list(records_of(node))
    assert [(r.from_state, r.to_state) for r in records] == list(zip([S.ORDERED, *chain[:-1]], chain, strict=True))
    assert [r.reason for r in records] == [f"step {i}" for i in range(len(chain))]
    assert {(r.user, r.username) for r in records} == {(manager, "max")}


@pytest.mark.parametrize(("current", "target"), ALLOWED_MOVES)
def test_allowed_move(manager, current, target):
    node = make_node(state=current)
    history_before = node.history.count()
    transition(node, target, user=manager, reason="XID 79: GPU fell off the bus")
    node.refresh_from_db()
    assert node.state == target
    (record,) = records_of(node)
    assert (record.from_state, record.to_state) == (current, target)
    assert (record.user, record.username, record.reason) == (manager, "max", "XID 79: GPU fell off the bus")
    assert record.obj == node
    history = node.history.first()
    assert node.history.count() == history_before + 1
    assert (history.state, history.history_type, history.history_user) == (target, "~", manager)
    assert history.history_change_reason == "XID 79: GPU fell off the bus"


@pytest.mark.parametrize(("current", "target"), REFUSED_MOVES)
def test_refused_move_changes_nothing(manager, current, target):
    node = make_node(state=current)
    updated, history_before = node.updated, node.history.count()
    with pytest.raises(ValidationError) as info:
        transition(node, target, user=manager, reason="should not happen")
    message = info.value.message_dict["to"][0]
    assert message.startswith(f"Cannot go from {S(current).label} to {S(target).label}; allowed from here: ")
    node.refresh_from_db()
    assert (node.state, node.updated) == (current, updated)
    assert not records_of(node).exists()
    assert node.history.count() == history_before


def test_refusal_message_lists_the_options():
    with pytest.raises(ValidationError) as info:
        check_transition(S.IN_SERVICE, S.IN_REPAIR)
    assert info.value.message_dict == {
        "to": ["Cannot go from In service to In repair; allowed from here: Degraded, Retired."]
    }


@pytest.mark.parametrize("current", [s for s in S if s != S.RETIRED])
def test_anything_can_be_retired(current):
    gpu = make_gpu(state=current)
    transition(gpu, S.RETIRED, reason="End of life")
    gpu.refresh_from_db()
    assert gpu.state == S.RETIRED
    (record,) = records_of(gpu)
    assert (record.from_state, record.to_state, record.user, record.username) == (current, S.RETIRED, None, "system")


@pytest.mark.parametrize("target", list(S))
def test_retired_is_final(target):
    node = make_node(state=S.RETIRED)
    with pytest.raises(ValidationError, match="allowed from here: none"):
        transition(node, target)
    node.refresh_from_db()
    assert node.state == S.RETIRED


def test_unknown_state_refused():
    node = make_node(state=S.IN_SERVICE)
    with pytest.raises(ValidationError) as info:
        transition(node, "exploded")
    assert info.value.message_dict == {"to": ["'exploded' is not a lifecycle state."]}


def test_gpu_records_point_at_the_gpu():
    node = make_node(state=S.IN_SERVICE)
    gpu = make_gpu(node=node, state=S.IN_SERVICE)
    transition(gpu, S.DEGRADED, reason="XID 48: double-bit ECC error")
    assert not records_of(node).exists()
    (record,) = records_of(gpu)
    assert record.content_type.model_class() is GPU
    assert list(gpu.transitions.all()) == [record]


def test_long_reason_kept_in_full():
    """The lifecycle record keeps the whole reason; the history row (100 characters) a prefix of it."""
    node = make_node(state=S.IN_SERVICE)
    reason = "XID 79: GPU fell off the bus. " * 10
    transition(node, S.DEGRADED, reason=reason)
    assert records_of(node).get().reason == reason
    assert reason.startswith(node.history.first().history_change_reason)
    moved, _ = bulk_transition(Node.objects.filter(pk=node.pk), S.IN_REPAIR, reason=reason)
    assert len(moved) == 1
    assert records_of(node).last().reason == reason


# --- bulk_transition -----------------------------------------------------------------------------


def test_bulk_transition_moves_the_allowed_and_reports_the_others(manager):
    ok = [make_node(state=S.IN_SERVICE) for _ in range(4)] + [make_node(state=S.DEGRADED)]
    retired = make_node(state=S.RETIRED, hostname="old-01")
    delivered = make_node(state=S.DELIVERED, hostname="new-01")
    nodes = Node.objects.filter(pk__in=[n.pk for n in [*ok, retired, delivered]])

    moved, refused = bulk_transition(nodes, S.IN_REPAIR, user=manager, reason="Drained for firmware update")

    # in_service → in_repair is not allowed either: only the degraded node moves
    assert [n.pk for n in moved] == [ok[-1].pk]
    assert {n.hostname: msg for n, msg in refused} == {
        **{n.hostname: "Cannot go from In service to In repair; allowed from here: Degraded, Retired." for n in ok[:4]},
        "old-01": "Cannot go from Retired to In repair; allowed from here: none.",
        "new-01": "Cannot go from Delivered to In repair; allowed from here: Burn-in, Retired.",
    }
    assert Node.objects.get(pk=ok[-1].pk).state == S.IN_REPAIR
    assert Node.objects.filter(state=S.IN_SERVICE).count() == 4
    assert StateTransition.objects.count() == 1


def test_bulk_transition_records_and_writes_history(manager):
    nodes = [make_node(state=S.IN_SERVICE) for _ in range(3)]
    make_node(state=S.RETIRED)
    moved, refused = bulk_transition(Node.objects.all(), S.DEGRADED, user=manager, reason="Row remap pending")
    assert (len(moved), len(refused)) == (3, 1)
    for node in nodes:
        node.refresh_from_db()
        assert node.state == S.DEGRADED
        (record,) = records_of(node)
        assert (record.from_state, record.to_state, record.user, record.reason) == (
            S.IN_SERVICE, S.DEGRADED, manager, "Row remap pending"
        )
        latest = node.history.first()
        assert (latest.history_type, latest.state, latest.history_user, latest.history_change_reason) == (
            "~", S.DEGRADED, manager, "Row remap pending"
        )
        assert latest.updated == record.created


@pytest.mark.parametrize("count", [3, 30])
def test_bulk_transition_query_count_does_not_grow(manager, django_assert_max_num_queries, count):
    for _ in range(count):
        make_node(state=S.IN_SERVICE)
    make_node(state=S.RETIRED)
    ContentType.objects.get_for_model(Node)  # warm the content-type cache, as in a running portal
    with django_assert_max_num_queries(8):
        moved, refused = bulk_transition(Node.objects.all(), S.DEGRADED, user=manager, reason="bulk")
    assert (len(moved), len(refused)) == (count, 1)


def test_bulk_transition_with_select_related_nullable_rack():
    """A queryset joining a nullable foreign key (rack) can still be locked on PostgreSQL."""
    make_node(state=S.IN_SERVICE)
    make_node(state=S.IN_SERVICE, rack=make_rack(), position=1)
    moved, refused = bulk_transition(Node.objects.select_related("rack", "site"), S.DEGRADED)
    assert (len(moved), refused) == (2, [])


def test_bulk_transition_on_gpus_and_empty_queryset():
    node = make_node(state=S.IN_SERVICE)
    for _ in range(8):
        make_gpu(node=node, state=S.DELIVERED)
    moved, refused = bulk_transition(node.gpus.all(), S.BURN_IN, reason="Acceptance burn-in")
    assert (len(moved), refused) == (8, [])
    assert set(GPU.objects.values_list("state", flat=True)) == {S.BURN_IN}
    assert StateTransition.objects.filter(content_type=ContentType.objects.get_for_model(GPU)).count() == 8
    assert bulk_transition(Node.objects.none(), S.RETIRED) == ([], [])
