"""Planning's panels of the home dashboard (registered in ``PlanningConfig.ready``)."""

from django.conf import settings
from django.urls import reverse
from django.utils.http import urlencode

from portal.models import PageVisit
from portal.registry import Decision, Tile

from .contracts import queries
from .contracts.models import Contract
from .plans.models import CapacityPlan
from .recommendations import store as recommendations
from .recommendations.models import Recommendation

HOME_ROWS = 4  # the home dashboard stays one screen: the full lists are one click away
RECOMMENDATIONS_VISIT = "recommendations"  # the page whose last visit "new since your last visit" counts from


def contract_tiles(request):
    """Contracts with a renewal alert open, and what the active contracts cost this month (rentals, the others)."""
    if not request.user.has_perm("planning.view_contract"):
        return None
    figures, currency = queries.home_figures(), settings.COST_CURRENCY
    contracts = reverse("planning:contract_list")
    spend = {row["currency"]: row for row in figures["spend"]}
    main = spend.pop(currency, {"rentals": 0, "other": 0})
    # Amounts in another currency are not converted: they are named, and the tile is flagged.
    others = ", ".join(f"{row['rentals'] + row['other']:,.0f} {code}" for code, row in spend.items())
    other_kinds = "&".join(f"kind={kind}" for kind in Contract.Kind.values if kind != Contract.Kind.RENTAL)
    return [
        Tile("renewals", "contracts to renew or give notice", str(figures["renewals_due"]),
             f"{contracts}?renewal_due=true", warn=bool(figures["renewals_due"])),
        Tile("rentals", "rentals this month", f"{main['rentals']:,.0f} {currency}",
             f"{contracts}?kind=rental&active=true", note="monthly cost of active rentals"),
        Tile("spend", "other contracts this month", f"{main['other']:,.0f} {currency}",
             f"{contracts}?{other_kinds}&active=true",
             note=f"monthly costs; one-off costs left out{f'; also {others}' if others else ''}", warn=bool(others)),
    ]


def renewals_panel(request):
    """Contracts whose notice deadline comes soon."""
    if not request.user.has_perm("planning.view_renewalalert"):
        return None
    return {"renewal_alerts": queries.open_renewal_alerts(limit=HOME_ROWS),
            "renewal_alert_days": settings.RENEWAL_ALERT_DAYS}


def recommendations_panel(request):
    """The most severe open recommendations and how many are open."""
    if not request.user.has_perm("planning.view_recommendation"):
        return None
    return {"recommendations": recommendations.open_summary(limit=HOME_ROWS)}


def planning_decisions(request):
    """The home page's "awaiting your decision", planning's part: the submitted capacity plans this user may approve
    or reject (the four-eyes rule ``planning.decide_plan`` on each: never one's own), and the open recommendations
    raised since the user last opened their list, for those who accept or dismiss them. None for a user who
    decides neither."""
    user = request.user
    lines = []
    if user.has_perm("planning.decide_plan"):
        submitted = CapacityPlan.objects.filter(status=CapacityPlan.Status.SUBMITTED).only("pk", "name",
                                                                                          "submitted_by_id")
        plans = [plan for plan in submitted if user.has_perm("planning.decide_plan", plan)]
        url = (plans[0].get_absolute_url() if len(plans) == 1
               else f"{reverse('planning:capacityplan_list')}?status={CapacityPlan.Status.SUBMITTED}")
        lines.append(Decision("plans", len(plans), "capacity plans submitted for your approval", url,
                              note=plans[0].name if len(plans) == 1 else ""))
    if user.has_perm("planning.change_recommendation"):  # who accepts or dismisses them
        since = PageVisit.last(user, RECOMMENDATIONS_VISIT)
        new = Recommendation.objects.filter(status=Recommendation.Status.OPEN)
        query = {"status": Recommendation.Status.OPEN}
        if since is not None:
            new = new.filter(created__gt=since)
            query["raised_after"] = since.isoformat()
        note = f"since your last look on {since:%Y-%m-%d %H:%M}" if since else "you have not opened the list yet"
        lines.append(Decision("recommendations", new.count(), "new recommendations to accept or dismiss",
                              f"{reverse('planning:recommendation_list')}?{urlencode(query)}", note=note))
    return lines if lines else None
