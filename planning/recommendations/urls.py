"""Recommendation pages: list, run the analysis, detail, accept and dismiss, and the actions beyond them."""

from django.urls import path

from .views import (
    RecommendationActionView,
    RecommendationDecisionView,
    RecommendationListView,
    RecommendationRunView,
    RecommendationView,
)

urlpatterns = [
    path("recommendations/", RecommendationListView.as_view(), name="recommendation_list"),
    path("recommendations/run/", RecommendationRunView.as_view(), name="recommendation_run"),
    path("recommendations/<int:pk>/", RecommendationView.as_view(), name="recommendation_detail"),
    path("recommendations/<int:pk>/accept/", RecommendationDecisionView.as_view(decision="accept"),
         name="recommendation_accept"),
    path("recommendations/<int:pk>/dismiss/", RecommendationDecisionView.as_view(decision="dismiss"),
         name="recommendation_dismiss"),
    path("recommendations/<int:pk>/act/<slug:key>/", RecommendationActionView.as_view(), name="recommendation_act"),
]
