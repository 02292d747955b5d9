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


def team_problem(name):
    """Why a directory group cannot map to team ``name`` (``portal.sso``), or None."""
    return None if Team.objects.filter(name=name).exists() else f"No team is named {name!r}."


@transaction.atomic
def grant_teams(user, wanted, managed, reason):
    """The user's memberships of the ``managed`` teams made ``wanted`` ({team name: role}), as a directory login
    maps them (``portal.sso.mapping``): joined, role changed or left, each with its change record. The teams' rows
    are locked first, in name order, as ``set_members`` locks one. Returns [(team, action, role)]."""
    names = sorted(set(managed) | set(wanted))
    teams = {team.name: team for team in Team.objects.select_for_update().filter(name__in=names).order_by("name")}
    current = {m.team.name: m for m in user.team_memberships.select_related("team").filter(team__name__in=names)}
    changes = []
    for name, membership in sorted(current.items()):
        if name not in wanted:
            membership._change_reason = reason
            membership.delete()
            changes.append((name, "removed", membership.role))
    for name, role in sorted(wanted.items()):
        membership = current.get(name)
        if name not in teams or (membership is not None and membership.role == role):
            continue  # a team deleted since the mapping named it gives nothing
        action = "added" if membership is None else "changed"
        membership = membership or TeamMember(team=teams[name], user=user)
        membership.role, membership._change_reason = role, reason
        membership.save()
        changes.append((name, action, role))
    return changes
