from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.mixins import PermissionRequiredMixin
from django.http import HttpResponsePermanentRedirect, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View
from django.views.decorators.http import require_safe

from . import changelog, registry
from .forms import TokenForm
from .models import APIToken, TablePreference, WorkerHeartbeat
from .tables import TABLES_WITH_CHOICE, ChangeTable, saved_columns

# A worker reports as it starts (``portal.tasks.report_at_start``), then every minute (beat): older is stale.
HEARTBEAT_STALE = timedelta(minutes=3)


class HomeView(View):
    """The dashboard: the tiles and panels that apps register (``portal.registry``) and the user may see, e.g.
    utilization against its target, idle cost, SLA breaches, spend, then the least-used nodes, recommendations,
    tickets breaching their SLA, renewal alerts; the fleet by state and site under them. Above them, what awaits the
    user's decision (``registry.decisions``: plans, requests, Slurm syncs, new recommendations)."""

    def get(self, request):
        tiles = registry.tiles(request)
        panels, wide_panels = registry.panels_by_width(request)
        if not (tiles or panels or wide_panels):  # an account without a role (no group yet) sees how to get one
            return render(request, "portal/no_role.html")
        heartbeat = WorkerHeartbeat.objects.order_by("-last_seen").first()
        return render(request, "portal/home.html", {
            "tiles": tiles, "panels": panels, "wide_panels": wide_panels, "heartbeat": heartbeat,
            "heartbeat_stale": heartbeat is None or timezone.now() - heartbeat.last_seen > HEARTBEAT_STALE,
            "decisions": registry.decisions(request),
        })


class SearchView(View):
    """Global search over the providers that apps register (``portal.registry``): the one object that the term
    names exactly (a hostname, a ticket number...) opens; anything else is listed by kind, exact matches first."""

    accepts_nul = True  # a pasted term may carry a NUL: dropped below, not refused (portal.middleware)

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


class AllTokensView(PermissionRequiredMixin, View):
    """Every user's API tokens, for an admin (``portal.view_apitoken``: admins only), ``?user=`` for one user's;
    each revocable. The same list is ``/api/tokens/``."""

    permission_required = "portal.view_apitoken"

    def get(self, request):
        username = request.GET.get("user", "").strip()
        tokens = APIToken.objects.select_related("user").order_by("user__username", "-created", "pk")
        if username:
            tokens = tokens.filter(user__username=username)
        return render(request, "portal/tokens_all.html", {"tokens": tokens, "username": username})


class TokenRevokeView(View):
    """Revoke one of one's own tokens, or (an admin: ``portal.delete_apitoken``) anyone's; back to the list it
    was revoked from."""

    def post(self, request, pk):
        if request.user.has_perm("portal.delete_apitoken"):
            token = get_object_or_404(APIToken.objects.select_related("user"), pk=pk)
        else:
            token = get_object_or_404(APIToken.objects.select_related("user"), pk=pk, user=request.user)
        token.delete()
        whose = "" if token.user_id == request.user.pk else f" of {token.user.get_username()}"
        messages.success(request, f"Token '{token.name}'{whose} revoked.")
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure()):
            back = reverse("tokens")
        return HttpResponseRedirect(back)


class ChangeLogView(View):
    """Every recorded create, update and delete (pages, admin, API), newest first."""

    def get(self, request):
        viewable = changelog.tracked_models(request.user)
        chosen = request.GET.get("model", "")
        models = [m for m in viewable if m._meta.label_lower == chosen] if chosen else viewable
        username = request.GET.get("user", "").strip()
        request_id = request.GET.get("request_id", "").strip()
        records = changelog.recent_changes(models, username=username or None, request_id=request_id or None)
        saved = saved_columns(request.user, ChangeTable)
        empty = "No changes recorded for these filters." if username or chosen or request_id else "No changes recorded."
        return render(request, "portal/changelog.html", {
            "records": records,
            "table": ChangeTable(records, empty_text=empty, **ChangeTable.column_kwargs(saved)),
            "column_menu": ChangeTable.column_menu(saved, request.get_full_path()),
            "model_choices": [(m._meta.label_lower, m._meta.verbose_name) for m in viewable],
            "chosen": chosen, "username": username, "request_id": request_id,
        })


class TableColumnsView(View):
    """Saves a user's choice of columns for a list table (``portal.tables.ColumnChoice``), or resets it, then
    returns to the list with its filters, sort and page. A table or column that does not exist is refused (400)."""

    http_method_names = ["post"]

    def post(self, request):
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure()):
            back = reverse("home")
        name = request.POST.get("table", "")
        table = TABLES_WITH_CHOICE.get(name)
        if table is None:
            return self.refuse(request, back, f"“{name}” is not a table whose columns can be chosen.")
        preference = TablePreference.objects.filter(user=request.user, table=table.__name__)
        if request.POST.get("action") == "reset":
            preference.delete()
            messages.success(request, "The list shows its default columns again.")
            return HttpResponseRedirect(back)
        names = [*table.required_columns, *request.POST.getlist("columns")]
        unknown = [name for name in names if name not in table.base_columns]
        if unknown:
            return self.refuse(request, back, f"This table has no column {', '.join(map(repr, unknown))}.")
        try:
            position = {name: int(request.POST.get(f"position-{name}") or 0) for name in names}
        except ValueError:
            return self.refuse(request, back, "A column's position must be a whole number.")
        order = list(table.base_columns)
        chosen = sorted(dict.fromkeys(names), key=lambda name: (position[name], order.index(name)))
        if all(name in table.required_columns for name in chosen):  # nothing ticked: as a reset
            preference.delete()
            messages.success(request, "No column ticked: the list shows its default columns.")
        else:
            TablePreference.objects.update_or_create(user=request.user, table=table.__name__,
                                                     defaults={"columns": chosen})
            messages.success(request, "Columns saved.")
        return HttpResponseRedirect(back)

    def refuse(self, request, back, error):
        return render(request, "portal/table_columns_error.html", {"error": error, "back": back}, status=400)


@login_not_required
@require_safe
def favicon(request):
    """Browsers ask for /favicon.ico where a page names no icon (the API's JSON answers, say). The static
    URL is looked up per request: in production it names the hashed file, known only after collectstatic."""
    return HttpResponsePermanentRedirect(static("portal/favicon.svg"))
