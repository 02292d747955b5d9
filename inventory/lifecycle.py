"""Lifecycle rules for nodes and GPUs.

    ordered → delivered → burn-in → in service ⇄ degraded → in repair → in service
    any state → retired

Every change goes through ``transition`` (or ``bulk_transition``), which refuses anything else and
records who, when, from, to and why. Both lock the rows and check the state as stored, never one read
before: two requests racing cannot both start from the same state.
"""

from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from simple_history.utils import bulk_update_with_history

from portal import events

from .models import LifecycleState as S
from .models import StateTransition

# simple-history keeps a change reason in 100 characters; the lifecycle record keeps the whole reason.
HISTORY_REASON_LENGTH = 100

ALLOWED = {
    S.ORDERED: {S.DELIVERED},
    S.DELIVERED: {S.BURN_IN},
    S.BURN_IN: {S.IN_SERVICE},
    S.IN_SERVICE: {S.DEGRADED},
    S.DEGRADED: {S.IN_SERVICE, S.IN_REPAIR},
    S.IN_REPAIR: {S.IN_SERVICE},
    S.RETIRED: set(),
}


def allowed_targets(state):
    """States reachable from ``state``; retiring is allowed from anywhere but retired."""
    targets = set(ALLOWED.get(state, set()))
    if state != S.RETIRED:
        targets.add(S.RETIRED)
    return [s for s in S if s in targets]


class StaleState(ValidationError):
    """The object is no longer in the state the request was made from (someone changed it meanwhile)."""

    def __init__(self, obj, expected, target):
        self.current = obj.state
        super().__init__({"to": f"{obj} is now {S(obj.state).label.lower()}, not {S(expected).label.lower()}: "
                                f"someone changed it meanwhile, so it was not moved to {S(target).label.lower()}."})


def lock(obj):
    """Lock the row of a node or GPU until the transaction ends and read its stored state into ``obj``."""
    obj.refresh_from_db(fields=["state"], from_queryset=type(obj)._default_manager.select_for_update(of=("self",)))
    return obj


def check_transition(current, target):
    """Raise ``ValidationError`` (on field ``to``) if ``current → target`` is not allowed."""
    if target not in S.values:
        raise ValidationError({"to": f"'{target}' is not a lifecycle state."})
    if target not in allowed_targets(current):
        options = ", ".join(s.label for s in allowed_targets(current)) or "none"
        raise ValidationError(
            {"to": f"Cannot go from {S(current).label} to {S(target).label}; allowed from here: {options}."}
        )


def record_transitions(objs, previous_states, target, user, reason, now):
    """Write the lifecycle records of objects that changed state (or were created in one: ``previous`` "")."""
    content_type = ContentType.objects.get_for_model(objs[0])
    StateTransition.objects.bulk_create(
        StateTransition(
            content_type=content_type, object_id=obj.pk, from_state=previous, to_state=target,
            user=user if user and user.is_authenticated else None,
            username=user.get_username() if user and user.is_authenticated else "system",
            reason=reason, created=now,
        )
        for obj, previous in zip(objs, previous_states, strict=True)
    )


@transaction.atomic
def transition(obj, target, user=None, reason="", expected=None):
    """Move one node or GPU to ``target``; raises ``ValidationError`` if the rules refuse it, and
    ``StaleState`` if ``expected`` (the state the request was made from) is no longer the stored one."""
    lock(obj)
    if expected and obj.state != expected:
        raise StaleState(obj, expected, target)
    check_transition(obj.state, target)
    previous = obj.state
    obj.state = target
    obj._change_reason = reason[:HISTORY_REASON_LENGTH]
    if user and user.is_authenticated:
        obj._history_user = user
    obj.save(update_fields=["state", "updated"])
    record_transitions([obj], [previous], target, user, reason, timezone.now())
    announce_degraded([obj], target, reason)
    return obj


@transaction.atomic
def bulk_transition(queryset, target, user=None, reason=""):
    """Move every object of ``queryset`` that may go to ``target``, in bulk SQL.

    Returns ``(moved, refused)``: the objects moved and ``(object, message)`` for the others.
    """
    moved, refused = [], []
    for obj in queryset.select_for_update(of=("self",)):
        try:
            check_transition(obj.state, target)
        except ValidationError as error:
            refused.append((obj, error.message_dict["to"][0]))
        else:
            moved.append(obj)
    if moved:
        previous = [obj.state for obj in moved]
        now = timezone.now()
        for obj in moved:
            obj.state, obj.updated = target, now
        model = type(moved[0])
        bulk_update_with_history(
            moved, model, ["state", "updated"], default_user=user if user and user.is_authenticated else None,
            default_change_reason=reason[:HISTORY_REASON_LENGTH],
        )
        record_transitions(moved, previous, target, user, reason, now)
        announce_degraded(moved, target, reason)
    return moved, refused


def announce_degraded(objs, target, reason):
    """Tell ``portal.events`` (``node.degraded``) of each node or GPU just moved to degraded, with its node's name and
    owning team (subscribers are told once the move commits)."""
    if target != S.DEGRADED:
        return
    now = timezone.now()
    for obj in objs:
        node = obj if obj._meta.model_name == "node" else obj.node
        events.emit("node.degraded", {
            "node_id": node.pk if node else None, "node": node.hostname if node else "no node",
            "gpu_id": None if node is obj else obj.pk, "gpu": None if node is obj else obj.slot,
            "team": node.owner_team_id if node else None, "reason": reason, "at": now,
        })


def state_since(model):
    """An annotation for a queryset of ``model`` (Node or GPU): when each object entered its current state, from
    its latest lifecycle record into that state, else its creation (objects seeded without a record). A
    correlated subquery on the records' (content type, object) index, so lists keep their query count."""
    latest = (StateTransition.objects
              .filter(content_type__app_label=model._meta.app_label, content_type__model=model._meta.model_name,
                      object_id=OuterRef("pk"), to_state=OuterRef("state"))
              .order_by("-created", "-pk").values("created")[:1])
    return Coalesce(Subquery(latest), F("created"))


def time_in_state(since, now=None):
    """How long since ``since``, as people say it: "23 days", "5 hours", "under an hour"; "" without a time."""
    if since is None:
        return ""
    seconds = max(0, ((now or timezone.now()) - since).total_seconds())
    days, hours = int(seconds // 86400), int(seconds // 3600)
    if days:
        return f"{days} day{'s' if days != 1 else ''}"
    return f"{hours} hour{'s' if hours != 1 else ''}" if hours else "under an hour"


def hours_in_state_of(objects, state, start, end):
    """``{pk: hours in state between start and end}`` of ``objects`` (nodes, or GPUs: one model, each with its
    ``state``), from their lifecycle records since ``start`` (``hours_in_state``; one query for all)."""
    moves = {obj.pk: [] for obj in objects}
    if moves:
        content_type = ContentType.objects.get_for_model(objects[0])
        for object_id, *move in (
                StateTransition.objects.filter(content_type=content_type, object_id__in=moves, created__gte=start)
                .order_by("created", "pk").values_list("object_id", "created", "from_state", "to_state")):
            moves[object_id].append(tuple(move))
    return {obj.pk: hours_in_state(moves[obj.pk], state, obj.state, start, end) for obj in objects}


def hours_in_state(transitions, state, current, start, end):
    """Hours spent in ``state`` between ``start`` and ``end``, from the object's lifecycle ``transitions`` since
    ``start`` (``(created, from_state, to_state)``, oldest first) and its ``current`` state: the state at ``start``
    is the first move's ``from_state`` (the current one when nothing moved since)."""
    total, since = 0.0, start
    state_now = transitions[0][1] if transitions else current
    for created, _, to_state in transitions:
        if state_now == state:
            total += (min(created, end) - max(since, start)).total_seconds()
        state_now, since = to_state, created
    if state_now == state:
        total += (end - max(since, start)).total_seconds()
    return max(total, 0.0) / 3600
