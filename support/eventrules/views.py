"""Notification rule pages under ``/support/notifications/``: the list (one's own and one's teams' rules; every rule
for those who read them all), a rule with the last events it told, the form, delete, and "Send a test". Who may
read and edit which rule is ``policy``'s; sending is ``delivery``'s."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views import View

from portal.generic import ObjectDeleteView, ObjectEditView, ObjectListView, ObjectView

from . import delivery
from .filters import NotificationRuleFilterSet
from .forms import NotificationRuleForm
from .models import NotificationRule
from .policy import visible
from .tables import NotificationRuleTable

RULES = NotificationRule.objects.select_related("owner", "team", "webhook")
NOTICES_SHOWN = 25


def editable(request, pk):
    """The rule, if ``request.user`` may edit it: a 403 otherwise (a 404 for no such rule)."""
    rule = get_object_or_404(RULES, pk=pk)
    if not request.user.has_perm("support.edit_rule", rule):
        raise PermissionDenied("Only the rule's owner, its team's managers and managers may change it.")
    return rule


class NotificationRuleListView(ObjectListView):
    queryset = RULES
    filterset_class = NotificationRuleFilterSet
    table_class = NotificationRuleTable

    def get_permission_required(self):
        return ["support.read_rule"]

    def get_queryset(self):
        return visible(super().get_queryset(), self.request.user)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["add_url"] = (reverse("support:notificationrule_add")
                              if self.request.user.has_perm("support.subscribe") else None)
        return context


class NotificationRuleView(ObjectView):
    queryset = RULES
    template_name = "support/eventrules/rule_detail.html"
    hidden_fields = ("id", "created", "updated", "events", "xid_classes")  # in words below them

    def get_permission_required(self):
        return ["support.read_rule"]

    def get_queryset(self):
        return visible(super().get_queryset(), self.request.user)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        may_edit = self.request.user.has_perm("support.edit_rule", self.object)
        context.update(can_edit=may_edit, can_delete=may_edit, may_test=may_edit,
                       notices=self.object.notices.all()[:NOTICES_SHOWN])
        return context


class NotificationRuleEditView(ObjectEditView):
    queryset = RULES
    form_class = NotificationRuleForm

    def get_permission_required(self):
        return ["support.subscribe"]

    def get_object(self, queryset=None):
        return editable(self.request, self.kwargs["pk"]) if "pk" in self.kwargs else None

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "user": self.request.user}


class NotificationRuleDeleteView(ObjectDeleteView):
    queryset = RULES

    def get_permission_required(self):
        return ["support.subscribe"]

    def get_object(self, queryset=None):
        return editable(self.request, self.kwargs["pk"])


class NotificationRuleTestView(View):
    """POST: send a test message through the rule's channel now."""

    def post(self, request, pk):
        if not request.user.has_perm("support.subscribe"):
            raise PermissionDenied("You may not make notification rules.")
        rule = editable(request, pk)
        try:
            messages.success(request, delivery.send_test(rule))
        except Exception as error:  # a refused mail: said on the page, not a 500
            messages.error(request, f"The test could not be sent: {error}")
        return HttpResponseRedirect(rule.get_absolute_url())
