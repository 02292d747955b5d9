"""Planning's panels of the home dashboard (registered in ``PlanningConfig.ready``)."""

from django.conf import settings

from .contracts import queries
from .recommendations import store as recommendations


def renewals_panel(request):
    """Contracts whose notice deadline comes soon."""
    if not request.user.has_perm("planning.view_renewalalert"):
        return None
    return {"renewal_alerts": queries.open_renewal_alerts(), "renewal_alert_days": settings.RENEWAL_ALERT_DAYS}


def recommendations_panel(request):
    """The most severe open recommendations and how many are open."""
    if not request.user.has_perm("planning.view_recommendation"):
        return None
    return {"recommendations": recommendations.open_summary()}
