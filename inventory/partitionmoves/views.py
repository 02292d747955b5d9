"""Partition move pages: the list, a move with its nodes and the decision buttons, and the proposal form (which a
recommendation's "Move these nodes" opens pre-filled: ``?nodes=host1,host2&reason=…&recommendation=N``). Every
change is ``workflow``'s; these views lay it out."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.views import View

from portal.forms import add_service_error
from portal.generic import ModelPermissionMixin, ObjectListView, ObjectView

from ..models import Node
from . import workflow
from .filters import PartitionMoveFilterSet
from .forms import PartitionMoveForm
from .models import PartitionMove
from .tables import PartitionMoveTable

M = PartitionMove


class PartitionMoveListView(ObjectListView):
    queryset = (PartitionMove.objects.select_related("proposed_by", "decided_by")
                .prefetch_related("nodes").order_by("-created", "-pk"))
    filterset_class = PartitionMoveFilterSet
    table_class = PartitionMoveTable


class PartitionMoveView(ObjectView):
    queryset = PartitionMove.objects.select_related("proposed_by", "decided_by")
    template_name = "inventory/partitionmoves/move_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        move, user = self.object, self.request.user
        context.update(
            nodes=move.nodes.order_by("hostname").values("pk", "hostname", "partition", "state"),
            may_decide=user.has_perm("inventory.decide_partition_move", move),
            may_withdraw=user.has_perm("inventory.withdraw_partition_move", move),
        )
        return context


def partition_names():
    """The partitions nodes are in now, for the form's suggestions."""
    return Node.objects.exclude(partition="").order_by("partition").values_list("partition", flat=True).distinct()


class PartitionMoveAddView(ModelPermissionMixin, View):
    """The proposal form; GET pre-fills it from the query (nodes by hostname, comma-separated, or id)."""

    permission_action = "add"
    template_name = "inventory/partitionmoves/move_form.html"

    def get_queryset(self):
        return PartitionMove.objects.all()

    def get(self, request):
        names = [n.strip() for value in request.GET.getlist("nodes") for n in value.split(",") if n.strip()]
        nodes = list(Node.objects.filter(hostname__in=names).values_list("pk", flat=True))
        nodes += [int(n) for n in names if n.isascii() and n.isdigit() and len(n) < 12]
        recommendation = request.GET.get("recommendation", "")
        initial = {"nodes": nodes, "to_partition": request.GET.get("to_partition", ""),
                   "reason": request.GET.get("reason", ""),
                   "recommendation": recommendation if recommendation.isascii() and recommendation.isdigit() else None}
        return self.page(request, PartitionMoveForm(initial=initial))

    def post(self, request):
        form = PartitionMoveForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                move = workflow.propose(request.user, data["nodes"], data["to_partition"], data["reason"],
                                        recommendation=data.get("recommendation"))
            except (ValidationError, PermissionDenied) as error:
                add_service_error(form, error)
            else:
                messages.success(request, f"Move #{move.pk} proposed: a manager other than you approves it.")
                return HttpResponseRedirect(move.get_absolute_url())
        return self.page(request, form, status=400)

    def page(self, request, form, status=200):
        return render(request, self.template_name, {"form": form, "partitions": partition_names(),
                                                    "opts": PartitionMove._meta}, status=status)


class PartitionMoveDecisionView(ModelPermissionMixin, View):
    """POST ``action`` (approve, reject, withdraw) and ``comment``: ``workflow``'s answer as a message. Those who
    may never decide one (without ``change_partitionmove``) get a 403 before the lookup."""

    permission_action = "change"

    def get_queryset(self):
        return PartitionMove.objects.all()

    def post(self, request, pk):
        move = get_object_or_404(PartitionMove, pk=pk)
        services = {"approve": workflow.approve, "reject": workflow.reject, "withdraw": workflow.withdraw}
        action = request.POST.get("action")
        if action not in services:
            messages.error(request, "Choose approve, reject or withdraw.")
            return HttpResponseRedirect(move.get_absolute_url())
        try:
            move = services[action](move, request.user, request.POST.get("comment", "").strip())
        except (ValidationError, PermissionDenied) as error:
            messages.error(request, " ".join(getattr(error, "messages", None) or [str(error)]))
        else:
            if move.status == M.Status.DONE:
                messages.success(request, f"Approved and done: {move.nodes.count()} node(s) now in partition "
                                          f"{move.to_partition}.")
            else:
                messages.success(request, f"The move is {move.get_status_display().lower()}.")
        return HttpResponseRedirect(move.get_absolute_url())
