"""Statement pages: the month × team list (with the form that issues a month), a statement with its lines, credit,
adjustments and totals, its CSV and PDF; the rate cards. Every figure is the stored statement's (``issuing``);
every row a user may read is ``Statement.objects.visible_to`` (``policy``)."""

from django.contrib import messages
from django.contrib.auth.mixins import PermissionRequiredMixin
from django.core.exceptions import ValidationError
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import urlencode
from django.views import View
from django_tables2 import RequestConfig

from inventory.telemetry.queries import last_closed_month
from portal.generic import ObjectEditView, ObjectListView, ObjectView

from . import render
from .filters import RateCardFilterSet, StatementFilterSet
from .forms import IssueForm, RateCardForm, RateFormSet
from .issuing import issue_month
from .models import RateCard, Statement
from .tables import RateCardTable, RateTable, StatementLineTable, StatementTable

READ = "inventory.read_statement"


class ReadStatementsMixin:
    """Whoever may read some statement opens the pages; the rows are the user's teams' for a researcher."""

    def get_permission_required(self):
        return [READ]

    def get_queryset(self):
        return super().get_queryset().visible_to(self.request.user)


class StatementListView(ReadStatementsMixin, ObjectListView):
    template_name = "inventory/statements/statement_list.html"
    queryset = Statement.objects.select_related("team")
    filterset_class = StatementFilterSet
    table_class = StatementTable
    addable = False  # statements are issued per month, never written by hand

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.request.user.has_perm("inventory.issue_statements"):
            context["issue_form"] = IssueForm(initial={"month": f"{last_closed_month():%Y-%m}"})
        return context


class StatementView(ReadStatementsMixin, ObjectView):
    template_name = "inventory/statements/statement_detail.html"
    queryset = Statement.objects.select_related("team", "closed_month__rate_card", "closed_month__issued_by")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        lines = StatementLineTable(self.object.lines.all())
        RequestConfig(self.request, paginate=False).configure(lines)  # sortable, every line on the page
        context.update(lines=lines, adjustments=self.object.adjustment_rows.select_related("created_by"),
                       can_edit=False, can_delete=False)
        return context


class StatementDownloadView(PermissionRequiredMixin, View):
    """``csv`` or ``pdf`` of a statement the user may read (404 for another team's)."""

    permission_required = READ
    raise_exception = True
    kind = "csv"

    def get(self, request, pk):
        statement = get_object_or_404(Statement.objects.visible_to(request.user).select_related(
            "team", "closed_month__rate_card"), pk=pk)
        if self.kind == "pdf":
            response = HttpResponse(render.to_pdf(statement), content_type="application/pdf")
        else:
            response = HttpResponse(render.to_csv(statement), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{render.filename(statement, self.kind)}"'
        return response


class IssueView(PermissionRequiredMixin, View):
    """Issue a month (``issuing.issue_month``): the list of its statements, or the reason it cannot be issued."""

    permission_required = "inventory.issue_statements"
    raise_exception = True

    def post(self, request):
        form = IssueForm(request.POST)
        target = reverse("inventory:statement_list")
        if not form.is_valid():
            messages.error(request, " ".join(form.errors.get("month", ["Enter a month."])))
            return HttpResponseRedirect(target)
        month = form.cleaned_data["month"]
        try:
            closed, issued = issue_month(month, user=request.user)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
            return HttpResponseRedirect(target)
        count = closed.statements.count()
        if issued:
            messages.success(request, f"Issued {count} statements for {month:%Y-%m}.")
        else:
            messages.info(request, f"{month:%Y-%m} was already issued ({count} statements); it does not change.")
        return HttpResponseRedirect(f"{target}?{urlencode({'month': f'{month:%Y-%m}'})}")


class RateCardListView(ObjectListView):
    queryset = RateCard.objects.prefetch_related("rates")
    filterset_class = RateCardFilterSet
    table_class = RateCardTable


class RateCardView(ObjectView):
    template_name = "inventory/statements/ratecard_detail.html"
    queryset = RateCard.objects.all()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user, card = self.request.user, self.object
        in_use = card.in_use
        context.update(
            rates=RateTable(card.rates.select_related("gpu_model"), orderable=False),
            in_use=in_use,
            can_edit=user.has_perm("inventory.edit_ratecard", card),
            can_delete=user.has_perm("inventory.delete_ratecard") and not in_use,
        )
        return context


class RateCardEditView(ObjectEditView):
    """The card's form and its rates; a used card's edit is refused by its ``clean`` (a form error, never a 500).
    The card and its rates are saved in the post's transaction (``LockedEditMixin``)."""

    form_class = RateCardForm
    queryset = RateCard.objects.all()
    template_name = "inventory/statements/ratecard_edit.html"

    def get_form(self, form_class=None):
        form = super().get_form(form_class)
        data = self.request.POST if self.request.method == "POST" else None
        self.rates = RateFormSet(data, instance=self.object or RateCard(), prefix="rates")
        return form

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["rates"] = self.rates
        return context

    def form_valid(self, form):
        if not self.rates.is_valid():
            return self.form_invalid(form)
        response = super().form_valid(form)
        self.rates.instance = self.object
        self.rates.save()
        return response
