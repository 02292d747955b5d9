import json
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponsePermanentRedirect, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.views import View
from django.views.decorators.http import require_safe
from django.views.generic import TemplateView

from inventory import queries as inventory_queries
from planning.contracts import queries as planning_queries
from planning.recommendations import store as planning_recommendations
from support import queries as support_queries

from . import changelog
from .forms import TokenForm
from .models import APIToken, WorkerHeartbeat


class HomeView(TemplateView):
    """The fleet at a glance: counts by state and site, GPUs by model, capacity, warranty, renewal alerts."""

    template_name = "portal/home.html"

    def get_template_names(self):
        # An account without a role (no group yet) sees no fleet data, only how to get a role.
        return [self.template_name if self.request.user.has_perm("inventory.view_node") else "portal/no_role.html"]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if not self.request.user.has_perm("inventory.view_node"):
            return context
        summary = inventory_queries.fleet_summary()
        context["summary"] = summary
        context["gpus_by_model_chart"] = json.dumps({
            "x": [row["name"] for row in summary["gpus_by_model"]],
            "y": [row["n"] for row in summary["gpus_by_model"]],
        })
        context["nodes_by_state_chart"] = json.dumps({
            "sites": [site["name"] for site in summary["sites"]],
            "series": [
                {"state": label, "key": key, "counts": [site["nodes"].get(key, 0) for site in summary["sites"]]}
                for key, label in summary["states"]
            ],
        })
        if self.request.user.has_perm("planning.view_renewalalert"):
            context["renewal_alerts"] = planning_queries.open_renewal_alerts()
            context["renewal_alert_days"] = settings.RENEWAL_ALERT_DAYS
        if self.request.user.has_perm("planning.view_recommendation"):
            context["recommendations"] = planning_recommendations.open_summary()
        user = self.request.user
        if user.has_perm("support.view_ticket") or user.has_perm("support.add_ticket"):
            context["sla_tickets"] = support_queries.at_risk(user)  # breached or breaching soon
        context["heartbeat"] = WorkerHeartbeat.objects.order_by("-last_seen").first()
        context["heartbeat_stale"] = (
            context["heartbeat"] is None or timezone.now() - context["heartbeat"].last_seen > timedelta(minutes=3)
        )
        return context


class SearchView(View):
    """Global search: one match opens the object, several are listed by kind."""

    def get(self, request):
        term = request.GET.get("q", "").strip()
        groups = inventory_queries.search(term, request.user)
        matches = [obj for _, objects in groups for obj in objects]
        if len(matches) == 1:
            return HttpResponseRedirect(matches[0].get_absolute_url())
        return render(request, "portal/search.html", {"term": term, "groups": groups})


class TokenListView(View):
    """A user's API tokens: create one (its key is shown once) or revoke one."""

    template_name = "portal/tokens.html"

    def get(self, request, form=None, new_key=None):
        tokens = APIToken.objects.filter(user=request.user)
        return render(request, self.template_name, {"tokens": tokens, "form": form or TokenForm(), "new_key": new_key})

    def post(self, request):
        form = TokenForm(request.POST)
        if not form.is_valid():
            return self.get(request, form=form)
        days = form.cleaned_data["expires_in_days"]
        expires = timezone.now() + timedelta(days=days) if days else None
        token, key = APIToken.issue(request.user, form.cleaned_data["name"], expires)
        messages.success(request, f"Token '{token.name}' created. Copy its key now: it is not shown again.")
        return self.get(request, new_key=key)


class TokenRevokeView(View):
    def post(self, request, pk):
        token = get_object_or_404(APIToken, pk=pk, user=request.user)
        token.delete()
        messages.success(request, f"Token '{token.name}' revoked.")
        return HttpResponseRedirect(reverse("tokens"))


class ChangeLogView(View):
    """Every recorded create, update and delete (pages, admin, API), newest first."""

    def get(self, request):
        viewable = changelog.tracked_models(request.user)
        chosen = request.GET.get("model", "")
        models = [m for m in viewable if m._meta.label_lower == chosen] if chosen else viewable
        username = request.GET.get("user", "").strip()
        request_id = request.GET.get("request_id", "").strip()
        return render(request, "portal/changelog.html", {
            "records": changelog.recent_changes(models, username=username or None, request_id=request_id or None),
            "model_choices": [(m._meta.label_lower, m._meta.verbose_name) for m in viewable],
            "chosen": chosen, "username": username, "request_id": request_id, "actions": changelog.ACTIONS,
        })


@login_not_required
@require_safe
def favicon(request):
    """Browsers ask for /favicon.ico where a page names no icon (the API's JSON answers, say). The static
    URL is looked up per request: in production it names the hashed file, known only after collectstatic."""
    return HttpResponsePermanentRedirect(static("portal/favicon.svg"))
