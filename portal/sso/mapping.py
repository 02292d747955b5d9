"""Directory groups → the portal's roles and teams, applied at every login (``apply``) and tried without a login
(``dry_run``).

The mapping gives and takes only what it names: a role any of its rows names is the mapping's (a user logging in
through a directory has it exactly when one of their groups maps to it); a role no row names (one an admin gave by
hand) is left alone. The same for teams. Groups compare without regard to case (LDAP's ``cn`` does not care).

Teams are inventory's: the portal imports no app, so inventory registers the function that makes a user's
memberships of the managed teams what the mapping wants (``register_team_grants``) and the check that a team
exists (``team_problem``)."""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from .models import DirectoryGroupMapping, LoginGrantChange, LoginSource

MANAGER_RANK = {"member": 0, "manager": 1}
_team_grants = []  # (user, wanted {team: role}, managed {team}, reason) -> [(team, action, role)]
_team_checks = []  # (team name) -> a problem in words, or None


def register_team_grants(grant, check):
    if grant not in _team_grants:
        _team_grants.append(grant)
    if check not in _team_checks:
        _team_checks.append(check)


def team_problem(name):
    return next((problem for check in _team_checks if (problem := check(name))), None)


@dataclass(frozen=True)
class Grants:
    roles: frozenset  # the roles the user's groups map to
    teams: dict  # {team: "member" | "manager"} the user's groups map to (manager where two rows disagree)
    managed_roles: frozenset  # every role a row names: the mapping gives and takes these
    managed_teams: frozenset  # every team a row names
    matched: tuple  # the rows that matched, for the dry run

    def says(self):
        roles = ", ".join(sorted(self.roles)) or "no role"
        teams = ", ".join(f"{team} ({role})" for team, role in sorted(self.teams.items())) or "no team"
        return f"roles: {roles}; teams: {teams}"


def grants_for(groups, source):
    """What a login through ``source`` with directory ``groups`` gives."""
    rows = list(DirectoryGroupMapping.objects.filter(source__in=[source, LoginSource.ANY]))
    wanted = {group.casefold() for group in groups}
    matched = [row for row in rows if row.group.casefold() in wanted]
    teams = {}
    for row in matched:
        if row.team and MANAGER_RANK[row.team_role] >= MANAGER_RANK[teams.get(row.team, "member")]:
            teams[row.team] = row.team_role
    return Grants(frozenset(row.role for row in matched if row.role), teams,
                  frozenset(row.role for row in rows if row.role), frozenset(row.team for row in rows if row.team),
                  tuple(matched))


def dry_run(groups, source=LoginSource.ANY):
    """``Grants`` for these groups, nothing written: "with this mapping, user X would get …"."""
    return grants_for(groups, source)


@transaction.atomic
def apply(user, groups, source):
    """Make the user's roles and teams what ``groups`` map to (of what the mapping manages), each change logged
    (``LoginGrantChange``) with its source and the groups. The user's row is locked first: two logins of one user
    run one after the other. Returns the changes."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
    grants = grants_for(groups, source)
    held = set(user.groups.filter(name__in=grants.managed_roles).values_list("name", flat=True))
    added, removed = grants.roles - held, held - grants.roles
    if added:
        user.groups.add(*Group.objects.filter(name__in=added))
    if removed:
        user.groups.remove(*Group.objects.filter(name__in=removed))
    user.__dict__.pop("_group_names_cache", None)  # portal.roles.group_names reads them again
    reason = f"{LoginSource(source).label} login"
    team_changes = [change for grant in _team_grants
                    for change in grant(user, grants.teams, grants.managed_teams, reason)]
    changes = [LoginGrantChange(user=user, source=source, action="added", role=role, groups=sorted(groups))
               for role in sorted(added)]
    changes += [LoginGrantChange(user=user, source=source, action="removed", role=role, groups=sorted(groups))
                for role in sorted(removed)]
    changes += [LoginGrantChange(user=user, source=source, action=action, team=team, team_role=role,
                                 groups=sorted(groups)) for team, action, role in team_changes]
    return LoginGrantChange.objects.bulk_create(changes)
