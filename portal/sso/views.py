"""The login page, the directory group mapping's pages (admins only: ``portal.roles.ADMIN_ONLY_MODELS``) and its
dry run."""

from django.contrib.auth import views as auth_views
from django.contrib.auth.mixins import PermissionRequiredMixin
from django.views.generic import FormView

from ..generic import ObjectListView, ObjectView
from . import filters, tables
from .backends import local_logins
from .forms import DryRunForm, LoginForm
from .mapping import dry_run
from .models import DirectoryGroupMapping


class DirectoryGroupMappingListView(ObjectListView):
    queryset = DirectoryGroupMapping.objects.all()
    filterset_class = filters.DirectoryGroupMappingFilterSet
    table_class = tables.DirectoryGroupMappingTable
    template_name = "portal/sso_mapping_list.html"


class DirectoryGroupMappingView(ObjectView):
    queryset = DirectoryGroupMapping.objects.all()


class DryRunView(PermissionRequiredMixin, FormView):
    """"With this mapping, a user in these groups would get …": nothing written."""

    permission_required = "portal.view_directorygroupmapping"
    template_name = "portal/sso_dry_run.html"
    form_class = DryRunForm

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        if "groups" in self.request.GET:  # a GET form: the answer has a URL to share
            kwargs["data"] = self.request.GET
        return kwargs

    def get(self, request, *args, **kwargs):
        form = self.get_form()
        grants = dry_run(form.cleaned_data["groups"], form.cleaned_data["source"]) if form.is_bound and \
            form.is_valid() else None
        return self.render_to_response(self.get_context_data(form=form, grants=grants))


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "local_logins": local_logins()}
