"""Capacity plan pages: list, detail (workloads with their GPU-hours, bill of materials, workflow events and
buttons), add and edit (name, description, horizon; only while draft). Workloads and bill-of-materials lines
are edited through the API or the admin. The workflow itself is ``planning.plans``."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path
from django.views import View

from portal.generic import ModelPermissionMixin, ObjectEditView, ObjectListView, ObjectView, object_urls

from . import filters, plans, sizing, tables
from .models import SCENARIO_FIELDS, CapacityPlan

S = CapacityPlan.Status


class CapacityPlanForm(forms.ModelForm):
    class Meta:
        model = CapacityPlan
        fields = ["name", "description", "horizon_months", *SCENARIO_FIELDS]


class CapacityPlanListView(ObjectListView):
    queryset = (CapacityPlan.objects.select_related("owner", "submitted_by", "decided_by")
                .annotate(workload_count=Count("workloads", distinct=True), item_count=Count("items", distinct=True)))
    filterset_class = filters.CapacityPlanFilterSet
    table_class = tables.CapacityPlanTable


def workload_rows(plan):
    """(workload, GPU-hours or None when it cannot be sized) for each of the plan's workloads."""
    rows, gpus = [], None
    for workload in plan.workloads.select_related("gpu_model"):
        gpus = gpus if gpus is not None else sizing.catalog_gpus()
        try:
            hours = sizing.size(workload.workload(), gpus)["gpu_hours"]
        except (ValueError, ValidationError):
            hours = None
        rows.append((workload, hours))
    return rows


def workflow_actions(plan, user):
    """The buttons this user may press on this plan: (action, label, needs a comment)."""
    if not user.has_perm("planning.change_capacityplan"):
        return []
    if plan.status == S.DRAFT:
        return [("submit", "Submit", False)]
    if plan.status == S.SUBMITTED:
        if plan.submitted_by_id == user.pk:
            return []  # a second manager approves or rejects
        return [("approve", "Approve", False), ("reject", "Reject", True)]
    if plan.status == S.REJECTED:
        return [("reopen", "Reopen", False)]
    return []


class CapacityPlanView(ObjectView):
    queryset = CapacityPlan.objects.select_related("owner", "submitted_by", "decided_by")
    template_name = "planning/plan_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        plan = self.object
        context.update(
            workloads=workload_rows(plan),
            bom=plans.bill_of_materials(plan),
            events=plan.events.all(),
            actions=workflow_actions(plan, self.request.user),
            can_edit=context["can_edit"] and plan.is_draft,
        )
        return context


class CapacityPlanEditView(ObjectEditView):
    """Add or edit a plan's name, description and horizon; a plan that is not a draft is refused."""

    queryset = CapacityPlan.objects.all()
    form_class = CapacityPlanForm

    def dispatch(self, request, *args, **kwargs):
        if "pk" in kwargs and request.user.has_perm("planning.change_capacityplan"):
            plan = get_object_or_404(CapacityPlan, pk=kwargs["pk"])
            try:
                plans.check_editable(plan)
            except ValidationError as error:
                messages.error(request, " ".join(error.messages))
                return HttpResponseRedirect(plan.get_absolute_url())
        return super().dispatch(request, *args, **kwargs)

    def form_valid(self, form):
        if form.instance.pk is None and form.instance.owner_id is None:
            form.instance.owner = self.request.user
        return super().form_valid(form)


class CapacityPlanTransitionView(ModelPermissionMixin, View):
    """POST ``comment``: submit, approve, reject or reopen the plan; refusals from ``planning.plans`` are shown
    as messages on the plan page."""

    permission_action = "change"
    action = None

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def post(self, request, pk):
        plan = get_object_or_404(CapacityPlan, pk=pk)
        try:
            plan = plans.TRANSITIONS[self.action](plan, request.user, request.POST.get("comment", "").strip())
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(request, f"{plan} is now {plan.get_status_display().lower()}.")
        return HttpResponseRedirect(plan.get_absolute_url())


plan_edit = CapacityPlanEditView.as_view()

plan_urls = [
    # Registered before object_urls' generic add/edit (same routes and names), so these win.
    path("capacity-plans/add/", plan_edit, name="capacityplan_add"),
    path("capacity-plans/<int:pk>/edit/", plan_edit, name="capacityplan_edit"),
    *object_urls(CapacityPlan, CapacityPlanListView, CapacityPlanView, CapacityPlanForm, extra=[
        (f"<int:pk>/{action}/", CapacityPlanTransitionView.as_view(action=action), action)
        for action in plans.TRANSITIONS
    ]),
]
