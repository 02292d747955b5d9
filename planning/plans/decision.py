"""A plan's decision: which way of adding capacity serves its demand, and the words for it.

Plain Python over the scenarios (``planning.plans.scenarios``). One result, ``Recommendation``, that the headline,
"demand met from", the GPUs needed, the scenario table's pick and the pre-filled bill of materials all read, so
that they cannot disagree.

The measure: the cost of serving the demand
    Every option is costed over the same window, the plan's months, with its capex depreciated from arrival (an
    asset keeps the value it has left at the end, however late it arrives), plus the GPU-hours of demand it leaves
    unserved priced explicitly at ``scenarios.unmet_rate``: the plan's stated cost of an unserved GPU-hour, else the
    rental rate (what the missing hours would cost to rent at short notice, if they can be had at all). An option
    that arrives late is never cheap because it pays for little of the window: the demand it leaves unserved costs
    what it costs. Unless the plan states that cost, options that serve some demand come before one that serves
    none (hardware arriving after the horizon), and those that serve all the demand that can be served (below)
    come first, the rental rate being only the floor of what a late result costs; then the cheapest wins, ties
    going to the one that leaves fewer hours unserved. With no price for an unserved hour (no rental
    rate and none stated on the plan) a known cost comes first, then the fewest hours unserved, then the cost:
    unserved demand is never hidden behind a cheaper total.

    A month's demand is served up to its capacity × the target utilization, so "met" (capacity × target ≥
    demand), "unserved" (Σ demand − capacity × target, where positive) and "needed" (the peak shortfall in GPUs at
    the target) are one definition.

What no option can serve
    Demand short in the months before the quickest feasible option can add capacity (its lead time) is unserved
    whatever is chosen: the *unavoidable* GPU-hours. When the pick leaves only those unserved, the headline says
    "demand met from <month>" and that the hours before it cannot be served by any option; when it leaves more,
    it says how many. When no option serves any of the demand (it all falls inside every lead time), nothing is
    recommended and the headline says so.
"""

import math
from dataclasses import dataclass, field

from django.conf import settings

from .scenarios import (
    HOURS,
    gpus_needed,
    month_name,
    node_words,
    score,
    shortfall_gpus,
    underused_text,
    unmet,
    unmet_rate,
)

HOUR_TOLERANCE = 1.0  # GPU-hours: less than one unserved hour is none


@dataclass
class Recommendation:
    kind: str | None  # the recommended scenario's kind; None: nothing to add (or nothing can serve the demand)
    headline: str
    reasons: list
    scenario: object = None  # the recommended ``Scenario``
    needed_gpus: float = 0.0  # the horizon's peak shortfall at the target utilization (0: none needed)
    unavoidable_hours: float = 0.0  # GPU-hours no feasible option can serve (short before the quickest arrives)
    warnings: list = field(default_factory=list)  # what the headline says beyond the choice

    @property
    def needed(self):
        return self.needed_gpus > 0


def _money(value):
    return f"{value:,.0f} {settings.COST_CURRENCY}"  # the reasons are read on their own: say the currency


def rank(s, a, unavoidable_hours=0.0):
    """The order of preference (lowest first): unless the plan states what an unserved hour costs, serving some of
    the demand (the rental rate is only the floor of what waiting costs: it never makes serving nothing the pick)
    and then all the demand that can be served first; then the cost of serving the demand where an unserved hour
    has a price, else a known cost, then the fewest hours unserved."""
    unstated = a.unmet_cost is None
    idle = unstated and s.useful_hours < HOUR_TOLERANCE
    short = unstated and s.unmet_hours > unavoidable_hours + HOUR_TOLERANCE
    if unmet_rate(a) is not None:
        return (idle, short, s.total_cost is None, round(score(s, a), 2), round(s.unmet_hours, 2))
    return (idle, short, s.total_cost is None, round(s.unmet_hours), round(s.total_cost or 0.0, 2))


def unavoidable(demand, baseline, feasible, a):
    """(GPU-hours short before the quickest feasible option adds capacity, that option)."""
    quickest = min(feasible, key=lambda s: s.available_from)
    short = [max(0.0, d - b * a.target_utilization) for d, b in zip(demand, baseline, strict=True)]
    return sum(short[:quickest.available_from - 1]), quickest


def choice_text(best):
    """What the pick adds, in words: the nodes it buys and the most GPUs it rents in a month."""
    parts = [f"{node_words(best.nodes)} bought"] if best.nodes else []
    if best.peak_rented_gpus:
        parts.append(f"up to {best.peak_rented_gpus:,} GPUs rented")
    return f" ({', '.join(parts)})" if parts else ""


def met_text(best, unavoidable_hours, quickest, a):
    """The sentence on when the pick meets the demand and what it leaves unserved."""
    if best.unmet_hours < HOUR_TOLERANCE:
        return "It serves all the demand."
    if best.met_from and best.unmet_hours <= unavoidable_hours + HOUR_TOLERANCE:
        return (f"Demand met from {month_name(a, best.met_from)}; the {best.unmet_hours:,.0f} GPU-hours short before "
                f"then cannot be served by any option (the quickest, {quickest.label.lower()}, adds capacity from "
                f"{month_name(a, quickest.available_from)}).")
    met = f"Demand met from {month_name(a, best.met_from)}" if best.met_from else "Demand not fully met"
    return f"{met}; it leaves {best.unmet_hours:,.0f} GPU-hours unserved within the horizon."


def recommend(demand, baseline, results, a):
    """Pick a scenario (or none) and say why, comparing it with the others."""
    peak_need = max(gpus_needed(demand, a.target_utilization), default=0.0)
    peak_base = max((b / HOURS for b in baseline), default=0.0)
    needed = max(shortfall_gpus(demand, baseline, a.target_utilization), default=0.0)
    if not needed:
        reasons = [f"Forecast demand peaks at {peak_need:,.0f} GPUs at {a.target_utilization:.0%} utilization; "
                   f"the fleet has {min(b / HOURS for b in baseline):,.0f} GPUs or more in every month."]
        if not any(demand):
            reasons.append("No demand: no telemetry history and no planned workloads.")
        return Recommendation(None, "No new capacity needed within the horizon.", reasons)

    feasible = [s for s in results if s.feasible]
    lost, quickest = unavoidable(demand, baseline, feasible, a)
    best = min(feasible, key=lambda s: rank(s, a, lost))
    base_unmet = unmet(demand, baseline, a.target_utilization)
    reasons = [f"Demand peaks at {peak_need:,.0f} GPUs ({a.target_utilization:.0%} utilization) against "
               f"{peak_base:,.0f} in the fleet: {needed:,.1f} GPUs short at the peak; without new capacity "
               f"{base_unmet:,.0f} GPU-hours go unserved."]
    if best.useful_hours < HOUR_TOLERANCE and any(s.useful_hours >= HOUR_TOLERANCE for s in feasible):
        reasons.append(f"At the plan's cost of an unserved GPU-hour ({unmet_rate(a):,.2f} {settings.COST_CURRENCY}) "
                       "every option that serves demand costs more than the hours it serves.")
        return Recommendation(None, f"Nothing recommended: leaving the {base_unmet:,.0f} GPU-hours unserved costs "
                                    "less than any option at the plan's cost of an unserved GPU-hour.", reasons,
                              needed_gpus=needed, unavoidable_hours=lost)
    if best.useful_hours < HOUR_TOLERANCE:  # e.g. a workload that ends inside every option's lead time
        reasons.append("No option serves any of the demand within the horizon. The earliest each could add "
                       "capacity: " + "; ".join(f"{s.label.lower()} from {month_name(a, s.available_from)}"
                                                 for s in feasible) + ".")
        return Recommendation(None, f"No option can serve the demand within the horizon: the {base_unmet:,.0f} "
                                    "GPU-hours short fall before any option could add capacity.", reasons,
                              needed_gpus=needed, unavoidable_hours=lost)
    rate = unmet_rate(a)
    per_hour = best.cost_per_useful_hour
    cost = _money(best.total_cost) if best.total_cost is not None else "cost unknown (no rental rate)"
    reasons.insert(1, f"{best.label}: {cost} over {len(demand)} months"
                   + (f", {per_hour:,.2f} {settings.COST_CURRENCY} per useful GPU-hour" if per_hour is not None else "")
                   + (f", demand met from {month_name(a, best.met_from)}" if best.met_from
                      else ", demand not fully met")
                   + (f", {best.unmet_hours:,.0f} GPU-hours unserved" if best.unmet_hours >= HOUR_TOLERANCE else "")
                   + ".")
    warnings = []
    if best.underused:
        reasons.append(_underused(best, demand, baseline, a))
        warnings.append(f"Warning: the {node_words(best.nodes, 'added node')} would be "
                        f"{round(best.owned_utilization * 100)} % used over the horizon.")
    expand = next((s for s in results if s.kind == "expand"), None)
    if (best.kind == "hybrid" and expand and 0 < best.nodes < expand.nodes
            and None not in (expand.total_cost, best.total_cost) and expand.total_cost > best.total_cost):
        reasons.append(f"Owning {node_words(best.nodes)} for the base and renting the peak above "
                       f"{'it' if best.nodes == 1 else 'them'} ({best.rented_hours:,.0f} GPU-hours rented) costs "
                       f"{_money(expand.total_cost - best.total_cost)} less than buying the peak's {expand.nodes} "
                       "nodes.")
    reasons += [_against(other, best, a) for other in sorted((s for s in results if s is not best),
                                                             key=lambda s: (not s.feasible, rank(s, a, lost)))]
    if best.kind == "rent" and len(demand) < a.depreciation_months:
        reasons.append(f"Over {len(demand)} months, owned hardware depreciated over {a.depreciation_months} months "
                       "does not pay off against renting at this demand; a longer horizon may change that.")
    if rate is not None:
        reasons.append(f"Options are compared on their cost plus the GPU-hours they leave unserved at "
                       f"{rate:,.2f} {settings.COST_CURRENCY} each ({a.unmet_rate_source}).")
    else:
        reasons.append("No price is known for an unserved GPU-hour (no rental rate, none on the plan): an option "
                       "that serves all the demand comes first, then a known cost, then the most demand served.")
    headline = " ".join([f"Recommended: {best.label.lower()}{choice_text(best)}.", met_text(best, lost, quickest, a),
                         *warnings])
    return Recommendation(best.kind, headline, reasons, best, needed, lost, warnings)


def _against(other, best, a):
    """Why ``other`` is not the pick, in one sentence."""
    if not other.feasible:
        return f"{other.label} is not possible: {' '.join(other.notes)}"
    why = []
    if other.unmet_hours > best.unmet_hours + HOUR_TOLERANCE:
        why.append(f"leaves {other.unmet_hours - best.unmet_hours:,.0f} more GPU-hours unserved "
                   f"(lead time {other.lead_months} months)")
    if other.total_cost is None or best.total_cost is None:
        why.append("cannot be compared on cost: no rental rate is known")
    elif other.total_cost > best.total_cost:
        why.append(f"costs {_money(other.total_cost - best.total_cost)} more")
    elif other.total_cost < best.total_cost:
        why.append(f"costs {_money(best.total_cost - other.total_cost)} less")
    priced = ""
    if unmet_rate(a) and None not in (other.total_cost, best.total_cost):
        extra = score(other, a) - score(best, a)  # negative only on a tie broken by the hours unserved
        priced = (f" ({_money(abs(extra))} {'more' if extra >= 0 else 'less'} once unserved hours are priced at "
                  f"{unmet_rate(a):,.2f} {settings.COST_CURRENCY} each)")
    return f"{other.label} {' and '.join(why) or 'comes out the same'}{priced}."


def _underused(s, demand, baseline, a):
    """Why the owned nodes of ``s`` sit idle: the few months that need them all."""
    needs = [math.ceil(g / a.gpus_per_node - 1e-9) for g in shortfall_gpus(demand, baseline, a.target_utilization)]
    peak = [month for month, need in enumerate(needs, start=1) if need >= s.nodes]
    owned = [month for month in peak if month >= s.owned_from]
    return (f"{underused_text(s, a)}: sized to a peak of {node_words(len(peak), 'month')}; all {s.nodes:,} are needed "
            f"in {len(owned)} of the {len(demand) - s.owned_from + 1} months from their arrival in "
            f"{month_name(a, s.owned_from)}.")
