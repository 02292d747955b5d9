"""Cost per GPU-hour, per node and per site, from the contracts.

Hours per month: ``HOURS_PER_MONTH`` = 730 (8,760 h / 12). Amounts are in the contracts' currency; the
portal assumes one currency for its figures (``settings.COST_CURRENCY``).

Owned nodes (covered by an active purchase or expansion contract), per GPU-hour, the sum of:

- *Amortisation*: for each purchase or expansion contract covering the node, while its depreciation
  runs (``start`` + ``depreciation_months``), ``one_off_cost / (depreciation_months × 730 × GPUs the
  contract covers)``. Example: 4 DGX H100 (32 GPUs) bought for 1,200,000 over 48 months:
  1,200,000 / (48 × 730 × 32) = 1.0702 per GPU-hour.
- *Power*: the node's maximum power shared by its GPUs (a GPU's TDP where the node model gives none),
  times ``settings.DEFAULT_PUE`` and ``settings.ENERGY_PRICE_PER_KWH``. Example: a 10.2 kW node with 8
  GPUs at PUE 1.3 and 0.20 per kWh: 10.2 / 8 × 1.3 × 0.20 = 0.3315 per GPU-hour.
- *Support*: for each active support contract covering the node, ``monthly_cost / (730 × GPUs the
  contract covers)``. Example: 29,200 a month for 80 GPUs: 29,200 / (730 × 80) = 0.50 per GPU-hour.

So that DGX costs 1.0702 + 0.3315 + 0.50 = 1.9017 per GPU-hour.

Rented nodes (covered by an active rental contract): the contract's ``gpu_hour_cost`` when set, else
``monthly_cost / (730 × rented_gpus)``. Example: 64 H100 for 98,112 a month: 98,112 / (730 × 64) = 2.10.
Power and support are the provider's. A node covered by neither a purchase nor a rental has no known
cost and is left out (callers fall back to ``settings.IDLE_GPU_HOUR_COST``).
"""

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, F, Q
from django.utils import timezone

from inventory.models import GPU, LifecycleState, Node

from .coverage import active_contracts, active_contracts_list, nodes_covered_by
from .models import Contract

HOURS_PER_MONTH = Decimal(730)
PLACES = Decimal("0.0001")
OWNED_KINDS = (Contract.Kind.PURCHASE, Contract.Kind.EXPANSION)


@dataclass
class Component:
    """One part of a node's cost per GPU-hour: what it is, the contract behind it (None for power)."""

    label: str
    amount: Decimal
    contract: Contract | None = None


def _decimal(value):
    return Decimal(str(value))


def depreciating(contract, day):
    """True while the depreciation period runs: from the start for ``depreciation_months`` months."""
    months = (day.year - contract.start.year) * 12 + day.month - contract.start.month - (day.day < contract.start.day)
    return months < contract.depreciation_months


def amortised_gpu_hour_cost(contract, gpus):
    """One-off cost per GPU-hour over the depreciation period, shared by ``gpus`` GPUs."""
    return contract.one_off_cost / (contract.depreciation_months * HOURS_PER_MONTH * gpus)


def monthly_gpu_hour_cost(monthly_cost, gpus):
    return monthly_cost / (HOURS_PER_MONTH * gpus)


def rental_gpu_hour_cost(contract):
    """A rental's cost per GPU-hour: its rate, else its monthly cost over the rented GPUs; None if neither."""
    if contract.gpu_hour_cost:
        return contract.gpu_hour_cost
    if contract.monthly_cost and contract.rented_gpus:
        return monthly_gpu_hour_cost(contract.monthly_cost, contract.rented_gpus)
    return None


def rental_rate(day=None):
    """The rental rate per GPU-hour: the mean rate of the active rental contracts that give one, else
    ``settings.RENTAL_GPU_HOUR_COST``. Returns ``(rate as a float, those contracts)``; no contracts: the setting."""
    day = day or timezone.localdate()
    rated = [(c, rate) for c in active_contracts(day, [Contract.Kind.RENTAL]) if (rate := rental_gpu_hour_cost(c))]
    if rated:
        return float(sum(rate for _, rate in rated) / len(rated)), [c for c, _ in rated]
    return settings.RENTAL_GPU_HOUR_COST, []


def power_gpu_hour_cost(max_power_w, gpus, gpu_tdp_w=0):
    """Energy per GPU-hour: node power shared by its GPUs (or one GPU's TDP) × PUE × price per kWh."""
    watts = Decimal(max_power_w) / gpus if max_power_w else Decimal(gpu_tdp_w or 0)
    return watts / 1000 * _decimal(settings.DEFAULT_PUE) * _decimal(settings.ENERGY_PRICE_PER_KWH)


def _fleet(node_ids=None):
    """{node_id: row} for nodes not retired: their GPUs (not retired), power, site. One query."""
    nodes = Node.objects.exclude(state=LifecycleState.RETIRED)
    if node_ids is not None:
        nodes = nodes.filter(pk__in=node_ids)
    rows = nodes.values("pk", "site_id", max_power_w=F("node_model__max_power_w")).annotate(
        gpus=Count("gpus", filter=~Q(gpus__state=LifecycleState.RETIRED)),
    )
    return {row["pk"]: row for row in rows if row["gpus"]}


def cost_components(day=None, node_ids=None):
    """{node_id: [Component, ...]} for the nodes with a known cost (see the module's docstring). A constant
    number of queries."""
    day = day or timezone.localdate()
    contracts = active_contracts_list(day, [*OWNED_KINDS, Contract.Kind.RENTAL, Contract.Kind.SUPPORT])
    if not contracts:  # no cost known: spare the fleet query (every utilization figure asks)
        return {}
    covered = nodes_covered_by(contracts)
    fleet = _fleet()
    gpus_of = {c.pk: sum(fleet[n]["gpus"] for n in covered[c.pk] if n in fleet) for c in contracts}
    wanted = set(fleet) if node_ids is None else set(node_ids) & set(fleet)
    parts = defaultdict(list)
    by_kind = defaultdict(list)
    for contract in contracts:
        by_kind[contract.kind].append(contract)

    for contract in by_kind[Contract.Kind.RENTAL]:
        rate = rental_gpu_hour_cost(contract)
        for node_id in covered[contract.pk] & wanted:
            if rate is not None:
                parts[node_id].append(Component("Rental", rate, contract))
    rented = set(parts)
    owned = set()
    for kind in OWNED_KINDS:
        for contract in by_kind[kind]:
            nodes = (covered[contract.pk] & wanted) - rented
            owned |= nodes
            if not (depreciating(contract, day) and gpus_of[contract.pk]):
                continue  # fully amortised: the node still costs power and support
            amount = amortised_gpu_hour_cost(contract, gpus_of[contract.pk])
            for node_id in nodes:
                parts[node_id].append(Component("Amortisation", amount, contract))
    for node_id in sorted(owned):
        row = fleet[node_id]
        parts[node_id].append(Component("Power", power_gpu_hour_cost(row["max_power_w"], row["gpus"])))
    for contract in by_kind[Contract.Kind.SUPPORT]:
        if not (contract.monthly_cost and gpus_of[contract.pk]):
            continue
        amount = monthly_gpu_hour_cost(contract.monthly_cost, gpus_of[contract.pk])
        for node_id in covered[contract.pk] & owned:
            parts[node_id].append(Component("Support", amount, contract))
    return dict(parts)


def gpu_hour_cost_by_node(day=None):
    """{node_id: cost per GPU-hour (Decimal, 4 places)} for every node with a known cost."""
    return {node_id: sum(p.amount for p in parts).quantize(PLACES)
            for node_id, parts in cost_components(day).items()}


def gpu_hour_cost_by_site(day=None):
    """{site_id: cost per GPU-hour}: the mean over the site's nodes with a known cost, weighted by their GPUs.
    Example: 2 nodes of 8 GPUs at 1.90 and 1 node of 4 GPUs at 2.50: (16 × 1.90 + 4 × 2.50) / 20 = 2.02."""
    by_node = gpu_hour_cost_by_node(day)
    fleet = _fleet(list(by_node))
    cost, gpus = defaultdict(Decimal), defaultdict(int)
    for node_id, amount in by_node.items():
        row = fleet[node_id]
        cost[row["site_id"]] += amount * row["gpus"]
        gpus[row["site_id"]] += row["gpus"]
    return {site_id: (cost[site_id] / gpus[site_id]).quantize(PLACES) for site_id in cost}


def owned_gpu_hour_cost(gpu_model, day=None):
    """The cost per GPU-hour of the owned nodes (not rented) that carry GPUs of the model named ``gpu_model``,
    weighted by their GPUs, and the contracts behind it: ``(Decimal, [Contract])``, or ``(None, [])`` when no such
    node has a known cost. Example: one node of 8 GPUs at 1.90 and one of 4 at 2.50: (8 × 1.90 + 4 × 2.50) / 12."""
    nodes = (GPU.objects.filter(gpu_model__name=gpu_model, node__isnull=False).exclude(state=LifecycleState.RETIRED)
             .values_list("node_id", flat=True).distinct())
    owned = {node_id: parts for node_id, parts in cost_components(day, list(nodes)).items()
             if all(part.label != "Rental" for part in parts)}
    if not owned:
        return None, []
    gpus = {node_id: row["gpus"] for node_id, row in _fleet(list(owned)).items()}
    cost = sum(sum(p.amount for p in parts) * gpus[node_id] for node_id, parts in owned.items()) / sum(gpus.values())
    contracts = {p.contract.pk: p.contract for parts in owned.values() for p in parts if p.contract}
    return cost.quantize(PLACES), sorted(contracts.values(), key=str)


def node_cost_breakdown(node, day=None):
    """``{"components": [Component], "total": Decimal}`` for one node, or None when its cost is unknown."""
    parts = cost_components(day, [node.pk]).get(node.pk)
    if not parts:
        return None
    return {"components": parts, "total": sum(p.amount for p in parts).quantize(PLACES)}


def contract_gpu_hour_cost(contract, day=None):
    """What one contract adds per GPU-hour to the GPUs it covers (rental: its rate); None if nothing."""
    day = day or timezone.localdate()
    if contract.kind == Contract.Kind.RENTAL:
        rate = rental_gpu_hour_cost(contract)
        return rate.quantize(PLACES) if rate is not None else None
    gpus = sum(row["gpus"] for row in _fleet(nodes_covered_by([contract])[contract.pk]).values())
    if not gpus:
        return None
    if contract.kind in OWNED_KINDS and contract.one_off_cost:
        return amortised_gpu_hour_cost(contract, gpus).quantize(PLACES)
    if contract.monthly_cost:
        return monthly_gpu_hour_cost(contract.monthly_cost, gpus).quantize(PLACES)
    return None


def node_gpu_hour_costs(day=None):
    """The provider registered with ``inventory.costs``: floats, as the utilization figures use them."""
    return {node_id: float(cost) for node_id, cost in gpu_hour_cost_by_node(day).items()}
