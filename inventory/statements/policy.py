"""Who may read and issue statements and write rate cards (issue 36), in ``inventory/policy.py``'s terms.

- ``inventory.read_every_statement``: every team's statements and the "no team" one: the roles that read the whole
  fleet (viewer, manager, admin, procurement, support) with ``inventory.view_statement``.
- ``inventory.read_statement``: given a statement, whether the user may read it: every one for those, a researcher's
  own teams' only (``user.teams``); without one, whether the user may read some statement (a page's first check).
  ``Statement.objects.visible_to(user)`` is this rule as a query: the list, detail (404 for another team's), the
  downloads and the API apply it.
- ``inventory.issue_statements``: issue a month (managers and admins: ``inventory.add_statement``).
- ``inventory.edit_ratecard``: given a card, whether it may change: ``inventory.change_ratecard`` and not yet used
  by an issued statement (``RateCard.in_use``; the model refuses too).
"""

import rules

from inventory.policy import reads_whole_fleet
from portal.policy import has_model_perm
from portal.roles import RESEARCHER

views_statements = has_model_perm("inventory.view_statement")
reads_every_statement = views_statements & reads_whole_fleet


@rules.predicate
def of_own_team(user, statement):
    """The statement is one of the user's teams'; given none, whether the user is a researcher (who reads their teams'
    statements, none without a team): no query, as the menu asks it on every page."""
    if not user.is_authenticated:
        return False
    if statement is None:
        return is_researcher(user)
    return statement.team_id is not None and user.teams.filter(pk=statement.team_id).exists()


is_researcher = rules.is_group_member(RESEARCHER)


@rules.predicate
def card_unused(user, card):
    return card is None or not card.in_use


rules.add_perm("inventory.read_every_statement", reads_every_statement)
rules.add_perm("inventory.read_statement", reads_every_statement | (views_statements & of_own_team))
rules.add_perm("inventory.issue_statements", has_model_perm("inventory.add_statement"))
rules.add_perm("inventory.edit_ratecard", has_model_perm("inventory.change_ratecard") & card_unused)
