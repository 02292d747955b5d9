"""The ticket filter set, shared by the queues and the API (``?queue=mine&status=new&priority=P1``)."""

import django_filters
from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from inventory.models import GPU, Node, Site, Team
from portal.filters import STATE_WIDGET, SearchFilterSet, yes_no_filter

from .models import Ticket, TicketComment

QUEUES = [("mine", "Mine"), ("team", "My team's"), ("unassigned", "Unassigned"), ("breaching", "Breaching soon")]
SLA_STATES = [("breached", "Breached"), ("soon", "Breaching soon"), ("at_risk", "Breached or breaching soon")]


# The choices of the ticket filters (the queue forms and the browsable API's filter forms) name only what the
# user may read: a researcher sees their own and their teams' tickets, not every ticket's title, user or team.
def visible_tickets(request):
    return Ticket.objects.visible_to(request.user) if request is not None else Ticket.objects.none()


def reads_every_ticket(request):
    return request is not None and request.user.has_perm("support.read_every_ticket")


def assignees(request):
    tickets = Ticket.objects.all() if reads_every_ticket(request) else visible_tickets(request)
    return get_user_model().objects.filter(assigned_tickets__in=tickets).distinct().order_by("username")


def visible_teams(request):
    if reads_every_ticket(request):
        return Team.objects.all()
    return request.user.teams.all() if request is not None else Team.objects.none()


def comment_authors(request):
    comments = TicketComment.objects.filter(ticket__in=visible_tickets(request))
    if not reads_every_ticket(request):
        comments = comments.filter(internal=False)
    return get_user_model().objects.filter(pk__in=comments.values("author")).order_by("username")


class TicketFilterSet(SearchFilterSet):
    search_fields = ("title", "description", "rma_number", "node__hostname", "gpu__serial")
    # The queue, node and GPU come from the queue tabs and the node / GPU pages' links: hidden in the form.
    queue = django_filters.ChoiceFilter(choices=QUEUES, method="filter_queue", label="Queue", widget=forms.HiddenInput)
    status = django_filters.MultipleChoiceFilter(choices=Ticket.Status.choices, widget=STATE_WIDGET)
    priority = django_filters.MultipleChoiceFilter(choices=Ticket.Priority.choices, widget=STATE_WIDGET)
    category = django_filters.ChoiceFilter(choices=Ticket.Category.choices)
    open = yes_no_filter(method="filter_open", label="Open")
    sla = django_filters.ChoiceFilter(choices=SLA_STATES, method="filter_sla", label="SLA")
    assignee = django_filters.ModelChoiceFilter(queryset=assignees)
    team = django_filters.ModelChoiceFilter(queryset=visible_teams)
    site = django_filters.ModelChoiceFilter(queryset=Site.objects.all())
    node = django_filters.ModelChoiceFilter(queryset=Node.objects.all(), widget=forms.HiddenInput)
    gpu = django_filters.ModelChoiceFilter(queryset=GPU.objects.all(), widget=forms.HiddenInput, label="GPU")

    class Meta:
        model = Ticket
        fields = ["queue", "status", "priority", "category", "open", "sla", "assignee", "team", "site", "fault",
                  "node", "gpu"]

    def filter_queue(self, queryset, name, value):
        user = getattr(self.request, "user", None)
        if value == "mine":
            return queryset.filter(Q(assignee=user) | Q(requester=user)) if user else queryset.none()
        if value == "team":  # the team's tickets, and those assigned to a teammate (a support team's queue)
            if not user:
                return queryset.none()
            teams = user.teams.all()
            teammates = get_user_model().objects.filter(teams__in=teams).values("pk")
            return queryset.filter(Q(team__in=teams) | Q(assignee__in=teammates))
        if value == "unassigned":
            return queryset.open().filter(assignee__isnull=True)
        if value == "breaching":
            return queryset.at_risk()
        return queryset

    def filter_open(self, queryset, name, value):
        return queryset.open() if value else queryset.filter(status__in=Ticket.CLOSED_STATES)

    def filter_sla(self, queryset, name, value):
        now = timezone.now()
        return {"breached": queryset.breached, "soon": queryset.breaching_soon,
                "at_risk": queryset.at_risk}[value](now)


class TicketCommentFilterSet(django_filters.FilterSet):
    ticket = django_filters.ModelChoiceFilter(queryset=visible_tickets)
    author = django_filters.ModelChoiceFilter(queryset=comment_authors)

    class Meta:
        model = TicketComment
        fields = ["ticket", "internal", "author"]
