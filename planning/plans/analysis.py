"""A capacity plan's analysis: demand (forecast from telemetry plus the planned workloads), capacity month by
month, the build / expand / rent / hybrid scenarios and the recommendation. This module gathers the figures from
the database and hands them to the plain-Python ``forecast``, ``capacity`` and ``scenarios`` modules.

The horizon is the plan's months: from its ``first_month`` for ``horizon_months``. A plan whose first month has passed
shows its past months too, forecast as today from the history's end (and says so). A planned workload's GPU-hours
(``planning.sizing.sizing``) are spread evenly over the months its wall-clock time spans, from its calendar start
month; what falls outside the plan's months is left out (and said so). The scenario assumptions come from the plan
where it sets them, else from the fleet (the site with the most GPUs, the most common node model in service, the
last order's price, the active rentals' rate), else from the settings; each assumption is listed with where it came
from.

A scoped plan (``scope``: a partition, its site, a GPU model) reads the history and counts the capacity of the GPUs
in its scope only. A plan made from a recommendation leads with the recommendation's need (``needs``): what it
measured that the history cannot see (the queue of a capacity-bound partition, the nodes an ageing one replaces)
enters demand and capacity; for the kinds whose need is not more GPUs the headline names the bottleneck.
"""

import math
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from inventory.models import LifecycleState, Node, NodeModel, Site
from inventory.power import power_headroom_kw  # the site's power left: read by the import's warnings too

from ..contracts.costs import rental_rate
from ..procurement.models import OrderLine
from ..sizing import sizing
from . import capacity, decision, forecast, months, needs, scenarios
from .scope import Scope
from .sized import size_all

DAYS_PER_MONTH = 365 / 12


@dataclass
class WorkloadDemand:
    name: str
    start: object  # date: the first day of its start month
    index: int  # its start month's place among the plan's months (0: the first; may lie outside them)
    gpu_hours: float | None  # None: it cannot be sized
    months: int
    per_month: list
    error: str = ""
    rental_cost: object = None  # ``sizing.Figure``: the run rented whole, priced as the sizing page prices it
    sizing: object = None  # ``sizing.Sizing``; None when it cannot be sized


@dataclass
class Analysis:
    plan: object
    months: list
    forecast: forecast.Forecast
    workloads: list
    demand: list  # GPU-hours per month: forecast mean + workloads
    capacity: capacity.Capacity
    assumptions: scenarios.Assumptions
    assumption_rows: list  # (label, value, where it comes from)
    scenarios: list
    recommendation: decision.Recommendation
    notes: list = field(default_factory=list)
    scope: Scope = field(default_factory=Scope)
    need: needs.Need | None = None  # the need of the recommendation the plan was made from
    lines: list = field(default_factory=list)  # ``needs.DemandLine``: demand the history cannot see

    @property
    def gaps(self):
        """Capacity − demand per month, GPU-hours (negative: short)."""
        return [c - d for c, d in zip(self.capacity.hours, self.demand, strict=True)]

    def month_label(self, number):
        """"YYYY-MM" of the plan's ``number``-th month (1-based, as the scenarios count); None stays None."""
        return months.label(forecast.add_months(self.plan.first_month, number - 1)) if number else None

    @property
    def line_hours(self):
        """GPU-hours per month of the recommendation's demand lines together."""
        return [sum(line.per_month[i] for line in self.lines) for i in range(len(self.months))]

    @property
    def rows(self):
        """Month by month: (month, history-based demand, workloads, the recommendation's lines, demand, capacity,
        gap)."""
        workloads = [sum(w.per_month[i] for w in self.workloads) for i in range(len(self.months))]
        return list(zip(self.months, self.forecast.mean, workloads, self.line_hours, self.demand,
                        self.capacity.hours, self.gaps, strict=True))


def run_months(days):
    """The calendar months a run of ``days`` wall-clock days spans from the start of its first month."""
    return max(1, math.ceil(days / DAYS_PER_MONTH - 1e-9))


def workload_demand(plan, horizon):
    """Each planned workload's GPU-hours spread over the months it runs (``sized.size_all``: sized once)."""
    rows, one = [], None
    for each in size_all(plan.workloads.select_related("gpu_model")):
        workload, sized = each.workload, each.result
        per_month = [0.0] * horizon
        start = workload.start.replace(day=1)
        first = forecast.months_between(plan.first_month, start)
        if sized is None:
            rows.append(WorkloadDemand(workload.name, start, first, None, 0, per_month, each.error))
            continue
        hours, days = sized["gpu_hours"], sized["wall_clock_days"]
        span = run_months(days)
        for index in range(first, first + span):
            if 0 <= index < horizon:
                per_month[index] = hours / span
        if one is None:  # one GPU-hour rented, as the sizing page prices it: the plan's own rate, else the same
            rate = plan.rental_gpu_hour_cost
            one = sizing.rental_cost(1.0, rate, "the plan" if rate is not None else "")
        rows.append(WorkloadDemand(workload.name, start, first, hours, span, per_month, rental_cost=replace(
            one, value=None if one.value is None else hours * one.value), sizing=sized))
    return rows


def site_for(plan):
    """The plan's site, else the site with the most GPUs in service."""
    if plan.site_id:
        return plan.site
    return (Site.objects.annotate(n=Count("nodes__gpus", filter=_serving("nodes__state")))
            .order_by("-n", "name").first())


def _serving(lookup):
    return Q(**{f"{lookup}__in": (LifecycleState.IN_SERVICE, LifecycleState.DEGRADED)})


def node_model_for(plan):
    """The plan's node model, else the most common one in service, else the catalog's first with a price."""
    if plan.node_model_id:
        return plan.node_model, "the plan"
    common = (NodeModel.objects.annotate(n=Count("nodes", filter=_serving("nodes__state"))).filter(n__gt=0)
              .order_by("-n", "name").first())
    if common:
        return common, "the most common node model in service"
    return NodeModel.objects.filter(list_price__isnull=False).order_by("-list_price").first(), "the catalog"


def node_price_for(plan, node_model):
    if plan.node_price is not None:
        return float(plan.node_price), "the plan"
    last = (OrderLine.objects.filter(node_model=node_model).select_related("order")
            .order_by("-order__ordered_on", "-pk").first()) if node_model else None
    if last:
        return float(last.unit_price), f"order {last.order.reference} ({last.order.ordered_on:%Y-%m-%d})"
    if node_model and node_model.list_price is not None:
        return float(node_model.list_price), f"{node_model}'s list price"
    return 0.0, "unknown: set the node price on the plan"


def rental_rate_for(plan, today):
    if plan.rental_gpu_hour_cost is not None:
        return float(plan.rental_gpu_hour_cost), "the plan"
    rate, contracts = rental_rate(today)
    if not rate:  # a rate of 0 is a rate nobody set: renting is not free
        return None, "unknown: set the rental cost on the plan or a rental contract's rate"
    return rate, f"the active rental contracts ({len(contracts)})" if contracts else "the portal's default"


def assumptions_for(plan, today):
    site = site_for(plan)
    node_model, model_source = node_model_for(plan)
    price, price_source = node_price_for(plan, node_model)
    rate, rate_source = rental_rate_for(plan, today)
    headroom = power_headroom_kw(site)
    a = scenarios.Assumptions(
        horizon=plan.horizon_months,
        gpus_per_node=node_model.gpu_slots if node_model else sizing.GPUS_PER_NODE,
        node_kw=node_model.max_power_w / 1000 if node_model else 10.2,
        node_height_u=node_model.height_u if node_model else 8,
        node_price=price, rental_rate=rate, target_utilization=plan.target_utilization / 100,
        min_utilization=plan.min_utilization / 100,
        lead_build=plan.build_lead_months, lead_expand=plan.expand_lead_months, lead_rent=plan.rent_lead_months,
        site_pue=site.effective_pue if site else settings.DEFAULT_PUE,
        site_energy_price=site.effective_energy_price if site else settings.ENERGY_PRICE_PER_KWH,
        site_rack_cost=site.effective_rack_cost if site else settings.RACK_COST_PER_MONTH,
        site_power_headroom_kw=headroom, build_pue=settings.DEFAULT_PUE,
        build_energy_price=settings.ENERGY_PRICE_PER_KWH, build_cost_per_kw=settings.BUILD_COST_PER_KW,
        network_share=settings.NETWORK_SHARE_OF_NODE_PRICE, storage_share=settings.STORAGE_SHARE_OF_NODE_PRICE,
        support_share_per_year=settings.SUPPORT_SHARE_OF_CAPEX_PER_YEAR, first_month=plan.first_month,
        unmet_cost=float(plan.unmet_gpu_hour_cost) if plan.unmet_gpu_hour_cost is not None else None,
        unmet_rate_source="the plan" if plan.unmet_gpu_hour_cost is not None else "the rental rate",
    )
    site_source = "the plan" if plan.site_id else "the site with the most GPUs in service"
    currency = settings.COST_CURRENCY
    rows = [
        ("Site to expand", str(site) if site else "none", site_source),
        ("Node to buy", f"{node_model} ({a.gpus_per_node} GPUs, {a.node_kw:g} kW)" if node_model else "none",
         model_source),
        ("Node price", f"{price:,.0f} {currency}", price_source),
        ("Rental", f"{rate:,.2f} {currency} per GPU-hour" if rate is not None else "unknown", rate_source),
        ("Unserved GPU-hour", f"{scenarios.unmet_rate(a):,.2f} {currency}" if scenarios.unmet_rate(a) is not None
         else "no price: the option serving the most demand comes first", a.unmet_rate_source),
        ("Target utilization", f"{plan.target_utilization} %", "the plan"),
        ("Lowest utilization of added nodes", f"{plan.min_utilization} % over the horizon, else flagged", "the plan"),
        ("Lead times", f"rent {a.lead_rent}, expand {a.lead_expand}, build {a.lead_build} months", "the plan"),
        ("Site PUE and energy", f"{a.site_pue:g}, {a.site_energy_price:g} {currency}/kWh",
         "the site" if site and site.pue is not None else "the portal's defaults"),
        ("Site power left", f"{headroom:,.1f} kW" if headroom is not None else "unknown", "site capacity − nodes"),
        ("Space", f"{a.site_rack_cost:,.0f} {currency} per rack and month",
         "the site" if site and site.rack_cost_per_month is not None else "the portal's default"),
        ("New cluster", f"{a.build_cost_per_kw:,.0f} {currency} per kW, PUE {a.build_pue:g}", "the settings"),
        ("Network, storage, support", f"{a.network_share:.0%} and {a.storage_share:.0%} of the node price, "
         f"{a.support_share_per_year:.0%} of capex a year", "the settings"),
        ("Depreciation", f"{a.depreciation_months} months", "the settings"),
    ]
    return a, rows


def need_of(plan, rec, scope, first, horizon):
    """The need of ``rec``, the recommendation ``plan`` was made from, with the nodes an ageing one replaces
    (their GPUs in ``scope``) and the catalog's larger-memory GPU models; (None, {}) for a plan made by hand."""
    from inventory.models import GPUModel

    if rec is None:
        return None, {}
    nodes, larger = {}, []
    if rec.kind == "ageing":
        hostnames = [row["hostname"] for row in needs.evidence_rows(rec.evidence)]
        gpus = Count("gpus", filter=Q(gpus__gpu_model_id=scope.gpu_model_id)) if scope.gpu_model_id else Count("gpus")
        nodes = {hostname: (pk, n) for pk, hostname, n in Node.objects.filter(hostname__in=hostnames,
                                                                                **scope.node_filters())
                 .annotate(n=gpus).values_list("pk", "hostname", "n") if n}
    elif rec.kind == "memory_bound" and plan.gpu_model_id:
        larger = [f"{m.name} ({m.memory_gb} GB)" for m in
                  GPUModel.objects.filter(memory_gb__gt=plan.gpu_model.memory_gb).order_by("memory_gb", "name")]
    return needs.need_for(rec, first, horizon, nodes, larger), nodes


def analyse(plan, today=None):
    today = today or timezone.localdate()
    first, horizon = plan.first_month, plan.horizon_months
    rec = plan.recommendations.order_by("-decided_at", "-pk").first()
    scope = Scope.of(plan, by_site=rec is not None and rec.kind == "ageing")
    history = forecast.monthly_history(today, scope.gpu_filters("gpu__"))
    predicted = forecast.forecast(history, first, horizon)
    workloads = workload_demand(plan, horizon)
    need, need_nodes = need_of(plan, rec, scope, first, horizon)
    lines = list(need.lines) if need else []
    if need and need.kind == "capacity_bound" and not history and (load := needs.measured_load(need, horizon)):
        lines.insert(0, load)
        need.notes.append("The scope has no telemetry history yet: the load the recommendation measured stands in "
                          "for it.")
    demand = [predicted.mean[i] + sum(w.per_month[i] for w in workloads) + sum(line.per_month[i] for line in lines)
              for i in range(horizon)]
    base = capacity.baseline(first, horizon, today, scope, plan.node_model_id, need.leaving if need else None)
    for gpus, words in need.reclaimed if need else ():  # taken first, before anything is bought
        base.incoming = [gpus + i for i in base.incoming]
        base.sources.append(words)
    if need and (keep := needs.keep_capacity(need, predicted.months, demand, base.hours, need_nodes,
                                             plan.target_utilization / 100)):
        lines.append(keep)
        demand = [d + k for d, k in zip(demand, keep.per_month, strict=True)]
    a, rows = assumptions_for(plan, today)
    results = scenarios.scenarios(demand, base.hours, a)
    notes = list(predicted.notes) + (need.notes if need else [])
    if first < forecast.month_start(today):
        notes.append(f"The plan started in {first:%Y-%m}, before this month: its past months are forecast as today, "
                     "from the end of the telemetry history, and lead times count from its first month.")
    for w in workloads:
        if w.gpu_hours is None:
            notes.append(f"Workload {w.name} cannot be sized and is left out: {w.error}")
        elif w.index < 0 or w.index + w.months > horizon:
            notes.append(f"Workload {w.name} runs outside the plan's months; only its months inside them count.")
    if not a.node_price:
        notes.append("No node price is known: owned scenarios show no hardware cost. Set one on the plan.")
    recommendation = decision.recommend(demand, base.hours, results, a)
    if need:
        if headline := need.headline(recommendation.kind):
            recommendation.headline = headline
        if note := need.compare(recommendation.scenario, a.gpus_per_node, predicted, base):
            notes.append(note)
    return Analysis(plan, predicted.months, predicted, workloads, demand, base, a, rows, results, recommendation,
                    notes, scope, need, lines)


def as_dict(an):
    """The analysis as plain data (the API's answer)."""
    band = an.forecast.lower is not None
    return {
        "plan": an.plan.pk,
        "scope": f"Scope: {an.scope.label}",
        "need": need_dict(an.need),
        "demand_lines": [{"name": line.name, "gpu_hours": line.per_month} for line in an.lines],
        "currency": settings.COST_CURRENCY,
        "forecast_method": an.forecast.method,
        "history": [{"month": months.label(month), "gpu_hours": value} for month, value in an.forecast.history],
        "months": [
            {"month": months.label(month), "forecast_gpu_hours": predicted,
             "forecast_low": an.forecast.lower[i] if band else None,
             "forecast_high": an.forecast.upper[i] if band else None,
             "workload_gpu_hours": planned, "recommendation_gpu_hours": lines, "demand_gpu_hours": demand,
             "capacity_gpu_hours": capacity, "gap_gpu_hours": gap}
            for i, (month, predicted, planned, lines, demand, capacity, gap) in enumerate(an.rows)
        ],
        "capacity_sources": an.capacity.sources,
        "workloads": [{"name": w.name, "start": months.label(w.start), "gpu_hours": w.gpu_hours, "months": w.months,
                       "error": w.error, "rental_cost": w.rental_cost.value if w.rental_cost else None,
                       "rental_cost_basis": w.rental_cost.source if w.rental_cost else ""}
                      for w in an.workloads],
        "assumptions": [{"name": name, "value": value, "source": source}
                        for name, value, source in an.assumption_rows],
        "scenarios": [
            {"kind": s.kind, "label": s.label, "feasible": s.feasible, "nodes": s.nodes, "lead_months": s.lead_months,
             "capex": s.capex, "energy": s.energy, "support": s.support, "space": s.space, "rental": s.rental,
             "total_cash": s.total_cash, "total_cost": s.total_cost, "cost_per_useful_gpu_hour": s.cost_per_useful_hour,
             "utilization": s.utilization, "owned_from_month": an.month_label(s.owned_from),
             "owned_gpu_hours": s.owned_hours,
             "owned_useful_gpu_hours": s.owned_useful_hours, "owned_utilization": s.owned_utilization,
             "below_min_utilization": s.underused, "rented_gpu_hours": s.rented_hours,
             "rented_useful_gpu_hours": s.rented_useful_hours, "rented_utilization": s.rented_utilization,
             "met_from_month": an.month_label(s.met_from), "unmet_gpu_hours": s.unmet_hours,
             "useful_gpu_hours": s.useful_hours, "notes": s.notes, "rented_gpus": s.rented_gpus,
             "serving_cost": scenarios.serving_cost(s, an.assumptions),
             "capacity_gpu_hours": s.capacity, "added_gpus": s.added_gpus, "cash": s.cash, "cost": s.cost}
            for s in an.scenarios
        ],
        "recommendation": {"kind": an.recommendation.kind, "headline": an.recommendation.headline,
                           "reasons": an.recommendation.reasons, "needed_gpus": an.recommendation.needed_gpus,
                           "unavoidable_gpu_hours": an.recommendation.unavoidable_hours,
                           "unmet_gpu_hour_cost": scenarios.unmet_rate(an.assumptions)},
        "notes": an.notes,
    }


def need_dict(need):
    if need is None:
        return None
    return {"recommendation": need.rec_id, "kind": need.kind, "topic": need.topic, "statement": need.statement,
            "figures": [{"label": label, "value": value} for label, value in need.figures],
            "node_count": need.node_count or None, "bottleneck": need.bottleneck or None}
