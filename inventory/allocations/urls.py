"""The allocation pages, included in the inventory's URLs (names ``inventory:allocation…``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("allocations/", views.TeamAllocationListView.as_view(), name="teamallocation_list"),
    path("allocations/<int:pk>/", views.TeamAllocationView.as_view(), name="teamallocation_detail"),
    path("allocations/requests/", views.AllocationRequestListView.as_view(), name="allocationrequest_list"),
    path("allocations/requests/new/", views.AllocationRequestAddView.as_view(), name="allocationrequest_add"),
    path("allocations/requests/<int:pk>/", views.AllocationRequestView.as_view(), name="allocationrequest_detail"),
    path("allocations/requests/<int:pk>/decide/", views.AllocationRequestDecisionView.as_view(),
         name="allocationrequest_decide"),
    path("allocations/slurm/", views.SlurmSyncView.as_view(), name="slurmsync_latest"),
    path("allocations/slurm/<int:pk>/", views.SlurmSyncView.as_view(), name="slurmsync_detail"),
]
