"""Who may do what in the inventory (see ``portal.policy``).

Slurm jobs (issue 33): a job's name, its Slurm user and its rows (the job, its interruptions: a per-job goodput
row) are its team's private information.

- ``inventory.read_every_job``: every team's jobs, with their names and users: the roles that read the whole fleet
  (viewer, manager, admin, procurement, support).
- ``inventory.read_job``: given a job or an interruption, whether the user may read it: every one for those, a
  researcher's own teams' only (its Slurm account is the name of one of their teams: ``user.teams``, the
  membership that also shows them their teams' tickets). Without one, whether the user may read some team's jobs
  (the first check of a page or API call). ``SlurmJob.objects.visible_to(user)`` and
  ``Interruption.objects.visible_to(user)`` are this rule as a query: every list, detail (404 for another team's
  job), table and export of jobs applies it.
- Teams (issue 36): everyone who reads the inventory reads every team, its members and their Slurm user names
  (``inventory.view_team``); managers and admins create teams (``inventory.add_team``) and edit any
  (``inventory.edit_team``); a team's own managers (``TeamMember.role`` manager) edit theirs: its description,
  e-mail and members, not its PI. A team's name never changes (``Team.clean``).
- Figures grouped by team (allocated GPU-hours, goodput, utilization by team) name no job nor user: they stay
  readable with ``inventory.read_telemetry``, every team's, for researchers too.
"""

import operator
from functools import reduce

import rules

from portal.policy import has_model_perm
from portal.roles import ADMIN, MANAGER, PROCUREMENT, SUPPORT, VIEWER


@rules.predicate
def changes_asset(user, asset):
    """May change this node or GPU (or one of this model, given the class): its lifecycle state included."""
    return user.has_perm(f"inventory.change_{asset._meta.model_name}")


reads_telemetry = has_model_perm("inventory.view_telemetrysource")

# The researcher role holds every inventory view permission too (``portal.roles``): no model permission tells it
# from the roles that read the whole fleet, so the rule names those roles.
FLEET_READERS = (VIEWER, MANAGER, ADMIN, PROCUREMENT, SUPPORT)
# One query a user: ``rules`` keeps the user's group names on it.
reads_whole_fleet = reduce(operator.or_, [rules.is_group_member(role) for role in FLEET_READERS])


def team_accounts(user):
    """The Slurm accounts of the user's teams, as a subquery: a team's name is its Slurm account
    (``inventory.teams.models.Team``), read through the user's reverse relation ``user.teams``."""
    return user.teams.values("name")


@rules.predicate
def of_own_team(user, row):
    """The job's (or interruption's) Slurm account is one of the user's teams (any row, given none)."""
    return row is None or bool(row.account) and team_accounts(user).filter(name=row.account).exists()


@rules.predicate
def manages_team(user, team):
    """The user is one of the team's managers (of some team, given none)."""
    if not user.is_authenticated:
        return False
    memberships = user.team_memberships.filter(role="manager")
    return memberships.exists() if team is None else memberships.filter(team=team).exists()


changes_teams = has_model_perm("inventory.change_team")

reads_every_job = reads_telemetry & reads_whole_fleet
reads_job = reads_every_job | (reads_telemetry & of_own_team)

rules.add_perm("inventory.change_state", changes_asset)  # object: a node or GPU (instance or model)
rules.add_perm("inventory.read_telemetry", reads_telemetry)  # utilization charts, data quality, telemetry API
rules.add_perm("inventory.read_every_job", reads_every_job)  # every team's job names, users and rows
rules.add_perm("inventory.read_job", reads_job)  # object: a Slurm job or an interruption (its ``account``)
rules.add_perm("inventory.edit_team", changes_teams | manages_team)  # object: a team (description, e-mail, members)
rules.add_perm("inventory.change_team_pi", changes_teams)  # object: a team; its managers may not
