"""Planning pages. Contracts (views.py) first, then procurement: orders, deliveries, webhooks
(procurement_views.py)."""

from django.urls import path

from portal.generic import object_urls

from . import analysis_views, plan_views, procurement_views, sizing_views, views
from .models import Contract
from .recommendation_views import recommendation_urls

app_name = "planning"

urlpatterns = [
    # --- contracts (the form with its SLA terms formset) ---
    *object_urls(Contract, views.ContractListView, views.ContractView, edit_view=views.ContractEditView.as_view(),
                 extra=[("<int:pk>/documents/", views.ContractDocumentUploadView.as_view(), "document_upload")]),
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
