"""Contract pages, their documents, the uncovered nodes and dismissing a renewal alert."""

from django.urls import path

from portal.generic import object_urls

from . import forms, views
from .models import Contract

contract_edit = views.ContractEditView.as_view()  # the contract form with its SLA terms formset

urlpatterns = [
    # Registered before object_urls' generic add/edit (same routes and names), so these win.
    path("contracts/add/", contract_edit, name="contract_add"),
    path("contracts/<int:pk>/edit/", contract_edit, name="contract_edit"),
    *object_urls(Contract, views.ContractListView, views.ContractView, forms.ContractForm, extra=[
        ("<int:pk>/documents/", views.ContractDocumentUploadView.as_view(), "document_upload"),
    ]),
    path("contract-documents/<int:pk>/", views.ContractDocumentDownloadView.as_view(),
         name="contractdocument_download"),
    path("contract-documents/<int:pk>/delete/", views.ContractDocumentDeleteView.as_view(),
         name="contractdocument_delete"),
    path("uncovered/", views.UncoveredNodeListView.as_view(), name="uncovered"),
    path("renewal-alerts/<int:pk>/dismiss/", views.RenewalAlertDismissView.as_view(), name="renewalalert_dismiss"),
]
