"""Which contracts cover which assets: plain, set-based query functions.

A contract covers what it lists and everything below it: a node is covered by a contract that lists the
node, its rack or its site; a GPU by one that lists the GPU, its node, its node's rack or its node's site.
Several contracts may cover one asset (a purchase, a support contract over it, an expansion it came with),
but an asset is bought once: ``purchase_conflicts`` refuses a second purchase contract listing it. A contract
is active on a day from its start to its end (inclusive); a contract without an end stays active.
"""

from collections import defaultdict

from django.db import connections, router
from django.db.models import BooleanField, Case, CharField, Exists, F, OuterRef, Q, Subquery, Value, When
from django.utils import timezone

from inventory.models import GPU, LifecycleState, Node

from .models import Contract

NO_SUPPORT = "no active support contract"
WARRANTY_ENDED = "warranty ended"
BOTH = "no active support contract; warranty ended"


def active_contracts(day=None, kinds=None):
    """Contracts active on ``day`` (today by default), optionally of some kinds only."""
    day = day or timezone.localdate()
    contracts = Contract.objects.filter(Q(end__isnull=True) | Q(end__gte=day), start__lte=day)
    return contracts.filter(kind__in=kinds) if kinds else contracts


def active_contracts_list(day=None, kinds=()):
    """``list(active_contracts(day, kinds))``, in the same order, read by hand: every utilization figure asks for
    the contracts that price its nodes, and the ORM took twice as long to compile that query as to read it."""
    day = day or timezone.localdate()
    quote = connections[router.db_for_read(Contract)].ops.quote_name
    kind_in = f" AND c.kind IN ({', '.join(['%s'] * len(kinds))})" if kinds else ""
    order = ", ".join(f"c.{quote(name.lstrip('-'))}{' DESC' if name.startswith('-') else ''}"
                      for name in Contract._meta.ordering)
    return list(Contract.objects.raw(
        f"SELECT c.* FROM {quote(Contract._meta.db_table)} c WHERE c.{quote('start')} <= %s "
        f"AND (c.{quote('end')} IS NULL OR c.{quote('end')} >= %s){kind_in} ORDER BY {order}", [day, day, *kinds]))


def _node_coverage(contracts, node_ref="pk", rack_ref="rack_id", site_ref="site_id"):
    """A condition, true where one of ``contracts`` lists the node, its rack or its site (``OuterRef``s
    name those on the outer query's rows)."""
    return (Exists(contracts.filter(nodes=OuterRef(node_ref)))
            | Exists(contracts.filter(racks=OuterRef(rack_ref)))
            | Exists(contracts.filter(sites=OuterRef(site_ref))))


def contracts_covering_node(node, day=None, kinds=None):
    """Active contracts that list the node, its rack or its site."""
    match = Q(nodes=node) | Q(sites=node.site_id)
    if node.rack_id:
        match |= Q(racks=node.rack_id)
    return active_contracts(day, kinds).filter(pk__in=Contract.objects.filter(match).values("pk"))


def contracts_covering_gpu(gpu, day=None, kinds=None):
    """Active contracts that list the GPU or (for an installed GPU) its node, rack or site."""
    match = Q(gpus=gpu)
    if gpu.node_id:
        node = gpu.node
        match |= Q(nodes=node.pk) | Q(sites=node.site_id)
        if node.rack_id:
            match |= Q(racks=node.rack_id)
    return active_contracts(day, kinds).filter(pk__in=Contract.objects.filter(match).values("pk"))


def nodes_covered_by(contracts):
    """``{contract_id: {node_id, ...}}``: the nodes each contract covers, listed directly or through a
    rack or site. Three queries, whatever the number of contracts."""
    ids = [c.pk for c in contracts]
    covered = defaultdict(set)
    through = {"nodes": "node_id", "racks": "rack__nodes", "sites": "site__nodes"}
    for relation, node_field in through.items():
        rows = getattr(Contract, relation).through.objects.filter(contract_id__in=ids)
        for contract_id, node_id in rows.values_list("contract_id", node_field):
            if node_id is not None:
                covered[contract_id].add(node_id)
    return covered


def uncovered_nodes(day=None):
    """In-service nodes with no active support contract covering them, or past their warranty, with the
    ``reason`` (one of ``NO_SUPPORT``, ``WARRANTY_ENDED``, ``BOTH``) annotated. One query."""
    day = day or timezone.localdate()
    support = active_contracts(day, [Contract.Kind.SUPPORT])
    warranty_ended = Q(warranty_end__lt=day)
    return (
        Node.objects.filter(state=LifecycleState.IN_SERVICE)
        .annotate(supported=Case(When(_node_coverage(support), then=Value(True)), default=Value(False),
                                 output_field=BooleanField()))
        .filter(Q(supported=False) | warranty_ended)
        .annotate(reason=Case(
            When(Q(supported=False) & warranty_ended, then=Value(BOTH)),
            When(supported=False, then=Value(NO_SUPPORT)),
            default=Value(WARRANTY_ENDED), output_field=CharField(),
        ))
        .select_related("site", "rack")
        .order_by("site__name", "hostname")
    )


def rented_nodes(day=None):
    """Nodes an active rental contract covers on ``day`` (today by default), annotated with ``rental_end``: the last
    day a rental covering it runs (the latest end; None when one is open-ended). A lazy queryset: the capacity model
    (``inventory.capacity``, registered as its rental source) reads it as a subquery of its one query."""
    rentals = active_contracts(day, [Contract.Kind.RENTAL])
    covering = rentals.filter(Q(nodes=OuterRef("pk")) | Q(racks=OuterRef("rack_id")) | Q(sites=OuterRef("site_id")))
    last = covering.order_by(F("end").desc(nulls_first=True)).values("end")[:1]
    return Node.objects.filter(_node_coverage(rentals)).annotate(rental_end=Subquery(last))


def purchase_conflicts(contract, node_ids, gpu_ids, kind=None):
    """Why ``contract`` (saved or not) may not list these nodes and GPUs: ``{"nodes": [msg], "gpus": [msg]}``, one
    message per other contract, empty when nothing conflicts. Two queries whatever the number of assets.

    An asset is bought once: a node or GPU may not be listed by two *purchase* contracts, whatever their dates.
    Support, rental and expansion contracts may overlap freely, with each other and with the purchase (a node
    can be bought, under support and part of an expansion at once), so only a purchase is checked. ``kind``
    is the kind being saved (a form's or request's, before it is on ``contract``); ``contract.kind`` by default.
    Only what the contracts list directly is compared: a purchase that covers a site or rack covers whatever
    is in it, later deliveries included, so it does not count as buying each of them."""
    if (kind or contract.kind) != Contract.Kind.PURCHASE:
        return {}
    others = Contract.objects.filter(kind=Contract.Kind.PURCHASE)
    if contract.pk:
        others = others.exclude(pk=contract.pk)
    errors = {}
    for field, model, ids, label in (("nodes", Node, node_ids, "hostname"), ("gpus", GPU, gpu_ids, "uuid")):
        if not ids:
            continue
        through = getattr(Contract, field).through
        column = f"{model._meta.model_name}_id"
        rows = (through.objects.filter(contract__in=others, **{f"{column}__in": list(ids)})
                .values_list("contract__vendor", "contract__reference", f"{model._meta.model_name}__{label}")
                .order_by("contract__vendor", "contract__reference", f"{model._meta.model_name}__{label}"))
        taken = defaultdict(list)
        for vendor, reference, name in rows:
            taken[f"{vendor} {reference}"].append(name)
        errors.update({field: [
            f"Already bought under the purchase contract {other}: {', '.join(names)}. An asset is bought once; "
            "cover it with a support, rental or expansion contract instead." for other, names in taken.items()
        ]} if taken else {})
    return errors
