"""Procurement rules as plain functions: how much of an order is delivered, its status, and receiving a
delivery (which creates the delivered nodes and GPUs). Used by the API, the pages and the demo data."""

from collections import Counter
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Prefetch

from inventory import lifecycle
from inventory.models import GPU, LifecycleState, Node
from portal import events

from .models import Delivery, DeliveryItem, OrderLine, PurchaseOrder

NON_FIELD = "non_field_errors"


def lines_with_counts():
    """Order lines annotated with ``delivered_count`` (one query for any number of lines)."""
    return OrderLine.objects.select_related("node_model", "gpu_model").annotate(
        delivered_count=Count("delivered_items")
    )


def orders_with_counts():
    """Purchase orders with their lines (and per-line delivered counts) and deliveries prefetched."""
    return PurchaseOrder.objects.select_related("contract", "site", "created_by").prefetch_related(
        Prefetch("lines", queryset=lines_with_counts()), "deliveries"
    )


def order_status(order):
    """``open``, ``partial`` or ``delivered`` from the delivered counts; a cancelled order stays cancelled."""
    if order.status == PurchaseOrder.Status.CANCELLED:
        return order.status
    lines = list(lines_with_counts().filter(order=order))
    delivered = sum(line.delivered_count for line in lines)
    if lines and all(line.delivered_count >= line.quantity for line in lines):
        return PurchaseOrder.Status.DELIVERED
    return PurchaseOrder.Status.PARTIAL if delivered else PurchaseOrder.Status.OPEN


@transaction.atomic
def cancel_order(order):
    """Cancel an order that nothing was delivered for yet; raises ``ValidationError`` otherwise. The order is
    locked (as ``receive_delivery`` locks it), so a delivery and a cancel racing never both go through."""
    order.refresh_from_db(fields=["status"], from_queryset=PurchaseOrder.objects.select_for_update(of=("self",)))
    if order.status == PurchaseOrder.Status.CANCELLED:
        raise ValidationError("The order is already cancelled.")
    if Delivery.objects.filter(order=order).exists():  # as stored now, not the deliveries prefetched before the lock
        raise ValidationError("Part of the order was delivered; it cannot be cancelled.")
    order.status = PurchaseOrder.Status.CANCELLED
    order.save(update_fields=["status", "updated"])
    return order


@dataclass
class ItemIn:
    """One delivered unit as the client sends it: ``line`` is an ``OrderLine``; ``node``/``slot`` place a GPU in
    a node (one delivered earlier or in the same delivery), by hostname."""

    line: OrderLine
    serial: str
    hostname: str = ""
    uuid: str = ""
    node: str = ""
    slot: int | None = None


@dataclass
class DeliveryRefused(Exception):
    """Nothing was created. ``errors`` is shaped like DRF's: ``{"items": [{field: [msg]}, {}, ...], ...}``."""

    errors: dict = field(default_factory=dict)


class _Errors:
    def __init__(self, count):
        self.items = [{} for _ in range(count)]
        self.other = {}

    def item(self, index, name, message):
        self.items[index].setdefault(name, []).append(message)

    def add(self, name, message):
        self.other.setdefault(name, []).append(message)

    def raise_if_any(self):
        errors = dict(self.other)
        if any(self.items):
            errors["items"] = self.items
        if errors:
            raise DeliveryRefused(errors)


def receive_delivery(order, items, user=None, **fields):
    """Record a delivery of ``items`` (``ItemIn``) for ``order`` in one transaction: the nodes and GPUs in state
    delivered at the order's site, their lifecycle records, the delivery items, the order status, and the
    ``delivery.received`` webhook event. Raises ``DeliveryRefused`` (and creates nothing) when an item is for
    another order, exceeds what remains of its line, repeats a serial, UUID or hostname, or cannot be placed."""
    with transaction.atomic():
        order = PurchaseOrder.objects.select_for_update().get(pk=order.pk)  # one delivery per order at a time
        errors = _Errors(len(items))
        if not items:
            errors.add("items", "A delivery lists at least one item.")
        if order.status == PurchaseOrder.Status.CANCELLED:
            errors.add("order", f"{order} is cancelled.")
        _check_items(order, items, errors)
        errors.raise_if_any()
        delivery = Delivery.objects.create(order=order, created_by=user, **fields)
        reason = f"delivery {delivery.pk} of PO {order.reference}"
        created = _create_hardware(order, items, user, errors)
        errors.raise_if_any()
        DeliveryItem.objects.bulk_create(
            DeliveryItem(delivery=delivery, line=item.line, serial=item.serial, node=node, gpu=gpu)
            for item, (node, gpu) in zip(items, created, strict=True)
        )
        for model_objects in ([n for n, _ in created if n], [g for _, g in created if g]):
            if model_objects:
                lifecycle.record_transitions(model_objects, [""] * len(model_objects), LifecycleState.DELIVERED,
                                             user, reason, delivery.created)
        order.status = order_status(order)
        order.save(update_fields=["status", "updated"])
        events.emit("delivery.received", delivery_payload(delivery))
    return delivery


def _check_items(order, items, errors):
    """Everything that can be checked before creating anything, with set-based queries."""
    remaining = {line.pk: line.quantity - line.delivered_count for line in lines_with_counts().filter(order=order)}
    per_line = Counter()
    for index, item in enumerate(items):
        line = item.line
        if line.pk not in remaining:
            errors.item(index, "line", f"Line {line.pk} belongs to another order, not {order}.")
            continue
        per_line[line.pk] += 1
        if per_line[line.pk] > remaining[line.pk]:
            errors.item(index, "line", f"Exceeds the order: line {line.pk} ({line}) has {remaining[line.pk]} "
                                       f"left to deliver, this delivery has {per_line[line.pk]} or more.")
        if line.node_model_id and not item.hostname:
            errors.item(index, "hostname", "A node needs a hostname.")
        if not line.node_model_id and item.hostname:
            errors.item(index, "hostname", "Only node lines take a hostname.")
        if line.gpu_model_id and not item.uuid:
            errors.item(index, "uuid", "A GPU needs its UUID (as nvidia-smi reports it: GPU-…).")
        if not line.gpu_model_id and (item.uuid or item.node or item.slot is not None):
            errors.item(index, "uuid" if item.uuid else "node", "Only GPU lines take a UUID, node or slot.")
        if item.node and item.slot is None:
            errors.item(index, "slot", "A GPU installed in a node needs a slot.")
        if item.slot is not None and not item.node:
            errors.item(index, "node", "Say which node (hostname) the slot is in.")
    _check_nodes_exist(items, errors)
    _check_unique(items, errors, "serial", [Node, GPU], "serial")
    _check_unique(items, errors, "hostname", [Node], "hostname")
    _check_unique(items, errors, "uuid", [GPU], "uuid")


def _check_nodes_exist(items, errors):
    wanted = {item.node for item in items if item.node} - {item.hostname for item in items if item.hostname}
    known = set(Node.objects.filter(hostname__in=wanted).values_list("hostname", flat=True))
    for index, item in enumerate(items):
        if item.node in wanted - known:
            errors.item(index, "node", f"No node {item.node} in the inventory or this delivery.")


def _check_unique(items, errors, attr, models, model_field):
    values = [getattr(item, attr) for item in items]
    counts = Counter(v for v in values if v)
    taken = set()
    for model in models:
        taken |= set(model.objects.filter(**{f"{model_field}__in": list(counts)}).values_list(model_field, flat=True))
    for index, value in enumerate(values):
        if value and counts[value] > 1:
            errors.item(index, attr, f"{value} appears {counts[value]} times in this delivery.")
        elif value in taken:
            errors.item(index, attr, f"{value} is already in the inventory.")


def _create_hardware(order, items, user, errors):
    """The node or GPU per item, ``(node, gpu)`` pairs; nodes first so GPUs can go into them."""
    created = [(None, None)] * len(items)
    nodes = {}
    for index, item in enumerate(items):
        if item.line.node_model_id:
            node = Node(hostname=item.hostname, serial=item.serial, site=order.site, node_model=item.line.node_model,
                        state=LifecycleState.DELIVERED)
            if _save_checked(node, user, errors, index):
                nodes[node.hostname] = node
                created[index] = (node, None)
    wanted = {item.node for item in items if item.node} - set(nodes)
    nodes.update((n.hostname, n) for n in Node.objects.select_related("node_model").filter(hostname__in=wanted))
    for index, item in enumerate(items):
        if item.line.gpu_model_id:
            node = nodes.get(item.node) if item.node else None
            if item.node and node is None:  # its node item was refused
                continue
            gpu = GPU(gpu_model=item.line.gpu_model, serial=item.serial, uuid=item.uuid, node=node, slot=item.slot,
                      state=LifecycleState.DELIVERED)
            if _save_checked(gpu, user, errors, index):
                created[index] = (None, gpu)
    return created


def _save_checked(obj, user, errors, index):
    """Save ``obj`` if its model's rules (``full_clean``) accept it; otherwise file the errors under the item."""
    try:
        obj.full_clean()
    except ValidationError as error:
        for name, messages in error.message_dict.items():
            for message in messages:
                errors.item(index, NON_FIELD if name == "__all__" else name, message)
        return False
    if user is not None and user.is_authenticated:
        obj._history_user = user
    obj.save()
    return True


def delivery_payload(delivery):
    """What the ``delivery.received`` webhook sends: the delivery, its order and the created hardware."""
    order = delivery.order
    items = delivery.items.select_related("node", "gpu", "gpu__node")
    return {
        "delivery": delivery.pk,
        "external_id": delivery.external_id,
        "delivered_on": delivery.delivered_on.isoformat(),
        "order": {"id": order.pk, "reference": order.reference, "vendor": order.vendor, "status": order.status},
        "items": [
            {
                "line": item.line_id, "serial": item.serial,
                "node": {"id": item.node_id, "hostname": item.node.hostname} if item.node_id else None,
                "gpu": {"id": item.gpu_id, "uuid": item.gpu.uuid,
                        "node": item.gpu.node.hostname if item.gpu.node_id else None} if item.gpu_id else None,
            }
            for item in items
        ],
    }
