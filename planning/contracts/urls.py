"""Contract pages, their documents, the uncovered nodes and dismissing a renewal alert."""

from django.urls import path

from portal.generic import object_urls

from . import views
from .models import Contract

urlpatterns = [
    # The edit view is the contract form with its SLA terms formset.
    *object_urls(Contract, views.ContractListView, views.ContractView, edit_view=views.ContractEditView.as_view(),
                 extra=[("<int:pk>/documents/", views.ContractDocumentUploadView.as_view(), "document_upload")]),
    path("contract-documents/<int:pk>/", views.ContractDocumentDownloadView.as_view(),
         name="contractdocument_download"),
    path("contract-documents/<int:pk>/delete/", views.ContractDocumentDeleteView.as_view(),
         name="contractdocument_delete"),
    path("uncovered/", views.UncoveredNodeListView.as_view(), name="uncovered"),
    path("renewal-alerts/<int:pk>/dismiss/", views.RenewalAlertDismissView.as_view(), name="renewalalert_dismiss"),
]
