"""A capacity plan's bill of materials derived from one of its scenarios (build, expand or hybrid).

``derive(plan, kind)`` turns the scenario of the plan's analysis (``planning.plans.analysis``) into lines; ``fill``
writes them into a draft plan in place of its lines. The lines price exactly what the scenario's capex prices
(``planning.plans.scenarios``), so the bill's total is the scenario's capex (to the cent of each unit price):

- *Nodes*: the scenario's node count × the plan's node model at the node price the analysis uses. The
  catalog prices a node with its GPUs (``NodeModel.list_price``) and so does the scenario, so the GPUs' line
  (the nodes' GPU model: as installed in such nodes, else the plan's workloads') costs nothing: it is there for
  the order, whose deliveries record each GPU by serial and UUID.
- *Network*: leaf switches for the new nodes' fabric ports: nodes × ports per node (as the site's nodes of
  this model are cabled, else one port per GPU) / the ports a switch gives to nodes (the site's switch model
  on that fabric: ports − uplinks; else a 64-port switch with half its ports up), rounded up. Priced at the
  scenario's network share of the node price (``NETWORK_SHARE_OF_NODE_PRICE``), switches with their cables
  and optics.
- *Storage*: one line at the storage share of the node price (``STORAGE_SHARE_OF_NODE_PRICE``) that names what
  the planned workloads need (``planning.sizing.sizing``): peak read throughput of the workloads running at the same
  time, their checkpoint writes, and capacity for their data and one checkpoint each.
- *Facility* (build only): the new cluster's IT load in kW × ``BUILD_COST_PER_KW``.

Each line's item is named by its catalog model (the node or GPU model), else by a short name (the switch model,
"Storage for the planned workloads"); how it was derived is its ``note``. A price a rule derived (the shares, the
cost per kW, a catalog list price) is flagged ``price_estimated`` until someone confirms it (``confirm_price``).

Renting buys nothing, so the rent scenario has no bill of materials; the hybrid scenario's is its owned nodes
(what it rents is a rental contract).
"""

import math
from collections import Counter
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from inventory.models import GPU, Fabric, FabricAttachment, GPUModel, LifecycleState, Switch

from ..sizing import sizing
from . import analysis, scenarios, workflow
from .models import CapacityPlan, PlanItem

BUYABLE = ("expand", "build", "hybrid")  # the scenarios that buy hardware
DESCRIPTION_LENGTH = PlanItem._meta.get_field("description").max_length
# A leaf switch when the site records none: 64 ports (a QM9700-class NDR switch), half of them up to the
# spine (non-blocking).
DEFAULT_SWITCH_PORTS = 64
DEFAULT_SWITCH_UPLINKS = 32
CENT = Decimal("0.01")


@dataclass
class Line:
    quantity: int
    unit_cost: Decimal
    description: str  # how the quantity and price were derived: the line's note
    label: str  # short: Nodes, Leaf switches, Storage, Facility
    node_model: object = None
    gpu_model: object = None
    name: str = ""  # the item's name where no catalog model names it (a switch model), never a sentence
    estimated: bool = True  # priced by a rule (a share, a cost per kW), not a quote: to be confirmed

    @property
    def total(self):
        return self.quantity * self.unit_cost

    @property
    def item(self):
        return str(self.node_model or self.gpu_model or self.name or self.label)


@dataclass
class Bill:
    kind: str
    label: str
    capex: float  # the scenario's capex, which the lines add up to
    currency: str
    lines: list
    notes: list = field(default_factory=list)

    @property
    def total(self):
        return sum((line.total for line in self.lines), Decimal(0))

    @property
    def estimated(self):
        """How much of the total is estimated prices."""
        return sum((line.total for line in self.lines if line.estimated), Decimal(0))


def money(value):
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def rate(gbs):
    """A throughput in GB/s, or MB/s when under 1 GB/s (tokenised text is read at a few MB/s)."""
    return f"{gbs:,.1f} GB/s" if gbs >= 1 else f"{gbs * 1000:,.1f} MB/s"


def _fit(text):
    """Descriptions are stored in a 200-character field: cut longer ones visibly rather than fail."""
    return text if len(text) <= DESCRIPTION_LENGTH else text[:DESCRIPTION_LENGTH - 1] + "…"


def check_kind(kind):
    if kind == "rent":
        raise ValidationError("Renting buys nothing: the rent scenario has no bill of materials. Choose expand, "
                              "build or hybrid.")
    if kind not in BUYABLE:
        raise ValidationError(f"Unknown scenario {kind!r}: choose expand, build or hybrid.")


def carried_gpu_model(node_model, plan):
    """The GPU model the new nodes carry: the one most often installed in nodes of ``node_model``, else the one
    most of the plan's workloads are sized for (None when neither says)."""
    for rows in (GPU.objects.filter(node__node_model=node_model).values("gpu_model"),
                 plan.workloads.values("gpu_model")):
        top = rows.annotate(n=Count("pk")).order_by("-n", "gpu_model").first()
        if top:
            return GPUModel.objects.get(pk=top["gpu_model"])
    return None


@dataclass
class NetworkLayout:
    switch_model: str
    switch_ports: int
    downlinks: int  # ports a switch gives to nodes
    ports_per_node: int
    fabric: str  # where the layout comes from, for the description
    ports_source: str


def network_layout(site, node_model, gpus_per_node):
    """How new nodes of ``node_model`` are cabled and switched, from the site's fabric where it records one."""
    live = ~Q(node__state=LifecycleState.RETIRED)
    attachments = FabricAttachment.objects.filter(live, node__node_model=node_model)
    if site is not None and attachments.filter(node__site=site).exists():
        attachments = attachments.filter(node__site=site)
    # The fabric with the most ports per node is the compute fabric (8 × InfiniBand against 1-2 Ethernet).
    per_fabric = sorted(attachments.values("fabric").annotate(nodes=Count("node", distinct=True),
                                                              ports=Sum("ports")),
                        key=lambda row: (-row["ports"] / row["nodes"], row["fabric"]))
    fabric = None
    if per_fabric:
        fabric = Fabric.objects.get(pk=per_fabric[0]["fabric"])
        ports_per_node = math.ceil(per_fabric[0]["ports"] / per_fabric[0]["nodes"] - 1e-9)
        ports_source = "as cabled now"
    else:
        ports_per_node, ports_source = gpus_per_node, "one per GPU"
        if site is not None:  # the site's high-speed fabric, InfiniBand before RoCE before Ethernet
            rank = {Fabric.Kind.INFINIBAND: 0, Fabric.Kind.ROCE: 1, Fabric.Kind.ETHERNET: 2}
            fabrics = Fabric.objects.filter(Q(site=site) | Q(switches__site=site)).distinct()
            fabric = min(fabrics, key=lambda f: (rank.get(f.kind, 3), f.name), default=None)
    switches = Switch.objects.filter(fabric=fabric) if fabric else Switch.objects.none()
    if site is not None and switches.filter(site=site).exists():
        switches = switches.filter(site=site)
    common = (switches.values("model", "ports", "uplinks").annotate(n=Count("pk"))
              .order_by("-n", "model", "-ports").first())
    if common and common["ports"] > common["uplinks"]:
        name = common["model"] or f"{common['ports']}-port switch"
        return NetworkLayout(name, common["ports"], common["ports"] - common["uplinks"], ports_per_node,
                             f"as on {fabric}", ports_source)
    return NetworkLayout(f"{DEFAULT_SWITCH_PORTS}-port switch", DEFAULT_SWITCH_PORTS,
                         DEFAULT_SWITCH_PORTS - DEFAULT_SWITCH_UPLINKS, ports_per_node, "none recorded",
                         ports_source)


@dataclass
class StorageNeed:
    workloads: int
    read_gbs: float  # peak of the workloads running at the same time
    write_gbs: float  # checkpoint writes at that peak
    concurrent: int
    capacity_tb: float  # data + one checkpoint each, all workloads


def storage_need(an):
    """What the plan's sized workloads need from storage at their busiest month."""
    # The workloads as the analysis sized them; one that cannot be sized the analysis names in its notes.
    sized = [(range(demand.index, demand.index + demand.months), demand.sizing)
             for demand in an.workloads if demand.sizing is not None]
    if not sized:
        return StorageNeed(0, 0.0, 0.0, 0, 0.0)
    busiest = Counter()
    for running, result in sized:
        for month in running:
            busiest[month] += result["storage_read_gbs"]
    peak_month = max(busiest, key=lambda m: (busiest[m], -m))
    at_peak = [result for running, result in sized if peak_month in running]
    capacity = 0.0
    for _, result in sized:
        w = result.workload
        data_tb = w.dataset_tb if w.dataset_tb else w.tokens * sizing.DEFAULT_BYTES_PER_TOKEN / 1e12
        capacity += data_tb + result["checkpoint_size_gb"] / 1000
    return StorageNeed(len(sized), busiest[peak_month], sum(r["checkpoint_write_gbs"] for r in at_peak),
                       len(at_peak), capacity)


def derive(plan, kind=None, today=None, an=None):
    """The bill of materials of the plan's ``kind`` scenario (default: the recommended one), as ``Bill``.
    Raises ``ValidationError`` with the reason when there is nothing to buy or it cannot be priced."""
    if kind is not None:
        check_kind(kind)
    an = an or analysis.analyse(plan, today)
    if kind is None:
        kind = an.recommendation.kind
        if kind is None:
            raise ValidationError(f"{an.recommendation.headline[:-1]}: the recommendation buys nothing.")
        check_kind(kind)
    scenario = next(s for s in an.scenarios if s.kind == kind)
    if not scenario.nodes and kind == "hybrid" and any(s.nodes for s in an.scenarios):
        raise ValidationError("The hybrid scenario owns no nodes: renting all the shortfall is cheapest, so there "
                              "is nothing to buy.")
    if not scenario.nodes:
        raise ValidationError(f"The {kind} scenario adds no nodes: demand fits the fleet's capacity within the "
                              "horizon, so there is nothing to buy.")
    if not scenario.feasible:
        raise ValidationError(f"The {kind} scenario is not possible: {' '.join(scenario.notes)}")
    node_model, _ = analysis.node_model_for(plan)
    if node_model is None:
        raise ValidationError("No node model is known: set the node to buy on the plan.")
    a = an.assumptions
    if not a.node_price:
        raise ValidationError("No node price is known: set the node price on the plan.")
    _, price_source = analysis.node_price_for(plan, node_model)
    # A catalog list price is indicative; the plan's own price and an earlier order's are prices someone stated.
    node_estimated = price_source.endswith("list price")
    currency = settings.COST_CURRENCY
    n = scenario.nodes
    price = money(a.node_price)
    peak = max(scenarios.shortfall_gpus(an.demand, an.capacity.hours, a.target_utilization))
    gpu_model = carried_gpu_model(node_model, plan)
    gpus = f"{a.gpus_per_node} × {gpu_model}" if gpu_model else f"{a.gpus_per_node} GPUs"
    lines = [Line(n, price, _fit(
        f"{n} nodes: peak shortfall {peak:,.1f} GPUs at {a.target_utilization:.0%} utilization / "
        f"{a.gpus_per_node} per node, rounded up; {price:,.0f} {currency} each ({price_source}), "
        f"{gpus} included"), "Nodes", node_model=node_model, estimated=node_estimated)]
    if gpu_model:  # priced in the nodes; a line of its own so that an order built from the bill can receive them
        lines.append(Line(n * a.gpus_per_node, money(0), _fit(
            f"The GPUs of the {n} nodes ({n} × {a.gpus_per_node}): in the node price above, listed so that "
            "deliveries record each GPU's serial and UUID"), "GPUs", gpu_model=gpu_model, estimated=False))

    site = analysis.site_for(plan)
    net = network_layout(site, node_model, a.gpus_per_node)
    ports = n * net.ports_per_node
    switches = math.ceil(ports / net.downlinks)
    network = n * a.node_price * a.network_share
    lines.append(Line(switches, money(network / switches), _fit(
        f"Leaf switch {net.switch_model}, {net.switch_ports} ports ({net.downlinks} to nodes; {net.fabric}): "
        f"{n} nodes × {net.ports_per_node} ports ({net.ports_source}) = {ports} / {net.downlinks} → {switches}; "
        f"{a.network_share:.0%} of the node price with cables and optics"), "Leaf switches",
        name=f"Leaf switch {net.switch_model}"))

    need = storage_need(an)
    if need.workloads:
        sized = (f"{rate(need.read_gbs)} read at peak ({need.concurrent} workload(s) at once), "
                 f"{rate(need.write_gbs)} checkpoint writes, {need.capacity_tb:,.1f} TB for data and a "
                 "checkpoint each")
    else:
        sized = "no sized workloads to name a throughput or capacity"
    lines.append(Line(1, money(n * a.node_price * a.storage_share), _fit(
        f"Storage for the planned workloads: {sized}; at {a.storage_share:.0%} of the node price per node"),
        "Storage", name="Storage for the planned workloads"))

    notes = [f"Capex of the {kind} scenario: {scenario.capex:,.2f} {currency}.", *scenario.notes]
    if kind == "build":
        kw = n * a.node_kw
        lines.append(Line(1, money(kw * a.build_cost_per_kw), _fit(
            f"New cluster facility (power, cooling, space): {n} nodes × {a.node_kw:g} kW = {kw:,.1f} kW of IT "
            f"load × {a.build_cost_per_kw:,.0f} {currency} per kW"), "Facility",
            name="New cluster facility (power, cooling, space)"))
    if kind == "hybrid" and scenario.rental:
        notes.append(f"What it rents until the nodes arrive and at the peak above them ({scenario.rental:,.0f} "
                     f"{currency}) is a rental contract, not part of the bill of materials.")
    if net.fabric == "none recorded":
        notes.append(f"No switch is recorded on the site's fabric: the switch line assumes a {DEFAULT_SWITCH_PORTS}"
                     f"-port leaf switch with {DEFAULT_SWITCH_UPLINKS} ports up to the spine.")
    return Bill(kind, scenario.label, scenario.capex, currency, lines, notes)


@transaction.atomic
def fill(plan, kind=None, today=None):
    """Replace every line of the draft ``plan``'s bill of materials (hand-entered ones too: the bill is then
    the scenario's, and the old lines stay in the history) with the ``kind`` scenario's. Returns the ``Bill``
    and how many lines were replaced."""
    if kind is not None:
        check_kind(kind)  # before the plan is locked and analysed
    plan = CapacityPlan.objects.select_for_update().get(pk=plan.pk)
    workflow.check_editable(plan)
    bill = derive(plan, kind, today)
    reason = f"Bill of materials from the {bill.kind} scenario"
    replaced = 0
    for item in plan.items.all():
        item._change_reason = reason
        item.delete()
        replaced += 1
    for line in bill.lines:
        item = PlanItem(plan=plan, node_model=line.node_model, gpu_model=line.gpu_model,
                        description="" if line.node_model or line.gpu_model else line.item, note=line.description,
                        quantity=line.quantity, unit_cost=line.unit_cost, currency=bill.currency,
                        price_estimated=line.estimated)
        item.full_clean()
        item._change_reason = reason
        item.save()
    return bill, replaced


@transaction.atomic
def confirm_price(item, user, unit_cost=None):
    """``user`` confirms the estimated unit cost of ``item`` (a quote in hand), at ``unit_cost`` where given (only
    on a draft plan: a submitted plan's figures are what was approved). Returns the line as stored after it."""
    item = PlanItem.objects.select_for_update().select_related("plan").get(pk=item.pk)
    if not user.has_perm("planning.confirm_bom_price", item):
        raise PermissionDenied("Only those who edit plans, or procurement, confirm a price.")
    if not item.price_estimated:
        by = f" by {item.price_confirmed_by} on {item.price_confirmed_at:%Y-%m-%d}" if item.price_confirmed_at else ""
        raise ValidationError(f"The price of {item.what} is not an estimate: confirmed{by} or entered by hand.")
    if unit_cost is not None and unit_cost != item.unit_cost:
        workflow.check_editable(item.plan)
        item.unit_cost = unit_cost
    item.price_estimated, item.price_confirmed_by, item.price_confirmed_at = False, user, timezone.now()
    item._change_reason = f"Price confirmed at {item.unit_cost:,.2f} {item.currency}"
    item.save()
    return item
