"""The Calibration page and a team's page."""

from django.urls import path

from .views import CalibrationView

urlpatterns = [
    path("calibration/", CalibrationView.as_view(), name="calibration"),
    path("calibration/<str:team>/", CalibrationView.as_view(), name="calibration_team"),
]
