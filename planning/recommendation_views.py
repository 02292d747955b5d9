"""Recommendation pages: the list (filters, htmx table, "Run analysis now"), the detail page with the evidence
(figures and a plotly chart drawn by ``charts.js`` from ``json_script`` data) and, for managers, Accept (makes a
draft capacity plan) and Dismiss (with a reason). The rules and the writing are ``planning.recommendations``."""

import django_filters
import django_tables2 as tables
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.views import View
from django.views.generic import DetailView

from inventory.filters import STATE_WIDGET, SearchFilterSet
from portal.exports import export_links
from portal.generic import ModelPermissionMixin, ObjectListView, active_filters

from . import recommendations
from .models import Recommendation

R = Recommendation


class RecommendationFilterSet(SearchFilterSet):
    search_fields = ("title", "summary", "partition")
    status = django_filters.MultipleChoiceFilter(choices=R.Status.choices, widget=STATE_WIDGET)
    kind = django_filters.MultipleChoiceFilter(choices=R.Kind.choices, widget=STATE_WIDGET)
    severity = django_filters.MultipleChoiceFilter(choices=R.Severity.choices, widget=STATE_WIDGET)

    class Meta:
        model = Recommendation
        fields = ["status", "kind", "severity", "partition", "site"]


class RecommendationTable(tables.Table):
    title = tables.Column(linkify=True)
    site = tables.Column(accessor="site__name", verbose_name="Site")
    plan = tables.Column(linkify=True, verbose_name="Plan")
    detected_at = tables.DateTimeColumn(format="Y-m-d H:i", verbose_name="Last detected")

    class Meta:
        model = Recommendation
        fields = ("title", "kind", "severity", "status", "partition", "site", "detected_at", "plan")


class RecommendationListView(ObjectListView):
    queryset = Recommendation.objects.select_related("site", "plan").order_by(
        recommendations.severity_rank(), "-detected_at", "-pk")
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
        return context


class RecommendationView(ModelPermissionMixin, DetailView):
    queryset = Recommendation.objects.select_related("site", "node", "node_model", "plan", "decided_by")
    template_name = "planning/recommendation_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        rec = self.object
        evidence = rec.evidence or {}
        figures = evidence.get("figures", [])
        context.update(
            figures=[f for f in figures if "rows" not in f],
            node_rows=next((f["rows"] for f in figures if "rows" in f), None),
            chart=evidence.get("chart"),
            can_decide=rec.is_open and self.request.user.has_perm("planning.change_recommendation"),
            makes_bom=rec.kind in (R.Kind.CAPACITY, R.Kind.AGEING) and rec.node_model_id and rec.node_count,
        )
        return context


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
                rec = recommendations.accept(rec, request.user, request.POST.get("comment", "").strip())
            else:
                rec = recommendations.dismiss(rec, request.user, request.POST.get("reason", ""))
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
        counts = recommendations.run()
        messages.success(request, "Analysis done: {created} new, {updated} updated, {resolved} resolved, "
                                  "{skipped} skipped (decided lately).".format(**counts))
        return HttpResponseRedirect(reverse("planning:recommendation_list"))


recommendation_urls = [
    path("recommendations/", RecommendationListView.as_view(), name="recommendation_list"),
    path("recommendations/run/", RecommendationRunView.as_view(), name="recommendation_run"),
    path("recommendations/<int:pk>/", RecommendationView.as_view(), name="recommendation_detail"),
    path("recommendations/<int:pk>/accept/", RecommendationDecisionView.as_view(decision="accept"),
         name="recommendation_accept"),
    path("recommendations/<int:pk>/dismiss/", RecommendationDecisionView.as_view(decision="dismiss"),
         name="recommendation_dismiss"),
]
