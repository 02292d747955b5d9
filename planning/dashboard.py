"""Planning's panels of the home dashboard (registered in ``PlanningConfig.ready``)."""

from django.conf import settings
from django.urls import reverse

from portal.registry import Tile

from .contracts import queries
from .contracts.models import Contract
from .recommendations import store as recommendations

HOME_ROWS = 4  # the home dashboard stays one screen: the full lists are one click away


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
