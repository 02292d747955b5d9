"""A plan's analysis in short, stored on the plan (``CapacityPlan.summary``) so that the plan list shows each plan's
answer without forecasting anything: the recommended option, GPUs it adds, its cost over the horizon and the month
demand is met.

The summary is written whenever the analysis is computed (plan page, API) and refreshed by a Celery task queued
when the plan, its workloads or its bill of materials change. ``summary_at`` is when the analysis that wrote it
started; a plan changed after that (``updated``, which changes of its workloads and lines touch too) is shown as
"changed since"."""

from django.conf import settings
from django.utils import timezone

from . import scenarios
from .analysis import analyse


def recommended_scenario(an):
    """The recommended ``Scenario``; None when none is (no need, or none serves the demand)."""
    return an.recommendation.scenario


def summarise(an):
    """The answer of an analysis as plain JSON data, read from its decision (``planning.plans.decision``) so that it
    cannot disagree with the headline: ``recommended`` (scenario kind or None), ``label``, ``headline``,
    ``warning`` (what the headline says beyond the choice, "" if nothing), ``needed`` (whether demand exceeds the
    fleet at the target utilization), ``gpus_added`` (the most GPUs the option adds in a month, owned and rented),
    ``nodes`` (owned nodes bought), ``cost`` (cost over the horizon, capex depreciated; None: unknown or nothing
    recommended), ``currency``, ``met_from`` (the month demand is met from, YYYY-MM; None: not within the
    horizon), ``unmet_gpu_hours``, ``unavoidable_gpu_hours`` (of those, what no option could serve),
    ``horizon_months``."""
    rec, best = an.recommendation, recommended_scenario(an)
    needed = rec.needed
    if best is None:
        warning = rec.headline if needed else ""
    else:
        warning = " ".join(rec.warnings)
    return {
        "recommended": rec.kind,
        "label": best.label if best else None,
        "headline": rec.headline,
        "warning": warning,
        "needed": needed,
        "gpus_added": round(best.peak_added_gpus) if best else 0,
        "nodes": best.nodes if best else 0,
        "cost": round(best.total_cost, 2) if best and best.total_cost is not None else None,
        "currency": settings.COST_CURRENCY,
        "met_from": _met_from(an, best, needed),
        "unmet_gpu_hours": round(best.unmet_hours if best else scenarios.unmet(
            an.demand, an.capacity.hours, an.assumptions.target_utilization), 1),
        "unavoidable_gpu_hours": round(rec.unavoidable_hours, 1),
        "horizon_months": len(an.months),
    }


def _met_from(an, best, needed):
    if best is not None:
        return an.month_label(best.met_from)
    return an.month_label(1) if not needed and an.months else None  # the fleet meets it from the start


def store(plan, an, at):
    """Write ``summarise(an)`` on the plan, as of ``at`` (when the analysis started). An update, not a save: no
    change record, no ``updated``, no refresh queued."""
    summary = summarise(an)
    type(plan).objects.filter(pk=plan.pk).update(summary=summary, summary_at=at)
    plan.summary, plan.summary_at = summary, at
    return summary


def analyse_and_store(plan):
    """``analyse(plan)``, its summary stored on the plan; returns the analysis."""
    at = timezone.now()
    an = analyse(plan)
    store(plan, an, at)
    return an


def is_stale(plan):
    """Whether the plan changed after its stored summary was computed (False when it has none)."""
    return bool(plan.summary_at and plan.updated and plan.updated > plan.summary_at)
