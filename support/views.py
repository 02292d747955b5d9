"""Support pages: the queues (a filtered ticket list with inline changes), the ticket page (comments,
attachments, workflow, the asset's utilization and other open tickets, RMA swap, return to service), the
ticket forms (simple for researchers, full for support staff), attachment download and the metrics page.

Every ticket page reads through ``Ticket.objects.visible_to(user)``: a researcher asking for another team's
ticket gets a 404, and internal comments (and their attachments) are shown to support staff only."""

import json

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin, PermissionRequiredMixin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import FileResponse, Http404, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views import View
from django.views.generic import UpdateView
from django_tables2 import RequestConfig

from inventory.telemetry import charts as telemetry_charts
from inventory.telemetry import gpu_health, xid
from inventory.telemetry import queries as telemetry_queries
from portal.forms import object_id, whole_number
from portal.generic import LockedEditMixin, ObjectListView, ObjectView

from . import faults, metrics, rma, sla, workflow
from .filters import QUEUES, TicketFilterSet
from .forms import (
    PICKERS,
    CommentForm,
    InlineForm,
    ResearcherTicketForm,
    StaffTicketForm,
    StatusForm,
    SwapForm,
    picker_rows,
    save_attachment,
)
from .models import Ticket, TicketAttachment
from .tables import PAGE_EXCLUDE, TicketTable

LIST_RELATED = ("assignee", "requester", "team", "site", "node", "gpu__node", "switch", "storage_system")
OTHER_TICKETS_LIMIT = 10
UTILIZATION_RANGE = "7d"


class TicketAccessMixin(PermissionRequiredMixin):
    """Readers of every ticket and researchers (their own and their teams' tickets only): ``support.policy``."""

    raise_exception = True
    permission_required = "support.read_ticket"

    def get_permission_required(self):  # one rule of support.policy, not the generic views' model permission
        return [self.permission_required]

    def get_queryset(self):
        return Ticket.objects.visible_to(self.request.user)

    def get_ticket(self, pk):
        return get_object_or_404(self.get_queryset(), pk=pk)


class StaffMixin(TicketAccessMixin):
    permission_required = "support.edit_ticket"


class TicketListView(TicketAccessMixin, ObjectListView):
    filterset_class = TicketFilterSet
    table_class = TicketTable
    template_name = "support/ticket_list.html"

    def get_queryset(self):
        return super().get_queryset().select_related(*LIST_RELATED)

    def get_table_kwargs(self):
        query = {key: value for key, value in self.request.GET.items() if value and key not in ("page", "sort")}
        queue = dict(QUEUES).get(query.pop("queue", ""))
        if query:
            empty = "No tickets match these filters."
        elif queue:
            empty = f"No tickets in the “{queue}” queue."
        else:
            empty = "No tickets yet. Report a problem opens one, as does the button on a node's or GPU's page."
        exclude = () if "_export" in self.request.GET else PAGE_EXCLUDE
        return {**super().get_table_kwargs(), "empty_text": empty, "exclude": exclude}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        query = self.request.GET.copy()
        query.pop("page", None)
        current = query.pop("queue", [""])[0]
        tabs = [("", "All", current == "")]
        tabs += [(key, label, current == key) for key, label in QUEUES]
        context["queues"] = [(f"?{_with(query, 'queue', key)}", label, active) for key, label, active in tabs]
        context["metrics_url"] = self.request.user.has_perm("support.read_every_ticket")
        return context


def _with(query, name, value):
    query = query.copy()
    if value:
        query[name] = value
    return query.urlencode()


class TicketView(TicketAccessMixin, ObjectView):
    template_name = "support/ticket_detail.html"
    hidden_fields = ("id", "created", "updated", "description", "fault_key", "title", "paused_since")

    def get_queryset(self):
        return super().get_queryset().select_related(*LIST_RELATED, "sla_contract")

    def get_context_data(self, comment_form=None, **kwargs):
        context = super().get_context_data(**kwargs)
        ticket, user = self.object, self.request.user
        staff = user.has_perm("support.internal_comments")
        comments = ticket.comments.select_related("author").prefetch_related("attachments")
        attachments = ticket.attachments.select_related("uploaded_by", "comment")
        if not staff:
            comments = comments.filter(internal=False)
            attachments = attachments.exclude(comment__internal=True)
        context.update(
            staff=staff,
            comments=comments,
            attachments=attachments,
            comment_form=comment_form or (CommentForm(staff=staff) if user.has_perm("support.post_comment", ticket)
                                          else None),
            targets=workflow.allowed_targets(ticket, user),
            sla_state=sla.state(ticket),
            next_due=sla.next_due(ticket),
            response_due=sla.effective_due(ticket, "response_due"),
            resolution_due=sla.effective_due(ticket, "resolution_due"),
            policy=sla.policy_for(ticket) if ticket.response_due is None else None,
            other_tickets=self.other_tickets(ticket),
            utilization=self.utilization(ticket),
            fault_metric=self.fault_metric(ticket),
            returnable=faults.returnable_asset(ticket) if user.has_perm("support.work_tickets") else None,
            swap_form=SwapForm(ticket=ticket) if user.has_perm("support.rma_swap", ticket) else None,
            can_edit=user.has_perm("support.edit_ticket", ticket),
            can_take=ticket.assignee_id != user.pk and user.has_perm("support.edit_ticket", ticket),
        )
        return context

    def other_tickets(self, ticket):
        """Open tickets on the same node (or GPU), this one excepted."""
        if not (ticket.node_id or ticket.gpu_id):
            return []
        same = {"node": ticket.node_id} if ticket.node_id else {"gpu": ticket.gpu_id}
        return list(Ticket.objects.visible_to(self.request.user).open().filter(**same).exclude(pk=ticket.pk)
                    .select_related("assignee")[:OTHER_TICKETS_LIMIT])

    def utilization(self, ticket):
        """The node's GPUs over the last 7 days (the node page's chart), for readers of telemetry."""
        node = ticket.node or (ticket.gpu.node if ticket.gpu_id else None)
        if node is None or not self.request.user.has_perm("inventory.read_telemetry"):
            return None
        span = telemetry_queries.get_range(UTILIZATION_RANGE)
        data = gpu_health.gpu_series(node, span.key)
        return {"node": node, "range": span,
                "has_data": any(v is not None for line in data["lines"] for v in line["values"]),
                "data": telemetry_charts.gpu_lines_chart(data, span)}


    def fault_metric(self, ticket):
        """What opened a fault ticket, as telemetry measured it on its GPU: an ECC ticket's ECC error counts per
        hour and its ECC XID events; an XID ticket's hardware XID events (ECC codes are the ECC ticket's)."""
        if (ticket.fault not in (Ticket.Fault.ECC, Ticket.Fault.XID) or not ticket.gpu_id
                or not self.request.user.has_perm("inventory.read_telemetry")):
            return None
        chosen = gpu_health.fault_span(ticket.created)
        since = gpu_health.day_start(chosen.start_date)
        if ticket.fault == Ticket.Fault.ECC:
            return {"kind": "ecc", "span": chosen, **gpu_health.ecc_errors(ticket.gpu_id, chosen),
                    "events": gpu_health.xid_events(ticket.gpu_id, since, codes=xid.ECC_CODES)}
        return {"kind": "xid", "span": chosen,
                "events": gpu_health.xid_events(ticket.gpu_id, since, exclude_codes=xid.ECC_CODES)}


class TicketFormMixin:
    template_name = "support/ticket_form.html"

    def get_form_class(self):
        return StaffTicketForm if self.request.user.has_perm("support.work_tickets") else ResearcherTicketForm

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "user": self.request.user}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(opts=Ticket._meta, staff=self.request.user.has_perm("support.work_tickets"))
        return context


class TicketCreateView(TicketFormMixin, TicketAccessMixin, UpdateView):
    """Open a ticket; ``?node=<id>`` or ``?gpu=<id>`` (the "Report a problem" button) pre-fills the asset."""

    permission_required = "support.open_ticket"

    def get_object(self, queryset=None):
        return None

    def get_initial(self):
        initial = {}
        for field in ("node", "gpu"):
            value = self.request.GET.get(field, "")
            if object_id(value):  # not isdigit(): "²" is a digit int() refuses
                initial[field] = int(value)
        if "gpu" in initial and "node" not in initial:
            from inventory.models import GPU

            initial["node"] = GPU.objects.filter(pk=initial["gpu"]).values_list("node_id", flat=True).first()
        teams = list(self.request.user.teams.all()[:2])
        if len(teams) == 1:
            initial["team"] = teams[0].pk
        return initial

    def form_valid(self, form):
        user = self.request.user
        with transaction.atomic():
            ticket = form.save(commit=False)
            if user.has_perm("support.work_tickets") and form.cleaned_data.get("requester"):
                ticket.requester = form.cleaned_data["requester"]
            workflow.open_ticket(ticket, user)
            if form.cleaned_data.get("attachment"):
                save_attachment(ticket, form.cleaned_data["attachment"], user)
        messages.success(self.request, f"Opened ticket #{ticket.pk}.")
        return HttpResponseRedirect(ticket.get_absolute_url())


class TicketEditView(LockedEditMixin, TicketFormMixin, StaffMixin, UpdateView):
    """Support staff edit a ticket; a new priority or assignee goes through the workflow (SLA, notices)."""

    def form_valid(self, form):
        user = self.request.user
        with transaction.atomic():
            ticket = workflow.edit(self.object, user, {name: form.cleaned_data[name] for name in form._meta.fields})
            if form.cleaned_data.get("attachment"):
                save_attachment(ticket, form.cleaned_data["attachment"], user)
        messages.success(self.request, f"Saved ticket #{ticket.pk}.")
        return HttpResponseRedirect(ticket.get_absolute_url())


class TicketActionView(TicketAccessMixin, View):
    """A POST on one visible ticket that redirects back to its page."""

    http_method_names = ["post"]

    def redirect(self, ticket, anchor=""):
        return HttpResponseRedirect(f"{ticket.get_absolute_url()}{anchor}")


class TicketStatusView(TicketActionView):
    permission_required = "support.change_status"  # support staff, or a requester: the workflow says which moves

    def post(self, request, pk):
        ticket = self.get_ticket(pk)
        form = StatusForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Choose a status.")
            return self.redirect(ticket)
        rma_number = form.cleaned_data["rma_number"].strip()
        changes = {}
        if rma_number and rma_number != ticket.rma_number:
            if not request.user.has_perm("support.edit_ticket", ticket):
                raise PermissionDenied
            changes["rma_number"] = rma_number  # saved with the status, in the same history record
        target, expected = form.cleaned_data["status"], form.cleaned_data["current"]
        try:
            if target == (expected or ticket.status) and changes:  # no move: the RMA number alone
                workflow.set_fields(ticket, request.user, f"RMA {rma_number}", **changes)
            else:
                workflow.change_status(ticket, target, request.user, form.cleaned_data["note"], expected=expected,
                                       changes=changes)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            rma = f" (RMA {ticket.rma_number})" if ticket.rma_number else ""
            messages.success(request, f"Ticket #{ticket.pk} is now {ticket.get_status_display().lower()}{rma}.")
            asset = faults.returnable_asset(ticket) if request.user.has_perm("support.work_tickets") else None
            if asset is not None:
                messages.info(request, f"{asset} is still {asset.get_state_display().lower()}: return it to service "
                                       "from this page once it is fixed.")
        return self.redirect(ticket)


class TicketAssignToMeView(TicketActionView):
    """"Assign to me": support staff take a ticket in one click, through the workflow's ``assign`` (the same rule
    as choosing an assignee: ``support.edit_ticket``; first response, history and notices as any assignment)."""

    permission_required = "support.edit_ticket"

    def post(self, request, pk):
        ticket = self.get_ticket(pk)
        if not request.user.has_perm("support.edit_ticket", ticket):
            raise PermissionDenied
        try:
            workflow.assign(ticket, request.user, request.user)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(request, f"Ticket #{ticket.pk} is assigned to you.")
        return self.redirect(ticket)


class TicketCommentView(TicketActionView, TicketView):
    """POST a comment (and a file); a refused one re-renders the ticket page with the form's errors."""

    permission_required = "support.post_comment"

    def post(self, request, pk):
        self.object = ticket = self.get_ticket(pk)
        form = CommentForm(request.POST, request.FILES, staff=request.user.has_perm("support.internal_comments"))
        if not form.is_valid():
            return self.render_to_response(self.get_context_data(comment_form=form), status=400)
        with transaction.atomic():
            comment = workflow.add_comment(ticket, request.user, form.cleaned_data["body"],
                                           internal=form.cleaned_data.get("internal", False))
            if form.cleaned_data.get("attachment"):
                save_attachment(ticket, form.cleaned_data["attachment"], request.user, comment=comment)
        messages.success(request, "Comment added.")
        return self.redirect(ticket, "#comments")


class TicketInlineView(StaffMixin, View):
    """htmx: change one of status, priority, assignee from a queue row; answers the row rendered again."""

    http_method_names = ["post"]

    permission_required = "support.change_status"  # priority and assignee: support staff, checked below

    def post(self, request, pk):
        ticket = get_object_or_404(self.get_queryset().select_related(*LIST_RELATED), pk=pk)
        user = request.user
        form = InlineForm(request.POST)
        field = next((name for name in ("status", "priority", "assignee") if name in request.POST), None)
        if field is None or not form.is_valid():
            return HttpResponse("Nothing to change.", status=400)
        if field != "status" and not user.has_perm("support.edit_ticket", ticket):
            raise PermissionDenied
        message, ok = "", False
        try:
            if field == "status":  # from the status the row showed: a stale row moves nothing
                workflow.change_status(ticket, form.cleaned_data["status"], user, expected=form.cleaned_data["current"])
            elif field == "priority":
                workflow.set_priority(ticket, form.cleaned_data["priority"], user)
            else:
                workflow.assign(ticket, form.cleaned_data["assignee"], user)
            ok = True
        except ValidationError as error:
            ticket.refresh_from_db()
            message = " ".join(error.messages)
        # The whole row again (the SLA and due columns follow a new priority or status); htmx picks the row out
        # of the one-row table (hx-select). A refusal is a 200 too, so that htmx shows its message.
        table = TicketTable(Ticket.objects.filter(pk=ticket.pk).select_related(*LIST_RELATED), orderable=False,
                            exclude=PAGE_EXCLUDE)
        table.flash = {ticket.pk: (field, message, ok)}
        RequestConfig(request, paginate=False).configure(table)
        return render(request, "support/ticket_row.html", {"table": table})


class AttachmentDownloadView(TicketAccessMixin, View):
    """Attachments are served through this view (never a public media URL): only to people who may see the
    ticket, and an internal comment's files only to support staff."""

    def get(self, request, pk):
        attachment = get_object_or_404(TicketAttachment.objects.select_related("comment"), pk=pk,
                                       ticket__in=self.get_queryset())
        if attachment.internal and not request.user.has_perm("support.internal_comments"):
            raise PermissionDenied
        response = FileResponse(attachment.file.open("rb"), as_attachment=True, filename=attachment.name,
                                content_type=attachment.content_type)
        response["X-Content-Type-Options"] = "nosniff"
        return response


class TicketSwapView(TicketActionView):
    """Record an RMA swap of the ticket's GPU (or node)."""

    permission_required = "support.rma_swap"

    def post(self, request, pk):
        ticket = self.get_ticket(pk)
        form = SwapForm(request.POST, ticket=ticket)
        if not form.is_valid():
            messages.error(request, "The swap was not recorded: " + "; ".join(  # the fields as the form labels them
                f"{form.fields[name].label if name in form.fields else 'swap'}: {' '.join(errors)}"
                for name, errors in form.errors.items()))
            return self.redirect(ticket, "#rma")
        data = form.cleaned_data
        try:
            new = rma.swap(ticket, data["part"], data["serial"], request.user, gpu=data["gpu"], uuid=data["uuid"],
                           asset_tag=data["asset_tag"], rma_number=data["rma_number"])
        except ValidationError as error:
            messages.error(request, "The swap was not recorded: " + " ".join(error.messages))
            return self.redirect(ticket, "#rma")
        messages.success(request, f"Swap recorded: {new} is in service.")
        return self.redirect(ticket, "#rma")


class ReturnToServiceView(StaffMixin, TicketActionView):
    """For a resolved ticket: move its degraded (or in-repair) node or GPU back to in service."""

    def post(self, request, pk):
        ticket = self.get_ticket(pk)
        asset = faults.returnable_asset(ticket)
        if asset is None or not request.user.has_perm("support.return_to_service", asset):
            messages.error(request, "There is nothing to return to service.")
            return self.redirect(ticket)
        if faults.return_to_service(ticket, request.user) is None:  # someone did it (or reopened it) meanwhile
            asset.refresh_from_db(fields=["state"])
            messages.error(request, f"Nothing was changed: {asset} is now {asset.get_state_display().lower()} and "
                                    f"ticket #{ticket.pk} {ticket.get_status_display().lower()}.")
            return self.redirect(ticket)
        messages.success(request, f"{asset} is back in service.")
        return self.redirect(ticket)


class AssetPickerView(LoginRequiredMixin, View):
    """``GET /support/pickers/<nodes|gpus>/?q=…[&node=<id>]``: the ticket form's node and GPU pickers search here
    as one types. Login required, the model's view permission (a 403 without), the form's own choices (retired
    ones are not offered), at most ``PICKER_LIMIT`` rows and whether there are more."""

    raise_exception = True

    def get(self, request, kind):
        if kind not in PICKERS:
            raise Http404
        if not request.user.has_perm(PICKERS[kind][0]):
            raise PermissionDenied
        term = request.GET.get("q", "")[:100]
        filters = {}
        if kind == "gpus" and request.GET.get("node"):
            filters["node"] = object_id(request.GET["node"]) or 0  # not an id: no node has it, so no GPU
        rows, more = picker_rows(kind, term, **filters)
        return JsonResponse({"results": rows, "more": more})


class MetricsView(PermissionRequiredMixin, View):
    """Open tickets by category and site, mean time to resolve, SLA compliance (every ticket: ``view_ticket``)."""

    permission_required = "support.read_every_ticket"
    raise_exception = True

    def get(self, request):
        days = request.GET.get("days", "")
        days = whole_number(days, 1, 3650) or metrics.DEFAULT_DAYS
        data = metrics.summary(days)
        return render(request, "support/metrics.html", {
            "data": data, "charts": {key: json.dumps(value) for key, value in metrics.charts(data).items()},
            "periods": (30, 90, 365),
        })
