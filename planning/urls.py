"""Planning pages. Contracts (views.py) first, then procurement: orders, deliveries, webhooks
(procurement_views.py)."""

from django.urls import path

from portal.generic import object_urls

from . import analysis_views, forms, plan_views, procurement_views, sizing_views, views
from .models import Contract
from .recommendation_views import recommendation_urls

app_name = "planning"

contract_edit = views.ContractEditView.as_view()  # the contract form with its SLA terms formset

urlpatterns = [
    # --- contracts ---
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
    # --- procurement ---
    *procurement_views.procurement_urls,
    # --- capacity plans ---
    *plan_views.plan_urls,
    *analysis_views.analysis_urls,
    # --- sizing ---
    path("sizing/", sizing_views.SizingView.as_view(), name="sizing"),
    *recommendation_urls,  # --- expansion recommendations ---
]
