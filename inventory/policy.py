"""Who may do what in the inventory (see ``portal.policy``).

Slurm jobs (issue 33): a job's name, its Slurm user and its rows (the job, its interruptions: a per-job goodput
row) are its team's private information.

- ``inventory.read_every_job``: every team's jobs, with their names and users: the roles that read the whole fleet
  (viewer, manager, admin, procurement, support).
- ``inventory.read_job``: given a job or an interruption, whether the user may read it: every one for those, a
  researcher's own teams' only (its Slurm account is the name of one of their teams: ``support.Team`` members, the
  membership of their teams' tickets). Without one, whether the user may read some team's jobs (the first check
  of a page or API call). ``SlurmJob.objects.visible_to(user)`` and ``Interruption.objects.visible_to(user)`` are
  this rule as a query: every list, detail (404 for another team's job), table and export of jobs applies it.
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
    (``inventory.goodput.teams``). Teams are support's (``support.Team.members``), read through the user's reverse
    relation: the inventory imports nothing of support."""
    return user.support_teams.values("name")


@rules.predicate
def of_own_team(user, row):
    """The job's (or interruption's) Slurm account is one of the user's teams (any row, given none)."""
    return row is None or bool(row.account) and team_accounts(user).filter(name=row.account).exists()


reads_every_job = reads_telemetry & reads_whole_fleet
reads_job = reads_every_job | (reads_telemetry & of_own_team)

rules.add_perm("inventory.change_state", changes_asset)  # object: a node or GPU (instance or model)
rules.add_perm("inventory.read_telemetry", reads_telemetry)  # utilization charts, data quality, telemetry API
rules.add_perm("inventory.read_every_job", reads_every_job)  # every team's job names, users and rows
rules.add_perm("inventory.read_job", reads_job)  # object: a Slurm job or an interruption (its ``account``)
