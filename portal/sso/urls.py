from django.urls import path

from ..generic import object_urls
from . import views
from .forms import DirectoryGroupMappingForm
from .models import DirectoryGroupMapping

app_name = "portal"

urlpatterns = [
    *object_urls(DirectoryGroupMapping, views.DirectoryGroupMappingListView, views.DirectoryGroupMappingView,
                 DirectoryGroupMappingForm),
    path("directory-group-mappings/dry-run/", views.DryRunView.as_view(), name="directorygroupmapping_dry_run"),
    path("oidc/login/", views.OIDCLoginView.as_view(), name="oidc_login"),
    path("oidc/callback/", views.OIDCCallbackView.as_view(), name="oidc_callback"),
]
