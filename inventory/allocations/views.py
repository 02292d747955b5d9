"""Allocation pages: the list with each allocation's use, an allocation with its burn-down and requests, the request
list, a request with its approvals and the decision buttons, and the request form. Every figure is ``usage``'s and
every change ``workflow``'s; these views lay them out."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Prefetch
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.views import View

from inventory.telemetry.models import SlurmJob
from portal.forms import add_service_error
from portal.generic import ObjectListView, ObjectView

from . import queue, usage, workflow
from . import sync as slurm
from .filters import AllocationRequestFilterSet, TeamAllocationFilterSet
from .forms import AllocationRequestForm
from .models import AllocationApproval, AllocationRequest, SlurmSync, TeamAllocation
from .policy import may_act_on_requests, visible
from .tables import AllocationRequestTable, TeamAllocationTable

R = AllocationRequest


class ReadAllocationsMixin:
    """Whoever may read some team's allocations (``inventory.read_allocation``) opens the pages; the lists and the
    objects are those of the user's teams for a researcher."""

    def get_permission_required(self):
        return ["inventory.read_allocation"]

    def get_queryset(self):
        return visible(super().get_queryset(), self.request.user)


class TeamAllocationListView(ReadAllocationsMixin, ObjectListView):
    template_name = "inventory/allocations/allocation_list.html"
    queryset = TeamAllocation.objects.select_related("team", "gpu_model")
    filterset_class = TeamAllocationFilterSet
    table_class = TeamAllocationTable
    addable = False  # an allocation is written by an approved request

    def get_table_data(self):
        rows = list(super().get_table_data())
        found = usage.figures(rows)
        for row in rows:
            row.figures = found[row.pk]
        return rows

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["list_actions"] = request_actions(self.request.user)
        context["sees_sync"] = reads_every_allocation(self.request.user)
        return context


def request_actions(user):
    """The "Request an allocation" button, for those who may ask for some team."""
    may = user.has_perm("inventory.add_allocationrequest") or user.team_memberships.filter(role="manager").exists()
    return [("Request an allocation", "inventory:allocationrequest_add")] if may else []


class TeamAllocationView(ReadAllocationsMixin, ObjectView):
    queryset = TeamAllocation.objects.select_related("team", "gpu_model")
    template_name = "inventory/allocations/allocation_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        allocation, user = self.object, self.request.user
        drawn = usage.burn_down(allocation)
        context.update(
            figures=drawn["figures"],
            chart=burn_down_chart(drawn),
            requests=allocation.requests.select_related("requested_by", "decided_by"),
            may_request=user.has_perm("inventory.request_allocation", allocation.team),
            held=queue.held_jobs(allocation.team.name, slurm.runner()) if user.has_perm(
                "inventory.read_allocation", allocation) else ([], ""),
        )
        return context


def burn_down_chart(drawn):
    """The burn-down's plotly data (``charts.js`` timeseries): used so far, the budget, the projection."""
    days = [day.isoformat() for day in drawn["days"]]
    series = [{"name": "Used (GPU-hours)", "y": drawn["used"]}]
    if drawn["budget"] is not None:
        series.append({"name": "Budget", "y": [drawn["budget"]] * len(days),
                       "style": {"mode": "lines", "line": {"dash": "dot", "color": "#d64545", "width": 2}}})
        series.append({"name": "Projected at the recent rate", "y": drawn["projected"],
                       "style": {"mode": "lines", "line": {"dash": "dash", "width": 2}}})
    return {"x": days, "series": series, "x_title": "Day", "y_title": "GPU-hours used"}


class AllocationRequestListView(ReadAllocationsMixin, ObjectListView):
    template_name = "inventory/allocations/request_list.html"
    queryset = AllocationRequest.objects.select_related("team", "gpu_model", "requested_by")
    filterset_class = AllocationRequestFilterSet
    table_class = AllocationRequestTable
    addable = False

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["list_actions"] = request_actions(self.request.user)
        return context


class AllocationRequestView(ReadAllocationsMixin, ObjectView):
    queryset = AllocationRequest.objects.select_related("team", "gpu_model", "allocation", "requested_by",
                                                        "decided_by").prefetch_related(
        Prefetch("approvals", queryset=AllocationApproval.objects.select_related("user")))
    template_name = "inventory/allocations/request_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        pending, user = self.object, self.request.user
        context.update(
            approvals=pending.approvals.all(),
            may_decide=user.has_perm("inventory.decide_allocation_request", pending),
            may_withdraw=user.has_perm("inventory.withdraw_allocation_request", pending),
            changes=changed_terms(pending),
        )
        return context


def changed_terms(pending):
    """For a change: (label, now, asked) of each term it changes."""
    if pending.kind != R.Kind.CHANGE or pending.allocation is None:
        return []
    rows = []
    for name in workflow.TERMS:
        before, after = getattr(pending.allocation, name), getattr(pending, name)
        if before != after:
            rows.append((pending._meta.get_field(name).verbose_name, before, after))
    return rows


class AllocationRequestDecisionView(View):
    """POST ``action`` (approve, reject, withdraw) and ``comment``: ``workflow``'s answer as a message."""

    def post(self, request, pk):
        if not may_act_on_requests(request.user):  # before the lookup: a 403, not a 404, for those who never may
            raise PermissionDenied("Only managers and the teams' own managers act on allocation requests.")
        pending = get_object_or_404(visible(AllocationRequest.objects.all(), request.user), pk=pk)
        action = request.POST.get("action")
        services = {"approve": workflow.approve, "reject": workflow.reject, "withdraw": workflow.withdraw}
        if action not in services:
            messages.error(request, "Choose approve, reject or withdraw.")
            return HttpResponseRedirect(pending.get_absolute_url())
        try:
            pending = services[action](pending, request.user, request.POST.get("comment", "").strip())
        except (ValidationError, PermissionDenied) as error:
            messages.error(request, " ".join(getattr(error, "messages", None) or [str(error)]))
        else:
            messages.success(request, decision_message(pending, action))
        return HttpResponseRedirect(pending.get_absolute_url())


def decision_message(pending, action):
    if action == "approve" and pending.is_pending:
        return f"Approved; it needs {pending.approvals_needed - pending.approvals.count()} more manager's approval."
    if pending.status == R.Status.APPROVED:
        return f"Approved: {pending.allocation} is in force."
    return f"The request is {pending.get_status_display().lower()}."


class AllocationRequestAddView(View):
    """The request form: ``?allocation=ID&kind=change|renewal`` starts from that allocation's terms."""

    template_name = "inventory/allocations/request_form.html"

    def allocation_and_kind(self, request):
        source = request.POST if request.method == "POST" else request.GET
        raw, kind = source.get("allocation"), source.get("kind") or R.Kind.NEW
        if kind not in R.Kind.values:
            raise Http404("Unknown kind of request.")
        if not raw:
            return None, R.Kind.NEW
        if not (raw.isascii() and raw.isdigit() and len(raw) < 12):  # "²" is a digit to Python, not an id
            raise Http404("No such allocation.")
        allocation = get_object_or_404(visible(TeamAllocation.objects.select_related("team"), request.user), pk=raw)
        return allocation, (kind if kind != R.Kind.NEW else R.Kind.CHANGE)

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated or not request_actions(request.user):
            raise PermissionDenied("Only a manager or a team's managers request allocations.")
        return super().dispatch(request, *args, **kwargs)

    def get(self, request):
        allocation, kind = self.allocation_and_kind(request)
        form = AllocationRequestForm(user=request.user, allocation=allocation,
                                     initial=workflow.default_terms(allocation, kind))
        return self.page(request, form, allocation, kind)

    def post(self, request):
        allocation, kind = self.allocation_and_kind(request)
        form = AllocationRequestForm(request.POST, user=request.user, allocation=allocation)
        if form.is_valid():
            data = form.cleaned_data
            terms = {name: data.get(name) for name in workflow.TERMS}
            try:
                pending = workflow.request(request.user, data.get("team"), data["reason"], kind=kind,
                                           allocation=allocation, **terms)
            except (ValidationError, PermissionDenied) as error:
                add_service_error(form, error)
            else:
                messages.success(request, f"Request #{pending.pk} sent: a manager approves or rejects it.")
                return HttpResponseRedirect(pending.get_absolute_url())
        return self.page(request, form, allocation, kind, status=400)

    def page(self, request, form, allocation, kind, status=200):
        partitions = (SlurmJob.objects.exclude(partition="").order_by("partition")
                      .values_list("partition", flat=True).distinct()[:100])
        return render(request, self.template_name, {
            "form": form, "allocation": allocation, "kind": kind, "kind_label": R.Kind(kind).label,
            "partitions": partitions, "second_approval": settings.ALLOCATION_SECOND_APPROVAL_GPU_HOURS}, status=status)


class SlurmSyncView(View):
    """A sync (the latest without ``pk``): the changes to approve as sacctmgr commands, the drift, the warnings about
    Slurm's settings, what an applied sync did; POST ``look`` computes a new one, ``apply`` approves and applies it.
    For those who read every team's allocations; managers act."""

    template_name = "inventory/allocations/sync_detail.html"

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated or not reads_every_allocation(request.user):
            raise PermissionDenied("The Slurm sync is for those who read every team's allocations.")
        return super().dispatch(request, *args, **kwargs)

    def get(self, request, pk=None):
        sync = get_object_or_404(SlurmSync, pk=pk) if pk else SlurmSync.objects.order_by("-created", "-pk").first()
        return render(request, self.template_name, sync_context(sync, request.user))

    def post(self, request, pk=None):
        if not request.user.has_perm("inventory.apply_slurm_sync"):
            raise PermissionDenied("Only managers look at Slurm and apply its changes.")
        try:
            if request.POST.get("action") == "apply" and pk:
                sync = slurm.apply(get_object_or_404(SlurmSync, pk=pk), request.user)
                messages.success(request, f"{sync}: {sync.applied.filter(status='verified').count()} of "
                                          f"{len(sync.changes)} changes applied and verified.")
            else:
                sync = slurm.propose(request.user)
                messages.success(request, "Nothing to change: Slurm holds the allocations." if not sync.changes
                                 and not sync.error else f"{len(sync.changes)} change(s) to approve.")
        except (ValidationError, PermissionDenied) as error:
            messages.error(request, " ".join(getattr(error, "messages", None) or [str(error)]))
            return HttpResponseRedirect(request.path)
        return HttpResponseRedirect(sync.get_absolute_url())


def reads_every_allocation(user):
    from ..policy import reads_whole_fleet

    return reads_whole_fleet(user)


def sync_context(sync, user):
    from ..teams.slurm_sync import Change, Drift

    return {
        "sync": sync,
        "changes": [Change.from_dict(change) for change in sync.changes] if sync else [],
        "drift": [Drift.from_dict(found) for found in sync.drift] if sync else [],
        "applied": sync.applied.all() if sync else [],
        "may_apply": user.has_perm("inventory.apply_slurm_sync"),
        "recent": SlurmSync.objects.exclude(pk=sync.pk if sync else None).order_by("-created", "-pk")[:20],
        "cluster": settings.SLURM_CLUSTER,
    }
