from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponsePermanentRedirect, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.views import View
from django.views.decorators.http import require_safe

from . import changelog, registry
from .forms import TokenForm
from .models import APIToken, WorkerHeartbeat


class HomeView(View):
    """The dashboard: the tiles and panels that apps register (``portal.registry``) and the user may see, e.g.
    utilization against its target, idle cost, SLA breaches, spend, then the least-used nodes, recommendations,
    tickets breaching their SLA, renewal alerts; the fleet by state and site under them."""

    def get(self, request):
        tiles = registry.tiles(request)
        panels, wide_panels = registry.panels_by_width(request)
        if not (tiles or panels or wide_panels):  # an account without a role (no group yet) sees how to get one
            return render(request, "portal/no_role.html")
        heartbeat = WorkerHeartbeat.objects.order_by("-last_seen").first()
        return render(request, "portal/home.html", {
            "tiles": tiles, "panels": panels, "wide_panels": wide_panels, "heartbeat": heartbeat,
            "heartbeat_stale": heartbeat is None or timezone.now() - heartbeat.last_seen > timedelta(minutes=3),
        })


class SearchView(View):
    """Global search over the providers that apps register (``portal.registry``): the one object that the term
    names exactly (a hostname, a ticket number...) opens; anything else is listed by kind, exact matches first."""

    def get(self, request):
        term = request.GET.get("q", "").replace("\x00", "").strip()  # PostgreSQL text holds no NUL: none matches
        groups = registry.search(term, request.user)
        exact = [obj for group in groups for obj in group.exact]
        if len(exact) == 1:
            return HttpResponseRedirect(exact[0].get_absolute_url())
        groups.sort(key=lambda group: not group.exact)  # stable: the provider order otherwise
        looks_at = "; ".join(registry.search_looks_at(request.user))  # the parts have their own "and"s
        return render(request, "portal/search.html", {"term": term, "groups": groups, "looks_at": looks_at})


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
