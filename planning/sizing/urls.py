"""The workload sizing page."""

from django.urls import path

from .views import SizingView

urlpatterns = [
    path("sizing/", SizingView.as_view(), name="sizing"),
]
