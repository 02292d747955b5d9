"""The directory group mapping's pages (admins only: ``portal.roles.ADMIN_ONLY_MODELS``) and its dry run."""

from django.contrib.auth.mixins import PermissionRequiredMixin
from django.views.generic import FormView

from ..generic import ObjectListView, ObjectView
from . import filters, tables
from .forms import DryRunForm
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
