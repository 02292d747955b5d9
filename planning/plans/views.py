"""Capacity plan pages: list, detail (workloads with their sizing summary, bill of materials, workflow events
and buttons), add and edit (name, description, horizon, scenario assumptions; only while draft), and, while the
plan is a draft, its workloads and bill-of-materials lines added, edited and deleted on the plan page.

Workloads and lines are edited with plain forms (a page of their own, then back to the plan) that htmx turns
into inline ones: the form opens in its section of the plan page and the section is redrawn after a save or
delete. Changing a plan needs the change permission (others get 403); a plan that is not a draft refuses every
change with a message. The workflow itself is ``workflow``.

The analysis page: demand against capacity month by month, the scenarios side by side, the recommendation and
its charts. The plan page loads it with htmx (the forecast takes a moment); on its own URL it is a whole page. The
figures are ``analysis``; these views only lay them out."""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views import View
from django.views.generic import TemplateView
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from portal.generic import (
    HISTORY_LIMIT,
    ModelPermissionMixin,
    ObjectEditView,
    ObjectListView,
    ObjectView,
    line_history_rows,
)

from ..calibration.calibration import calibrate, times
from ..goodput import goodput_used, time_to_result
from ..policy import decides_plan
from ..sizing.views import display
from . import bom, filters, months, scenarios, tables, workflow
from .forms import CapacityPlanForm, PlanItemForm, PlanWorkloadForm
from .models import CapacityPlan, PlanItem, PlanWorkload
from .sized import size_all
from .summary import analyse_and_store

S = CapacityPlan.Status


def filters_in_use(request):
    """Whether the list's query narrows it (paging and sorting do not): an empty list then means "no match"."""
    return any(value for key, value in request.GET.items() if key not in ("page", "sort", "per_page"))


class CapacityPlanListView(ObjectListView):
    queryset = (CapacityPlan.objects.select_related("owner", "submitted_by", "decided_by")
                .annotate(workload_count=Count("workloads", distinct=True), item_count=Count("items", distinct=True)))
    filterset_class = filters.CapacityPlanFilterSet
    table_class = tables.CapacityPlanTable

    def get_table_kwargs(self):
        if filters_in_use(self.request):
            empty = "No capacity plans match these filters."
        else:
            empty = ("No capacity plans yet. Add capacity plan starts an empty one; accepting a recommendation "
                     "(Planning → Recommendations) starts one with the suggested nodes in its bill of materials.")
        return {**super().get_table_kwargs(), "empty_text": empty}


# The sizing figures the workloads table shows for each workload, with their column headers.
SUMMARY_FIGURES = ["gpu_hours", "wall_clock_days", "gpus", "fit_class"]
SUMMARY_HEADERS = ["GPU-hours", "Days", "GPUs", "Fit"]


@dataclass
class WorkloadRow:
    workload: PlanWorkload
    sizing: Any  # sizing.Sizing, or None when the workload cannot be sized
    problem: str  # why it cannot be sized
    sizing_url: str  # the sizing page for this workload, every figure and the comparison of GPU models
    calibration: Any = None  # calibration.Run: what its Slurm account's jobs show; None without an account
    time_to_result: Any = None  # goodput.TimeToResult of its jobs; None without an account or job name

    @property
    def gpu_hours(self):
        return self.sizing["gpu_hours"] if self.sizing else None

    @property
    def realized(self):
        """What its Slurm account's jobs realized against the model's estimate once its window is over, else why
        there is no figure yet (the Calibration page's figures)."""
        run = self.calibration
        if run is None:
            return ""
        if run.counted:
            return (f"Realized {display(run.realized)} GPU-hours in {run.window} ({run.jobs} jobs under "
                    f"{run.team}) against the model's {display(run.estimate)}: {times(run.ratio)}.")
        return " ".join(run.notes)

    @property
    def goodput(self):
        """The goodput it is sized with and its basis (``goodput.goodput_used``); None when it cannot be sized."""
        return goodput_used(self.workload, self.sizing)

    @property
    def summary(self):
        """The summary figures as shown (a dash each when it cannot be sized)."""
        return [display(self.sizing[key] if self.sizing else None) for key in SUMMARY_FIGURES]


def workload_rows(plan):
    """A ``WorkloadRow`` for each of the plan's workloads, with what its jobs realized (``calibration``) and their
    time to result: eight queries however many workloads and jobs there are."""
    rows, page = [], reverse("planning:sizing")
    runs = calibrate(plan.workloads.all()).runs
    for each in size_all(plan.workloads.select_related("gpu_model")):  # sized as the analysis sizes them
        workload = each.workload
        url = f"{page}?{urlencode(each.query)}"
        rows.append(WorkloadRow(workload, each.result, each.error, url, runs.get(workload.pk)))
    found = time_to_result([row.workload for row in rows],
                           {row.workload.pk: row.sizing["wall_clock_days"] for row in rows if row.sizing})
    for row in rows:
        row.time_to_result = found.get(row.workload.pk)
    return rows


def workflow_actions(plan, user):
    """The buttons this user may press on this plan: (action, label, needs a comment)."""
    if not user.has_perm("planning.change_capacityplan"):
        return []
    if plan.status == S.DRAFT:
        return [("submit", "Submit", False)]
    if plan.status == S.SUBMITTED:
        # Asked of the rule itself, not has_perm: Django lets a superuser through every permission, four eyes too.
        if not decides_plan(user, plan):
            return []
        return [("approve", "Approve", False), ("reject", "Reject", True)]
    if plan.status == S.REJECTED:
        return [("reopen", "Reopen", False)]
    return []


def plan_fields(plan, fields):
    """The plan's fields as the page shows them: its months as "YYYY-MM to YYYY-MM (N months)", not a date and a
    count."""
    rows = []
    for label, value, link in fields:
        if label == CapacityPlan._meta.get_field("first_month").verbose_name:
            value = f"{months.label(plan.first_month)} to {months.label(plan.last_month)} ({plan.horizon_months} " \
                    f"month{'s' if plan.horizon_months != 1 else ''})"
            label = "months"
        rows.append((label, value, link))
    return rows


class CapacityPlanView(ObjectView):
    queryset = CapacityPlan.objects.select_related("owner", "submitted_by", "decided_by")
    template_name = "planning/plan_detail.html"
    hidden_fields = (*ObjectView.hidden_fields, "horizon_months", "summary", "summary_at")  # shown elsewhere

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        plan = self.object
        context["fields"] = plan_fields(plan, context["fields"])
        # The plan's own changes and those of its workloads and bill-of-materials lines, in one table.
        history = [*context["history"], *line_history_rows(PlanWorkload, plan_id=plan.pk),
                   *line_history_rows(PlanItem, plan_id=plan.pk)]
        history.sort(key=lambda row: row["record"].history_date, reverse=True)
        context.update(
            **section_context(plan, self.request.user),
            events=plan.events.all(),
            actions=workflow_actions(plan, self.request.user),
            history=history[:HISTORY_LIMIT],
        )
        return context


def section_context(plan, user):
    """What the workloads and bill-of-materials sections show; ``can_edit``: this user may change this plan now."""
    return {
        "object": plan,
        "workloads": workload_rows(plan),
        "summary_headers": SUMMARY_HEADERS,
        "bom": workflow.bill_of_materials(plan),
        "can_edit": plan.is_draft and user.has_perm("planning.change_capacityplan"),
        "can_confirm": user.has_perm("planning.confirm_bom_price"),
    }


class CapacityPlanEditView(ObjectEditView):
    """Add or edit a plan's name, description and horizon; a plan that is not a draft is refused."""

    queryset = CapacityPlan.objects.all()
    form_class = CapacityPlanForm

    def dispatch(self, request, *args, **kwargs):
        if "pk" in kwargs and request.user.has_perm("planning.change_capacityplan"):
            plan = get_object_or_404(CapacityPlan, pk=kwargs["pk"])
            try:
                workflow.check_editable(plan)
            except ValidationError as error:
                messages.error(request, " ".join(error.messages))
                return HttpResponseRedirect(plan.get_absolute_url())
        return super().dispatch(request, *args, **kwargs)

    def form_valid(self, form):
        if form.instance.pk is None and form.instance.owner_id is None:
            form.instance.owner = self.request.user
        elif form.instance.pk is not None:
            try:  # again on the row as locked by post(): a plan submitted since dispatch() looked stays as it is
                workflow.check_editable(form.instance)
            except ValidationError as error:
                messages.error(self.request, " ".join(error.messages))
                return HttpResponseRedirect(form.instance.get_absolute_url())
        return super().form_valid(form)


class CapacityPlanTransitionView(ModelPermissionMixin, View):
    """POST ``comment``: submit, approve, reject or reopen the plan; refusals from ``planning.plans.workflow`` are shown
    as messages on the plan page."""

    permission_action = "change"
    action = None

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def post(self, request, pk):
        plan = get_object_or_404(CapacityPlan, pk=pk)
        try:
            plan = workflow.TRANSITIONS[self.action](plan, request.user, request.POST.get("comment", "").strip())
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(request, f"{plan} is now {plan.get_status_display().lower()}.")
        return HttpResponseRedirect(plan.get_absolute_url())


class PlanBOMFillView(ModelPermissionMixin, View):
    """The bill of materials from a scenario (``planning.plans.bom``): GET shows what ``?scenario=`` (default: the
    recommended one) would write and which lines it replaces; POST writes it. Refusals (not a draft, rent, no
    gap, no node model or price) come back as a message on the plan page."""

    permission_action = "change"

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def back(self, plan, error=None):
        if error is not None:
            messages.error(self.request, " ".join(error.messages))
        return HttpResponseRedirect(f"{plan.get_absolute_url()}#bill-of-materials")

    def get(self, request, pk):
        plan = get_object_or_404(CapacityPlan.objects.select_related("site", "node_model"), pk=pk)
        try:
            workflow.check_editable(plan)
            bill = bom.derive(plan, request.GET.get("scenario") or None)
        except ValidationError as error:
            return self.back(plan, error)
        return render(request, "planning/plan_bom_fill.html", {
            "object": plan, "bill": bill, "current": workflow.bill_of_materials(plan), "opts": CapacityPlan._meta,
            "form_action": reverse("planning:capacityplan_bom_fill", args=[plan.pk]),
        })

    def post(self, request, pk):
        plan = get_object_or_404(CapacityPlan, pk=pk)
        try:
            bill, replaced = bom.fill(plan, request.POST.get("scenario") or None)
        except ValidationError as error:
            return self.back(plan, error)
        messages.success(request, f"Filled the bill of materials from the {bill.kind} scenario: {len(bill.lines)} "
                                  f"lines, {bill.total:,.2f} {bill.currency} (the scenario's capex)"
                         + (f"; replaced {replaced} line(s), which stay in the history." if replaced else "."))
        return self.back(plan)


# --- workloads and bill-of-materials lines, on the plan page ---------------------------------------------


@dataclass(frozen=True)
class Part:
    """A list of a plan edited on its page: its model, form, section (template and HTML id) and URL names."""

    name: str  # URL segment: workloads, items
    singular: str  # URL name part: workload, item
    label: str  # for people
    model: Any
    form_class: Any
    template: str
    section_id: str

    def url(self, action, plan, obj=None):
        return reverse(f"planning:capacityplan_{self.singular}_{action}", args=[plan.pk, *([obj.pk] if obj else [])])


PARTS = [
    Part("workloads", "workload", "workload", PlanWorkload, PlanWorkloadForm, "planning/plan_workloads.html",
         "workloads"),
    Part("items", "item", "bill-of-materials line", PlanItem, PlanItemForm, "planning/plan_items.html",
         "bill-of-materials"),
]


class PlanPartView(ModelPermissionMixin, View):
    """Base of the views on a plan's workloads or lines: the plan's change permission, a draft plan."""

    permission_action = "change"
    part: Part = None

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def refuse(self, plan):
        """A redirect to the plan with the reason when it cannot be changed; None when it can."""
        try:
            workflow.check_editable(plan)
        except ValidationError as error:
            messages.error(self.request, " ".join(error.messages))
            if self.request.htmx:
                return HttpResponseClientRedirect(plan.get_absolute_url())
            return HttpResponseRedirect(plan.get_absolute_url())
        return None

    def section(self, plan, **extra):
        """The part's section of the plan page alone (htmx swaps it in)."""
        context = {**section_context(plan, self.request.user), "part": self.part, **extra}
        return render(self.request, self.part.template, context)

    def done(self, plan, message):
        if self.request.htmx:  # the section redrawn; ``plan-changed`` tells the rest of the page (the analysis)
            return trigger_client_event(self.section(plan, notice=message), "plan-changed")
        messages.success(self.request, message)
        return HttpResponseRedirect(f"{plan.get_absolute_url()}#{self.part.section_id}")


class PlanSectionView(PlanPartView):
    """GET: the section alone for htmx (e.g. after Cancel); the plan page otherwise."""

    permission_action = "view"

    def get(self, request, pk):
        plan = get_object_or_404(CapacityPlan, pk=pk)
        if not request.htmx:
            return HttpResponseRedirect(f"{plan.get_absolute_url()}#{self.part.section_id}")
        return self.section(plan)


class PlanPartEditView(PlanPartView):
    """Add (no ``part_pk``) or edit a workload or line. Invalid input shows the form again with the messages
    and saves nothing. With htmx the form opens in the section and the redrawn section replaces it."""

    def get_instance(self, plan, part_pk):
        if part_pk is None:
            return self.part.model(plan=plan)
        obj = get_object_or_404(self.part.model, pk=part_pk, plan=plan)
        obj.plan = plan  # clean() reads the plan's horizon
        return obj

    def render_form(self, plan, form):
        obj = form.instance if form.instance.pk else None
        action = self.part.url("edit", plan, obj) if obj else self.part.url("add", plan)
        title = f"Edit {self.part.label} {obj}" if obj else f"Add a {self.part.label}"
        extra = {"form": form, "form_action": action, "form_title": title}
        if self.request.htmx:
            return self.section(plan, **extra)
        return render(self.request, "planning/plan_part_edit.html",
                      {"object": plan, "part": self.part, "opts": CapacityPlan._meta, **extra})

    def get(self, request, pk, part_pk=None):
        plan = get_object_or_404(CapacityPlan, pk=pk)
        if refused := self.refuse(plan):
            return refused
        return self.render_form(plan, self.part.form_class(instance=self.get_instance(plan, part_pk)))

    def post(self, request, pk, part_pk=None):
        with transaction.atomic():  # the plan locked: it cannot be submitted halfway through
            plan = get_object_or_404(CapacityPlan.objects.select_for_update(), pk=pk)
            if refused := self.refuse(plan):
                return refused
            form = self.part.form_class(request.POST, instance=self.get_instance(plan, part_pk))
            if not form.is_valid():
                return self.render_form(plan, form)
            created = form.instance.pk is None
            obj = form.save()
        return self.done(plan, f"{'Added' if created else 'Saved'} {self.part.label} {obj}.")


class PlanPartDeleteView(PlanPartView):
    """GET: a confirmation page; POST: delete (htmx asks for confirmation in the browser instead)."""

    def get(self, request, pk, part_pk):
        plan = get_object_or_404(CapacityPlan, pk=pk)
        if refused := self.refuse(plan):
            return refused
        obj = get_object_or_404(self.part.model, pk=part_pk, plan=plan)
        return render(request, "planning/plan_part_delete.html", {
            "object": plan, "part": self.part, "item": obj, "opts": CapacityPlan._meta,
            "form_action": self.part.url("delete", plan, obj),
        })

    def post(self, request, pk, part_pk):
        with transaction.atomic():
            plan = get_object_or_404(CapacityPlan.objects.select_for_update(), pk=pk)
            if refused := self.refuse(plan):
                return refused
            obj = get_object_or_404(self.part.model, pk=part_pk, plan=plan)
            name = str(obj)
            obj.delete()
        return self.done(plan, f"Deleted {self.part.label} {name}.")


class PlanItemConfirmPriceView(ModelPermissionMixin, View):
    """POST: confirm a line's estimated price (``bom.confirm_price``); the section is redrawn (htmx) or the plan
    page shown with the answer."""

    permission_action = "view"

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def post(self, request, pk, part_pk):
        if not request.user.has_perm("planning.confirm_bom_price"):  # before the lookup: a 403, never a 404
            raise PermissionDenied("Only those who edit plans, or procurement, confirm a price.")
        plan = get_object_or_404(CapacityPlan, pk=pk)
        item = get_object_or_404(PlanItem, pk=part_pk, plan=plan)
        try:
            item = bom.confirm_price(item, request.user)  # PermissionDenied: a 403
        except ValidationError as error:
            message, level = " ".join(error.messages), messages.ERROR
        else:
            message, level = f"Confirmed the price of {item.what}: {item.unit_cost:,.2f} {item.currency}.", None
        if request.htmx:
            return render(request, "planning/plan_items.html", {**section_context(plan, request.user),
                                                                   "notice": message})
        messages.add_message(request, level or messages.SUCCESS, message)
        return HttpResponseRedirect(f"{plan.get_absolute_url()}#bill-of-materials")


# --- The analysis page -----------------------------------------------------------------------------------


def _month(day):
    return months.label(day)


def capacity_chart(an):
    """Demand (history, forecast with its 80 % band) against capacity now and with each scenario, GPU-hours."""
    history = an.forecast.history
    months = [m for m, _ in history] + an.months
    before = [None] * len(history)
    band = an.forecast.lower is not None
    workloads = [row[2] + row[3] for row in an.rows]  # the planned workloads and the recommendation's lines
    series = [
        {"name": "Demand (telemetry)", "y": [v for _, v in history] + [None] * len(an.months)},
        {"name": "Demand forecast", "y": before + an.demand, "style": {"line": {"width": 3, "color": "#2f6fdb"}}},
    ]
    if band:
        series += [
            {"name": "Forecast 80 % low", "y": before + [lo + w for lo, w in zip(an.forecast.lower, workloads,
                                                                                    strict=True)],
             "style": {"line": {"width": 0}, "marker": {"size": 0}, "showlegend": False, "hoverinfo": "skip"}},
            {"name": "Forecast 80 % range", "y": before + [up + w for up, w in zip(an.forecast.upper, workloads,
                                                                                      strict=True)],
             "style": {"fill": "tonexty", "fillcolor": "rgba(47,111,219,0.15)", "line": {"width": 0},
                       "marker": {"size": 0}}},
        ]
    for line in an.lines:  # demand the history cannot see, e.g. a capacity-bound partition's queue
        series.append({"name": line.name, "y": before + line.per_month, "style": {"line": {"dash": "dash"}}})
    series.append({"name": "Capacity now", "y": before + an.capacity.hours,
                   "style": {"line": {"width": 3, "color": "#616e7c", "shape": "hv"}}})
    for s in an.scenarios:
        if s.added_hours:
            series.append({"name": f"Capacity: {s.label.lower()}", "y": before + s.capacity,
                           "style": {"line": {"width": 2, "dash": "dot", "shape": "hv"}}})
    return {"x": [_month(m) for m in months], "series": series, "x_title": "month",
            "y_title": "GPU-hours per month"}


def cost_chart(an):
    """Cumulative spend per scenario (capex when ordered), in the portal's currency."""
    series = []
    for s in an.scenarios:
        if s.total_cash is None:  # an unknown spend is not drawn as 0
            continue
        total, cumulative = 0.0, []
        for amount in s.cash:
            total += amount
            cumulative.append(round(total, 2))
        series.append({"name": s.label, "y": cumulative, "style": {"line": {"shape": "hv"}}})
    return {"x": [_month(m) for m in an.months], "series": series, "x_title": "month",
            "y_title": f"cumulative spend ({settings.COST_CURRENCY})"}


class CapacityPlanAnalysisView(ModelPermissionMixin, TemplateView):
    model = CapacityPlan

    def get_queryset(self):
        return CapacityPlan.objects.all()

    def get_template_names(self):
        if self.request.htmx:
            return ["planning/plan_analysis.html"]
        return ["planning/plan_analysis_page.html"]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        plan = get_object_or_404(CapacityPlan.objects.select_related("site", "node_model"), pk=self.kwargs["pk"])
        an = analyse_and_store(plan)
        recommended = an.recommendation.kind
        context.update(
            object=plan, analysis=an, answer=plan.summary, currency=settings.COST_CURRENCY, recommended=recommended,
            scenarios=[(s, s.kind == recommended) for s in an.scenarios],
            met_from={s.kind: an.month_label(s.met_from) for s in an.scenarios},
            owned_from={s.kind: an.month_label(s.owned_from) for s in an.scenarios},
            serving_cost={s.kind: scenarios.serving_cost(s, an.assumptions) for s in an.scenarios},
            unmet_rate=scenarios.unmet_rate(an.assumptions),
            capacity_chart=capacity_chart(an), cost_chart=cost_chart(an),
            can_edit=plan.is_draft and self.request.user.has_perm("planning.change_capacityplan"),
        )
        return context
