"""``GET /api/planning/calibration/``: the Calibration page's figures (``planning.calibration``)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.permissions import RolePermission

from ...plans.models import CapacityPlan
from ..calibration import calibrate
from .serializers import CalibrationTeamSerializer


class CalibrationView(APIView):
    """Per team (Slurm account): the GPU-hours its planned workloads of approved plans really took (its jobs in the
    months each was planned to run) against the sizing model's estimate, the ratio over its finished workloads
    (the sizing factor that `POST /api/planning/sizing/` applies for `team`), and each workload with its window,
    status and notes. Needs the permission to view capacity plans."""

    permission_classes = [IsAuthenticated, RolePermission]
    queryset = CapacityPlan.objects.none()  # for RolePermission: the plans' view permission

    @extend_schema(summary="Calibration of sizing per team", responses=CalibrationTeamSerializer(many=True),
                   parameters=[OpenApiParameter("team", str, description="Only this team (Slurm account).")])
    def get(self, request):
        teams = calibrate().teams
        if team := request.query_params.get("team"):
            teams = [row for row in teams if row.team == team]
        return Response(CalibrationTeamSerializer(teams, many=True).data)
