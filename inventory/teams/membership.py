"""A team's members changed as a whole: the team's page (its members' rows) and the API (``members`` of a team)
both give the list they want, and ``set_members`` makes it so."""

from dataclasses import dataclass

from django.db import transaction

from .models import Team, TeamMember


@dataclass(frozen=True)
class Wanted:
    user: object
    slurm_user: str = ""
    role: str = TeamMember.Role.MEMBER


@transaction.atomic
def set_members(team, wanted, reason=""):
    """Make ``wanted`` (``Wanted`` rows, one per user) the team's members: memberships added, changed and removed
    one at a time, each with its change record (``reason`` in it). Returns the memberships, by username.

    The team's row is locked first: two edits of one team's members run one after the other, and the second
    compares with what the first stored."""
    Team.objects.select_for_update().filter(pk=team.pk).exists()
    current = {m.user_id: m for m in team.memberships.select_related("user")}
    rows = {row.user.pk: row for row in wanted}
    for user_id, membership in current.items():
        if user_id not in rows:
            membership._change_reason = reason or None
            membership.delete()
    for user_id, row in rows.items():
        membership = current.get(user_id) or TeamMember(team=team, user=row.user)
        if membership.pk is None or (membership.slurm_user, membership.role) != (row.slurm_user, row.role):
            membership.slurm_user, membership.role = row.slurm_user, row.role
            membership._change_reason = reason or None
            membership.save()
    return list(team.memberships.select_related("user").order_by("user__username"))
