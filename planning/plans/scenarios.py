"""Build, expand, rent or both: what each way of meeting a plan's demand costs and when it delivers.

Plain Python over plain numbers (``Assumptions``, demand and baseline capacity in GPU-hours per month);
``planning.plans.analysis`` gathers those from the database. Money is in the portal's currency; a month is 730 h.

Sizing the addition
    GPUs needed in a month = demand / (730 h × target utilization). The shortfall is what the baseline lacks;
    owned scenarios buy whole nodes for the peak shortfall of the months from their arrival on (a peak over
    before they arrive does not size hardware); renting takes whole nodes month by month for that month's
    shortfall.

The scenarios
    - *Expand*: the nodes join an existing site after ``lead_expand`` months. Capex: nodes × node price
      × (1 + network share + storage share). Opex from arrival: energy, support, space (racks × the site's
      rack cost). Infeasible when the added power exceeds the site's headroom.
    - *Build*: a new cluster after ``lead_build`` months. Capex as for expanding plus the facility
      (``build_cost_per_kw`` × the nodes' IT load in kW). Opex: energy at the default PUE and price, support;
      space is in the facility cost.
    - *Rent*: from ``lead_rent`` months on, the month's shortfall in whole nodes at the rental rate per
      GPU-hour. No capex; power and support are the provider's.
    - *Hybrid: own the base, rent the peak*: own ``k`` nodes (expanding the site, after ``lead_expand`` months)
      and rent, from ``lead_rent`` on, the month's shortfall above them in whole nodes (all of it before they
      arrive). ``k`` runs from 0 (renting alone) to the peak's nodes (expanding, renting only until the nodes
      arrive) and the cheapest wins: horizon cost + unmet GPU-hours × ``unmet_rate``, ties to fewer nodes; no
      more nodes than the site's power left allows. With an unknown rental rate the trade-off has no price:
      it owns the peak's nodes.

Costs
    - Energy per node-month: node max power (kW) × load × 730 h × PUE × price per kWh, where load =
      ``idle_power_share`` + (1 − ``idle_power_share``) × the added capacity's utilization that month.
    - Support per month: capex × ``support_share_per_year`` / 12. Space: racks × rack cost per month, a rack
      holding as many nodes as both its height (``rack_units``) and power (``rack_power_kw``) allow.
    - Capex is paid when ordered (month 1: the cash chart) and depreciated over ``depreciation_months`` from
      arrival: the horizon's *cost* counts only the depreciation inside it, so owned hardware keeps the value
      it has left at the end.
    - *Cost per useful GPU-hour*: the horizon's cost / the demand GPU-hours the addition serves (served with
      the addition − served by the baseline alone). Its utilization is that over the added GPU-hours.

Utilization of the added capacity
    Demand fills the baseline first, then the owned nodes, then the rented ones. The owned nodes' utilization
    is the GPU-hours of demand they serve / the GPU-hours they could give from arrival to the horizon's end;
    the rented nodes' likewise over the GPU-hours rented. Owned nodes used less than ``min_utilization`` over
    the horizon (a peak of a few months) get a note, and when the recommended option buys them the
    recommendation says so in its reasons and its headline: hardware sized to a short peak is never
    recommended silently.

Meeting demand
    A month's demand is served up to capacity × the target utilization: it is met when capacity × target ≥ demand
    ("meets demand from": the first month from which every later month is met), and what is above is unserved
    (Σ max(0, demand − capacity × target)). Which option to take, and the words for it: ``decision``.
    An unknown rental rate (None) leaves the cost of a scenario that rents unknown, never 0.
"""

import math
from dataclasses import dataclass, field
from datetime import date

from .forecast import add_months

HOURS = 730
KINDS = {"expand": "Expand an existing site", "build": "Build a new cluster", "rent": "Rent",
         "hybrid": "Hybrid: own the base, rent the peak"}
SCENARIO_KINDS = list(KINDS.items())  # as choices, for the API schema


@dataclass
class Assumptions:
    horizon: int
    gpus_per_node: int
    node_kw: float
    node_height_u: int
    node_price: float
    rental_rate: float | None  # per GPU-hour; None: unknown
    target_utilization: float  # 0-1
    lead_build: int
    lead_expand: int
    lead_rent: int
    site_pue: float
    site_energy_price: float
    site_rack_cost: float
    site_power_headroom_kw: float | None  # None: unknown
    build_pue: float
    build_energy_price: float
    build_cost_per_kw: float
    network_share: float
    storage_share: float
    support_share_per_year: float
    depreciation_months: int = 48
    idle_power_share: float = 0.3
    rack_power_kw: float = 40.0
    rack_units: int = 42
    first_month: date | None = None  # the plan's first month: the reasons then name calendar months
    min_utilization: float = 0.3  # 0-1: owned nodes used less over the horizon are flagged
    unmet_cost: float | None = None  # the plan's stated cost of an unserved GPU-hour; None: the rental rate's
    unmet_rate_source: str = "the rental rate"


@dataclass
class Scenario:
    kind: str
    nodes: int  # owned nodes added
    capacity: list  # GPU-hours per month, baseline included
    added_gpus: list  # owned and rented GPUs added per month
    cash: list  # spend per month (capex when ordered)
    cost: list  # cost per month (capex as depreciation)
    capex: float
    energy: float
    support: float
    space: float
    rental: float | None  # None: it rents at an unknown rate
    lead_months: int
    met_from: int | None  # 1-based month, None: not within the horizon
    unmet_hours: float
    useful_hours: float
    added_hours: float
    owned_from: int | None = None  # 1-based month the owned nodes first serve; None: none within the horizon
    owned_hours: float = 0.0  # GPU-hours the owned nodes could give from arrival to the horizon's end
    owned_useful_hours: float = 0.0  # of which demand fills
    rented_hours: float = 0.0
    rented_useful_hours: float = 0.0
    rented_gpus: list = field(default_factory=list)  # GPUs rented per month
    feasible: bool = True
    underused: bool = False  # owned nodes used less than ``Assumptions.min_utilization`` (set by ``scenarios``)
    notes: list = field(default_factory=list)

    @property
    def label(self):
        return KINDS[self.kind]

    @property
    def total_cost(self):
        """None when it rents at an unknown rate: an unknown cost is not 0."""
        return sum(self.cost) if self.rental is not None else None

    @property
    def total_cash(self):
        return sum(self.cash) if self.rental is not None else None

    @property
    def cost_per_useful_hour(self):
        return self.total_cost / self.useful_hours if self.useful_hours and self.total_cost is not None else None

    @property
    def serves_demand(self):
        return self.unmet_hours < 1

    @property
    def available_from(self):
        """The first 1-based month it can add capacity (it may lie after the horizon)."""
        return self.lead_months + 1

    @property
    def utilization(self):
        return self.useful_hours / self.added_hours if self.added_hours else None

    @property
    def owned_utilization(self):
        """Share of the owned nodes' GPU-hours, from arrival to the horizon's end, that demand fills."""
        return self.owned_useful_hours / self.owned_hours if self.owned_hours else None

    @property
    def rented_utilization(self):
        return self.rented_useful_hours / self.rented_hours if self.rented_hours else None

    @property
    def peak_rented_gpus(self):
        return max(self.rented_gpus, default=0)

    @property
    def peak_added_gpus(self):
        """The most GPUs it adds in a month, owned and rented (0: none within the horizon)."""
        return max(self.added_gpus, default=0)


def gpus_needed(demand, target):
    return [d / (HOURS * target) for d in demand]


def shortfall_gpus(demand, baseline, target):
    """GPUs missing per month for demand to fill capacity to the target utilization."""
    return [max(0.0, need - base / HOURS) for need, base in zip(gpus_needed(demand, target), baseline, strict=True)]


def met_from(demand, capacity, target):
    """The first 1-based month from which capacity × target meets demand in every later month; None if never."""
    first = None
    for month, (d, c) in enumerate(zip(demand, capacity, strict=True), start=1):
        if c * target + 1e-6 >= d:
            first = first or month
        else:
            first = None
    return first


def served(demand, capacity, target=1.0):
    """GPU-hours of demand served: each month's up to its capacity × the target utilization (as "met" counts)."""
    return sum(min(d, c * target) for d, c in zip(demand, capacity, strict=True))


def unmet(demand, capacity, target=1.0):
    return sum(max(0.0, d - c * target) for d, c in zip(demand, capacity, strict=True))


def nodes_per_rack(a):
    return max(1, min(a.rack_units // max(1, a.node_height_u), int(a.rack_power_kw // a.node_kw) if a.node_kw else 99))


def _scenario(kind, demand, baseline, a, owned_nodes=0, arrival=None, rent_until=None, build=False):
    """One scenario: ``owned_nodes`` arriving after ``arrival`` months, and rented nodes for the shortfall
    from ``a.lead_rent`` until ``rent_until`` (1-based month, exclusive; None: no renting)."""
    months = len(demand)
    short = shortfall_gpus(demand, baseline, a.target_utilization)
    owned_gpus = owned_nodes * a.gpus_per_node
    capex = owned_nodes * a.node_price * (1 + a.network_share + a.storage_share)
    if build:
        capex += owned_nodes * a.node_kw * a.build_cost_per_kw
    pue, price = (a.build_pue, a.build_energy_price) if build else (a.site_pue, a.site_energy_price)
    racks = math.ceil(owned_nodes / nodes_per_rack(a)) if owned_nodes else 0
    capacity, added, rented, cash, cost = [], [], [], [], []
    t = a.target_utilization
    energy = support = space = rental = 0.0
    owned_hours = owned_useful = rented_hours = rented_useful = 0.0
    rented_gpu_months = 0
    for month in range(1, months + 1):
        base = baseline[month - 1]
        owned_now = owned_gpus if arrival is not None and month > arrival else 0
        rented_now = 0
        if rent_until is not None and a.lead_rent < month < rent_until:
            missing = max(0.0, short[month - 1] - owned_now)
            rented_now = math.ceil(missing / a.gpus_per_node - 1e-9) * a.gpus_per_node
            rented_gpu_months += rented_now
        with_owned = base + owned_now * HOURS
        cap = with_owned + rented_now * HOURS
        d = demand[month - 1]
        # Demand fills the baseline first, then the owned nodes, then the rented ones, each up to the target.
        by_owned, by_rented = min(d, with_owned * t) - min(d, base * t), min(d, cap * t) - min(d, with_owned * t)
        owned_hours, owned_useful = owned_hours + owned_now * HOURS, owned_useful + by_owned
        rented_hours, rented_useful = rented_hours + rented_now * HOURS, rented_useful + by_rented
        load = by_owned / (owned_now * HOURS) if owned_now else 0.0
        month_cash = capex if month == 1 else 0.0
        month_cost = capex / a.depreciation_months if owned_now else 0.0
        if owned_now:
            kwh = owned_nodes * a.node_kw * (a.idle_power_share + (1 - a.idle_power_share) * load) * HOURS * pue
            month_energy, month_support = kwh * price, capex * a.support_share_per_year / 12
            month_space = 0.0 if build else racks * a.site_rack_cost
            energy, support, space = energy + month_energy, support + month_support, space + month_space
            month_cash += month_energy + month_support + month_space
            month_cost += month_energy + month_support + month_space
        month_rental = rented_now * HOURS * (a.rental_rate or 0.0)  # the monthly lists leave an unknown rate out
        rental += month_rental
        cash.append(month_cash + month_rental)
        cost.append(month_cost + month_rental)
        capacity.append(cap)
        added.append(owned_now + rented_now)
        rented.append(rented_now)
    useful = served(demand, capacity, t) - served(demand, baseline, t)
    if a.rental_rate is None and rented_gpu_months:
        rental = None
    lead = {"expand": a.lead_expand, "build": a.lead_build, "rent": a.lead_rent,
            "hybrid": min(a.lead_rent, a.lead_expand) if owned_nodes else a.lead_rent}[kind]
    return Scenario(kind, owned_nodes, capacity, added, cash, cost, capex, energy, support, space, rental, lead,
                    met_from(demand, capacity, a.target_utilization),
                    unmet(demand, capacity, t), useful, sum(g * HOURS for g in added),
                    arrival + 1 if owned_hours else None, owned_hours, owned_useful, rented_hours, rented_useful,
                    rented)


def peak_nodes(demand, baseline, a, arrival=0):
    """Whole nodes for the peak shortfall of the months from the nodes' arrival (after ``arrival`` months) on: a
    peak over before they arrive is rented or goes unserved, it does not size hardware. Hardware arriving after
    the horizon is sized to the horizon's peak (the notes say it arrives too late)."""
    short = shortfall_gpus(demand, baseline, a.target_utilization)
    peak = max(short[arrival:] if arrival < len(short) else short, default=0.0)
    return math.ceil(peak / a.gpus_per_node - 1e-9) if peak > 0 else 0


def unmet_rate(a):
    """The price of an unserved GPU-hour: the plan's stated one, else the rental rate; None: unknown."""
    return a.unmet_cost if a.unmet_cost is not None else a.rental_rate


def serving_cost(s, a):
    """The cost of serving the demand, as the options are compared; None when a part of it is unknown."""
    if s.total_cost is None or (s.unmet_hours >= 1 and unmet_rate(a) is None):
        return None
    return score(s, a)


def score(s, a):
    """The cost of serving the demand: horizon cost + unserved GPU-hours at ``unmet_rate`` (``decision``); an
    unknown cost or rate counts 0 here."""
    return (s.total_cost or 0.0) + s.unmet_hours * (unmet_rate(a) or 0.0)


def percent(share):
    return f"{round(share * 100)} %"  # as the page's widthratio rounds


def node_words(n, what="node"):
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def underused_text(s, a):
    """The owned nodes of ``s`` are used less than the plan's lowest utilization: the words for it."""
    return (f"The {node_words(s.nodes, 'added node')} would be {percent(s.owned_utilization)} used over the horizon, "
            f"below the plan's lowest utilization of {percent(a.min_utilization)}")


def hybrid(demand, baseline, a, nodes):
    """Own the base, rent the peak: the cheapest number of owned nodes, 0 to ``nodes`` (see the module's
    docstring), with a note that says what it chose."""
    never = len(demand) + 1

    def own(k):
        return _scenario("hybrid", demand, baseline, a, k, a.lead_expand, rent_until=never)

    if a.rental_rate is None:  # renting cannot be priced against owning: own the peak, rent until it arrives
        return own(nodes)
    most = nodes
    if a.site_power_headroom_kw is not None and a.node_kw:
        most = min(nodes, max(0, int(a.site_power_headroom_kw // a.node_kw)))
    best = min((own(k) for k in range(most + 1)), key=lambda s: (round(score(s, a), 2), s.unmet_hours))
    if most < nodes:
        best.notes.append(f"The site's {a.site_power_headroom_kw:,.1f} kW of power left allow {most:,} of the "
                          f"{node_words(nodes)}.")
    if nodes:
        if best.nodes == 0:
            best.notes.append("Owning no node is cheapest over the horizon: the same as renting.")
        elif best.nodes < nodes:
            best.notes.append(f"Owns {best.nodes:,} of the peak's {nodes:,} nodes from "
                              f"{month_name(a, a.lead_expand + 1)} and rents the rest month by month.")
        elif a.lead_expand <= a.lead_rent:
            best.notes.append("Expanding is as quick as renting and owning the peak is cheapest: the same as "
                              "expanding.")
        else:
            best.notes.append(f"Owning the peak's {node_words(nodes)} is cheapest; it rents only until they arrive.")
    return best


def scenarios(demand, baseline, a):
    """The four scenarios for ``demand`` and ``baseline`` (GPU-hours per month over the horizon)."""
    nodes = peak_nodes(demand, baseline, a, a.lead_expand)
    never = len(demand) + 1
    expand = _scenario("expand", demand, baseline, a, nodes, a.lead_expand)
    build = _scenario("build", demand, baseline, a, peak_nodes(demand, baseline, a, a.lead_build), a.lead_build,
                      build=True)
    rent = _scenario("rent", demand, baseline, a, rent_until=never)
    mixed = hybrid(demand, baseline, a, nodes)
    for scenario in (expand, mixed):
        added_kw = scenario.nodes * a.node_kw
        if a.site_power_headroom_kw is not None and added_kw > a.site_power_headroom_kw:
            scenario.feasible = False
            scenario.notes.append(f"{scenario.nodes} nodes draw {added_kw:,.1f} kW; the site has "
                                  f"{a.site_power_headroom_kw:,.1f} kW of power left.")
    for scenario in (expand, build):
        if scenario.nodes and scenario.lead_months >= len(demand):
            scenario.notes.append("The hardware arrives after the horizon ends.")
    for scenario in (expand, build, mixed):
        used = scenario.owned_utilization
        if used is not None and used < a.min_utilization:
            scenario.underused = True
            scenario.notes.append(underused_text(scenario, a) + ".")
    return [expand, build, rent, mixed]


def month_name(a, number):
    """The horizon's ``number``-th month (1-based): YYYY-MM when the first month is known."""
    return f"{add_months(a.first_month, number - 1):%Y-%m}" if a.first_month else f"month {number}"
