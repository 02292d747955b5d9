"""The team pages: the list (every team with its figures over a range), a team's page (who it is, its members,
its figures) and its form (a new team, an edit with its members)."""

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views import View
from django_tables2 import RequestConfig

from inventory.goodput import hooks, queries
from inventory.goodput.api.views import assumptions
from inventory.goodput.models import Interruption
from inventory.goodput.tables import InterruptionTable
from inventory.goodput.views import (
    JOB_HOURS,
    TelemetryPermissionMixin,
    dashboard_url,
    interruptions_url,
    page_url,
    percent,
)
from inventory.telemetry import queries as telemetry_queries
from portal.generic import HISTORY_LIMIT, ObjectEditView, history_rows

from . import figures
from .forms import TeamForm, TeamMemberFormSet, TeamRangeForm
from .membership import Wanted, set_members
from .models import Team, TeamMember
from .tables import TeamTable

LATEST_INTERRUPTIONS = 10


class TeamPageMixin(TelemetryPermissionMixin):
    """Range picker and htmx fragment of the team pages (``#dashboard`` redrawn on a range change)."""

    def respond(self, request, context):
        htmx = getattr(request, "htmx", None)
        if htmx and not htmx.history_restore_request and htmx.target == "dashboard":
            return render(request, self.fragment_template_name, {**context, "fragment": True})
        return render(request, self.template_name, context)


def range_context(form, range_key):
    """What a team page's range picker shows."""
    return {"form": form, "ranges": telemetry_queries.RANGE_BUTTONS, "range_key": range_key,
            "span": telemetry_queries.get_range(range_key)}


def history(team):
    """The team's changes and its members' (added, changed, removed), newest first."""
    rows = history_rows(team) + member_history(team)
    return sorted(rows, key=lambda row: (row["record"].history_date, row["record"].history_id), reverse=True)


def member_history(team, limit=HISTORY_LIMIT):
    """The team's memberships added, changed and removed, as ``line_history_rows`` shows lines but named by the
    member's username read with the records (one query, not two a row)."""
    records = (TeamMember.history.filter(team_id=team.pk).select_related("history_user", "user")
               .order_by("-history_date", "-history_id")[:limit])
    rows, previous = [], {}
    for record in sorted(records, key=lambda r: (r.history_date, r.history_id)):
        older, previous[record.id] = previous.get(record.id), record
        line = f"Member {record.user.get_username() if record.user else record.user_id}"
        if older is not None and record.history_type == "~":
            changes = [(f"{line}: {field.replace('_', ' ')}", getattr(older, field), getattr(record, field))
                       for field in ("slurm_user", "role") if getattr(older, field) != getattr(record, field)]
        else:
            changes = [(line, "", "added" if record.history_type == "+" else "removed")]
        rows.append({"record": record, "changes": changes})
    return rows


class TeamListView(TeamPageMixin, View):
    """Every team (the teams, owner teams and the accounts of the range's jobs) with its range figures: one
    ``goodput_by("team")`` and one ``utilization_by("team")`` for all of them, sortable."""

    template_name = "inventory/teams/team_list.html"
    fragment_template_name = "inventory/teams/team_list_body.html"

    def get(self, request):
        form = TeamRangeForm(request.GET)
        range_key = form.range_key()
        rows, groups = figures.team_rows(range_key, gpus=settings.GOODPUT_MTBI_GPUS, job_hours=JOB_HOURS)
        table = TeamTable(rows, order_by=request.GET.get("sort") or "name")
        RequestConfig(request, paginate=False).configure(table)
        return self.respond(
            request,
            {
                **range_context(form, range_key),
                "table": table,
                "cost_basis": queries.cost_basis(groups),
                "currency": settings.COST_CURRENCY,
                "can_add": request.user.has_perm("inventory.add_team"),
            },
        )


class TeamView(TeamPageMixin, View):
    """One team over a range (30 days by default): who it is (description, PI, contact, members and their Slurm
    user names), its allocation, its owned nodes' utilization, its goodput row (the dashboard's figures), its latest
    interruptions and links to the filtered dashboards and lists. A fixed number of queries whatever its jobs, nodes
    and members. A Slurm account no one has made a team of yet shows its figures alone."""

    template_name = "inventory/teams/team_detail.html"
    fragment_template_name = "inventory/teams/team_body.html"

    def get(self, request, name):
        team = Team.objects.select_related("pi").filter(name=name).first()
        if team is None and not figures.exists(name):
            message = f"No team '{name}': no node is owned by it and no Slurm job ran under that account."
            return render(request, "inventory/teams/team_missing.html", {"message": message}, status=404)
        form = TeamRangeForm(request.GET)
        range_key = form.range_key()
        now = timezone.now()
        gpus = settings.GOODPUT_MTBI_GPUS
        found = figures.team_figures(name, range_key, now=now, gpus=gpus, job_hours=JOB_HOURS)
        row = found["goodput"]
        span = telemetry_queries.get_range(range_key)
        rows = list(
            Interruption.objects.visible_to(request.user)
            .select_related("job", "node", "gpu", "xid_event", "transition")
            .filter(account=name, ended_at__gte=span.start(now), ended_at__lt=span.end(now))
            .order_by("-ended_at")[:LATEST_INTERRUPTIONS]
        )
        # Another team's figures are readable, its jobs only by its members and those who read the whole fleet.
        empty = (f"No job of {name} ended in anything but COMPLETED, {span.phrase}."
                 if request.user.has_perm("inventory.read_job", Interruption(account=name))
                 else f"Only the members of {name} see its jobs.")
        latest = InterruptionTable(rows, orderable=False, exclude=("account",), empty_text=empty)
        latest.tickets = hooks.tickets(rows)
        owned = found["owned"]
        return self.respond(
            request,
            {
                **range_context(form, range_key),
                "team": name,
                "object": team,
                "members": team.memberships.select_related("user").order_by("user__username") if team else [],
                "can_edit": team is not None and request.user.has_perm("inventory.edit_team", team),
                "can_add": team is None and request.user.has_perm("inventory.add_team"),
                "history": history(team) if team else [],
                "now": now,
                "goodput": row,
                "goodput_pct": percent(row["goodput_ratio"]) if row else None,
                "queue_wait_pct": percent(row["queue_wait_share"]) if row else None,
                "allocation": found["allocation"],
                "allocations": team_allocations(team, request.user, now) if team else [],
                "utilization": found["utilization"],
                "owned": owned,
                "latest": latest,
                "gpus": gpus,
                "job_hours": JOB_HOURS,
                "currency": settings.COST_CURRENCY,
                "cost_basis": queries.cost_basis(found["goodput_groups"]),
                "assumptions": assumptions(),
                "interruptions_url": page_url("inventory:interruption_list", team=name, range=range_key),
                "infrastructure_url": interruptions_url(range_key, team=name),
                "nodes_url": page_url("inventory:node_list", owner_team=name),
                "goodput_url": dashboard_url(range=range_key, team=name, group_by="partition"),
                # Utilization filters by the owner team: only a team that owns nodes has a view there.
                "utilization_url": page_url("inventory:utilization", range=range_key, team=name)
                if owned["nodes"]
                else None,
            },
        )


def team_allocations(team, user, now):
    """The team's allocations not yet ended, with their use (``allocations.usage.figures``), for those who may read
    them; the team's page shows them with a link to each burn-down."""
    from inventory.allocations import usage
    from inventory.allocations.policy import visible

    allocations = list(visible(team.allocations.select_related("gpu_model", "team"), user)
                       .filter(end__gte=timezone.localdate(now)).order_by("start", "partition"))
    found = usage.figures(allocations, now)
    return [(allocation, found[allocation.pk]) for allocation in allocations]


class TeamEditView(ObjectEditView):
    """A new team (managers and admins), or a team's edit with its members (also the team's own managers: the
    ``inventory.edit_team`` rule). The team and its members are saved in one transaction, the members through
    ``membership.set_members`` as the API saves them."""

    queryset = Team.objects.all()
    form_class = TeamForm
    template_name = "inventory/teams/team_edit.html"

    def has_permission(self):
        if "name" not in self.kwargs:
            return self.request.user.has_perm("inventory.add_team")
        # Some team first, then this one: those who may edit none get a 403 before any lookup, never a 404.
        return self.request.user.has_perm("inventory.edit_team") and self.request.user.has_perm(
            "inventory.edit_team", self.get_object())

    def get_object(self, queryset=None):
        if "name" not in self.kwargs:
            return None
        if not hasattr(self, "_team"):
            self._team = get_object_or_404(Team, name=self.kwargs["name"])
        return self._team

    def get_initial(self):
        # "Make it a team" on the page of a Slurm account that has none: its name given.
        return {"name": self.request.GET.get("name", "")[:100]} if self.object is None else {}

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "user": self.request.user}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.object is not None:
            context.setdefault("members", TeamMemberFormSet(instance=self.object, prefix="members"))
        return context

    def post(self, request, *args, **kwargs):
        self.object = self.get_object()
        with transaction.atomic():
            if self.object is not None:  # locked before the form reads it (``LockedEditMixin``, by name here)
                self.object = Team.objects.select_for_update().get(pk=self.object.pk)
            form = self.get_form()
            members = TeamMemberFormSet(request.POST, instance=self.object, prefix="members") \
                if self.object is not None else None
            if not form.is_valid() or (members is not None and not members.is_valid()):
                transaction.set_rollback(True)
                return self.render_to_response(self.get_context_data(form=form, members=members), status=400)
            created = self.object is None
            self.object = form.save()
            if members is not None:
                wanted = [Wanted(f.cleaned_data["user"], f.cleaned_data["slurm_user"], f.cleaned_data["role"])
                          for f in members.forms
                          if f.cleaned_data.get("user") and not f.cleaned_data.get("DELETE")]
                set_members(self.object, wanted, reason=form.cleaned_data.get("change_reason", ""))
        messages.success(request, f"{'Created' if created else 'Saved'} team {self.object}.")
        return HttpResponseRedirect(self.object.get_absolute_url() or self.request.path)
