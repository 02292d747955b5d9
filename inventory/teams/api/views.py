from django.db.models import Prefetch

from portal.api.permissions import RolePermission
from portal.api.viewsets import PortalModelViewSet

from ..filters import TeamFilterSet
from ..models import Team, TeamMember
from . import serializers as api

WRITES = ("PUT", "PATCH")


class TeamPermission(RolePermission):
    """The model permissions, except that a team's own managers may edit it too (``inventory.edit_team``)."""

    def has_permission(self, request, view):
        if request.method in WRITES and request.user.has_perm("inventory.edit_team"):
            return True
        return super().has_permission(request, view)

    def has_object_permission(self, request, view, obj):
        if request.method in WRITES:
            return request.user.has_perm("inventory.edit_team", obj)
        return super().has_object_permission(request, view, obj)


class TeamViewSet(PortalModelViewSet):
    """Teams: a team's `name` is its Slurm account (what every figure groups by; a node's `owner_team` and a Slurm
    job's `account` name it) and cannot change. `members` lists its people with their Slurm user names and roles;
    giving `members` on a write replaces them. Managers and admins create and edit teams; a team's own managers
    edit theirs (not its PI)."""

    queryset = Team.objects.select_related("pi").prefetch_related(
        Prefetch("memberships", queryset=TeamMember.objects.select_related("user").order_by("user__username"))
    )
    serializer_class = api.TeamSerializer
    filterset_class = TeamFilterSet
    permission_classes = [TeamPermission]
