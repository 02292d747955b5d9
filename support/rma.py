"""Vendor RMA: recording the swap of a GPU or a node in the inventory, through ``inventory.lifecycle``.

- ``swap_gpu``: the old GPU is retired and leaves its slot (it stays in the inventory as a retired spare, its
  history saying where it was); a new GPU with the new serial takes the same node and slot, in service.
- ``swap_node``: the old node is retired, renamed ``<hostname>-rma-<id>`` and unracked; a new node with the new
  serial takes its hostname, rack position, model, partition and team; its GPUs move to the new node, and the
  contracts that listed the old node list the new one.

Both keep the history of both parts (change history and lifecycle records name the ticket and RMA number),
set the ticket's RMA number and leave a comment on the ticket.
"""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from inventory import lifecycle
from inventory.models import GPU, LifecycleState, Node

from . import workflow

S = LifecycleState


def _reason(ticket, rma_number, text):
    rma = f"RMA {rma_number}: " if rma_number else ""
    return f"{rma}{text} (ticket #{ticket.pk})"


def _save_with_history(obj, user, reason, **kwargs):
    obj._change_reason = reason[:lifecycle.HISTORY_REASON_LENGTH]
    if user is not None and user.is_authenticated:
        obj._history_user = user
    obj.save(**kwargs)


def _check_new(model, serial, **unique):
    errors = {}
    if not serial.strip():
        errors["serial"] = "Give the new part's serial number."
    elif model.objects.filter(serial=serial).exists():
        errors["serial"] = f"A {model._meta.verbose_name} with serial {serial} is already in the inventory."
    for field, value in unique.items():
        if value and model.objects.filter(**{field: value}).exists():
            errors[field] = f"A {model._meta.verbose_name} with this {field.replace('_', ' ')} already exists."
    if errors:
        raise ValidationError(errors)


def _finish(ticket, user, rma_number, text):
    if rma_number and ticket.rma_number != rma_number:  # on the locked, freshly read ticket: no change lost
        workflow.set_fields(ticket, user, f"RMA {rma_number}", rma_number=rma_number)
    workflow.add_comment(ticket, user, f"Swap recorded: {text}", internal=False, notify=False)


def swap(ticket, part, serial, user=None, gpu=None, uuid="", asset_tag="", rma_number=""):
    """Record the swap of ``part``: "gpu" (``gpu``, one of the ticket's node's GPUs) or "node" (the ticket's
    node); returns the new part. For the ticket page and the API alike."""
    if part == "gpu":
        if gpu is None or ticket.node_id is None or gpu.node_id != ticket.node_id:
            raise ValidationError({"gpu": "Give the id of a GPU in the ticket's node."})
        return swap_gpu(ticket, gpu, serial, user, uuid=uuid, rma_number=rma_number)
    if ticket.node_id is None:
        raise ValidationError({"part": "The ticket names no node."})
    return swap_node(ticket, ticket.node, serial, user, asset_tag=asset_tag, rma_number=rma_number)


@transaction.atomic
def swap_gpu(ticket, gpu, serial, user=None, uuid="", rma_number=""):
    """Replace ``gpu`` by a new one with ``serial`` in the same slot; returns the new GPU."""
    gpu = GPU.objects.select_for_update(of=("self",)).select_related("node", "gpu_model").get(pk=gpu.pk)
    rma_number = rma_number or ticket.rma_number
    if gpu.state == S.RETIRED or gpu.node_id is None:
        raise ValidationError({"gpu": f"{gpu} is not installed in a node: there is nothing to swap."})
    _check_new(GPU, serial, uuid=uuid)
    node, slot, old_name = gpu.node, gpu.slot, str(gpu)
    reason = _reason(ticket, rma_number, f"replaced by serial {serial} in {node}/gpu{slot}")
    lifecycle.transition(gpu, S.RETIRED, user=user, reason=reason)
    gpu.node, gpu.slot = None, None
    _save_with_history(gpu, user, reason, update_fields=["node", "slot", "updated"])
    new = GPU(node=node, slot=slot, gpu_model=gpu.gpu_model, serial=serial, uuid=uuid, state=S.IN_SERVICE)
    new.full_clean()
    installed = _reason(ticket, rma_number, f"installed in {node}/gpu{slot}, replacing {old_name}")
    _save_with_history(new, user, installed)
    lifecycle.record_transitions([new], [""], S.IN_SERVICE, user, installed, timezone.now())
    _finish(ticket, user, rma_number, f"GPU {old_name} retired; serial {serial} installed in {node}/gpu{slot}.")
    return new


@transaction.atomic
def swap_node(ticket, node, serial, user=None, asset_tag="", rma_number=""):
    """Replace ``node`` by a new one with ``serial`` under the same hostname and rack position; returns it."""
    old = Node.objects.select_for_update(of=("self",)).select_related("node_model").get(pk=node.pk)
    rma_number = rma_number or ticket.rma_number
    if old.state == S.RETIRED:
        raise ValidationError({"node": f"{old} is retired: there is nothing to swap."})
    _check_new(Node, serial, asset_tag=asset_tag)
    hostname, rack, position = old.hostname, old.rack, old.position
    reason = _reason(ticket, rma_number, f"replaced by serial {serial}")
    lifecycle.transition(old, S.RETIRED, user=user, reason=reason)
    old.hostname = f"{hostname}-rma-{old.pk}"[:100]
    old.rack, old.position = None, None
    _save_with_history(old, user, reason, update_fields=["hostname", "rack", "position", "updated"])
    new = Node(hostname=hostname, serial=serial, asset_tag=asset_tag, site=old.site, rack=rack, position=position,
               node_model=old.node_model, partition=old.partition, owner_team_id=old.owner_team_id,
               warranty_end=old.warranty_end, state=S.IN_SERVICE)
    new.full_clean()
    installed = _reason(ticket, rma_number, f"replaces {old.hostname} (serial {old.serial or '—'})")
    _save_with_history(new, user, installed)
    lifecycle.record_transitions([new], [""], S.IN_SERVICE, user, installed, timezone.now())
    for gpu in old.gpus.all():
        gpu.node = new
        _save_with_history(gpu, user, _reason(ticket, rma_number, f"moved from {old.hostname} to the new chassis"),
                           update_fields=["node", "updated"])
    new.contracts.set(old.contracts.all())
    _finish(ticket, user, rma_number, f"node {hostname} (serial {old.serial or '—'}) retired as {old.hostname}; "
                                      f"serial {serial} in service as {hostname}.")
    return new
