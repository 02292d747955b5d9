"""The Calibration page, a team's page and a planned workload's time to result."""

from django.urls import path

from .views import CalibrationView, WorkloadTimeToResultView

urlpatterns = [
    path("calibration/", CalibrationView.as_view(), name="calibration"),
    path("calibration/workloads/<int:pk>/", WorkloadTimeToResultView.as_view(), name="workload_time_to_result"),
    path("calibration/<str:team>/", CalibrationView.as_view(), name="calibration_team"),
]
