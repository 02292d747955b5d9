"""Recommendation pages: the list (filters, htmx table, "Run analysis now"), the detail page with the evidence
(figures and a plotly chart drawn by ``charts.js`` from ``json_script`` data) and, for managers, Accept (makes a
draft capacity plan) and Dismiss (with a reason). The rules are ``rules``, the writing ``store``."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import urlencode
from django.views import View
from django.views.generic import DetailView

from inventory import capacity
from inventory.models import PartitionMove
from portal.exports import export_links
from portal.generic import ModelPermissionMixin, ObjectListView, active_filters
from portal.models import PageVisit

from ..dashboard import RECOMMENDATIONS_VISIT
from . import actions, store
from .filters import RecommendationFilterSet
from .models import Recommendation
from .tables import RecommendationTable

R = Recommendation


class RecommendationListView(ObjectListView):
    queryset = Recommendation.objects.select_related("site", "plan").order_by(
        store.severity_rank(), "-detected_at", "-pk")
    filterset_class = RecommendationFilterSet
    table_class = RecommendationTable
    template_name = "planning/recommendation_list.html"

    def get_filterset_kwargs(self, filterset_class):
        """The open recommendations on a first visit (no query); once the filters are used, what they say."""
        kwargs = super().get_filterset_kwargs(filterset_class)
        if not self.request.GET:
            kwargs["data"] = QueryDict(mutable=True)
            kwargs["data"].setlist("status", [R.Status.OPEN])
        return kwargs

    def get_table_kwargs(self):
        if self.request.GET:  # the filters say what to show (the first visit shows the open ones)
            empty = "No recommendations match these filters."
        else:
            empty = ("No open recommendations: the last analysis found nothing to add, fix or replace. It runs daily "
                     "over the last week of telemetry and Slurm records")
            empty += "; Run analysis now runs it at once." if self.request.user.has_perm(
                "planning.add_recommendation") else "."
        return {**super().get_table_kwargs(), "empty_text": empty}

    def get_context_data(self, **kwargs):
        # Recommendations are made by the analysis, never added by hand: no "Add" or "Import" button.
        context = super(ObjectListView, self).get_context_data(**kwargs)
        query = self.request.GET.copy()
        query.pop("page", None)
        query["_export"] = "csv"
        context.update(opts=R._meta, add_url=None, import_url=None, export_url=f"?{query.urlencode()}",
                       export_links=export_links(self.request),
                       active_filters=active_filters(context.get("filter")),
                       can_run=self.request.user.has_perm("planning.add_recommendation"))
        PageVisit.record(self.request.user, RECOMMENDATIONS_VISIT)  # the home page counts what is new since
        return context


class RecommendationView(ModelPermissionMixin, DetailView):
    queryset = Recommendation.objects.select_related("site", "node", "node_model", "plan", "decided_by")
    template_name = "planning/recommendation_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        rec = self.object
        evidence = rec.evidence or {}
        figures = evidence.get("figures", [])
        node_rows = next((f["rows"] for f in figures if "rows" in f), None)
        context.update(
            figures=[f for f in figures if "rows" not in f],
            node_rows=node_rows,
            # Ageing has its own columns; other kinds' rows show their own keys (hostname, idle days, cost…).
            node_columns=[key.replace("_", " ").capitalize() for key in node_rows[0]]
            if node_rows and rec.kind != R.Kind.AGEING else None,
            # Further tables of the evidence (reliability-bound: its reasons and GPU models), each under its label.
            more_tables=[(f["label"], [key.replace("_", " ").capitalize() for key in f["rows"][0]], f["rows"])
                         for f in [f for f in figures if "rows" in f][1:] if f["rows"]],
            chart=evidence.get("chart"),
            ruled_out=evidence.get("ruled_out", []),
            can_decide=rec.is_open and self.request.user.has_perm("planning.change_recommendation"),
            makes_bom=rec.kind in (R.Kind.CAPACITY, R.Kind.AGEING) and rec.node_model_id and rec.node_count,
            # The partition's GPUs now, as the home page, a plan and the API count them (the evidence is as detected).
            capacity_now=capacity.count(partition=rec.partition) if rec.partition else None,
            # Beyond accepting: the registered actions (notify the owning team, open a ticket) and a move.
            advice_actions=actions.offered(rec, self.request.user),
            actions_done=rec.actions.all(),
            moves=PartitionMove.objects.filter(recommendation=rec.pk).order_by("pk"),
            move_url=move_url(rec) if self.request.user.has_perm("inventory.propose_partition_move") else None,
        )
        return context


def move_url(rec):
    """The partition move form pre-filled with a reclaim recommendation's nodes; None for other kinds."""
    if not actions.is_reclaim(rec):
        return None
    rows = actions.reclaim_rows(rec)
    query = {"nodes": ",".join(row["hostname"] for row in rows), "recommendation": rec.pk,
             "reason": f"Recommendation #{rec.pk}: {rec.title}. "
                       + "; ".join(f"{row['hostname']} idle {row['idle_days']} days, {row['idle_gpu_hours']:,.0f} "
                                   "idle GPU-hours" for row in rows) + "."}
    return f"{reverse('inventory:partitionmove_add')}?{urlencode(query)}"


class RecommendationActionView(ModelPermissionMixin, View):
    """POST: run a registered action (``actions.perform``) and say what it did."""

    permission_action = "change"  # those who decide recommendations act on them

    def get_queryset(self):
        return Recommendation.objects.all()

    def post(self, request, pk, key):
        rec = get_object_or_404(Recommendation, pk=pk)
        try:
            done = actions.perform(key, rec, request.user)  # PermissionDenied: a 403
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(request, done.said)
        return HttpResponseRedirect(f"{rec.get_absolute_url()}#advice-actions")


class RecommendationDecisionView(ModelPermissionMixin, View):
    """POST: accept (→ the new draft plan's page) or dismiss (``reason`` required) an open recommendation."""

    permission_action = "change"
    decision = None

    def get_queryset(self):
        return Recommendation.objects.all()

    def post(self, request, pk):
        rec = get_object_or_404(Recommendation, pk=pk)
        try:
            if self.decision == "accept":
                rec = store.accept(rec, request.user, request.POST.get("comment", "").strip())
            else:
                rec = store.dismiss(rec, request.user, request.POST.get("reason", ""))
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
            return HttpResponseRedirect(rec.get_absolute_url())
        if rec.plan_id:
            messages.success(request, f"Accepted: draft capacity plan “{rec.plan}” created from it.")
            return HttpResponseRedirect(rec.plan.get_absolute_url())
        messages.success(request, "Dismissed.")
        return HttpResponseRedirect(rec.get_absolute_url())


class RecommendationRunView(ModelPermissionMixin, View):
    """POST: run the analysis now (the same as the daily task) and say what it found."""

    permission_action = "add"

    def get_queryset(self):
        return Recommendation.objects.all()

    def post(self, request):
        counts = store.run()
        messages.success(request, "Analysis done: {created} new, {updated} updated, {resolved} resolved, "
                                  "{skipped} skipped (decided lately).".format(**counts))
        return HttpResponseRedirect(reverse("planning:recommendation_list"))
