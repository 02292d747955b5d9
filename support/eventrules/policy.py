"""Who may do what with notification rules (``portal.policy`` style: named predicates, ``support.<action>``
permissions; given a rule they decide on it, without one they say whether the user may on some rule).

- ``support.subscribe``: make rules (for themself): researchers, and the roles that may add rules (managers,
  support staff, admins). Viewers and procurement tokens read, they do not subscribe.
- ``support.read_rule``: every rule for those who read every rule (``view_notificationrule``: viewers, managers,
  support, procurement, admins); otherwise one's own rules and one's teams' rules.
- ``support.edit_rule``: edit, delete and test a rule: one's own; a team's by the team's managers
  (``TeamMember.role`` manager); any by managers and admins.
- Which teams a user may make rules for: ``teams_for`` (every team for managers and admins, else those they manage).
"""

import rules

from inventory.models import Team
from portal.policy import has_model_perm
from portal.roles import ADMIN, MANAGER, RESEARCHER

subscribes = has_model_perm("support.add_notificationrule") | rules.is_group_member(RESEARCHER)
reads_every_rule = has_model_perm("support.view_notificationrule")
manages_every_rule = rules.is_superuser | rules.is_group_member(MANAGER) | rules.is_group_member(ADMIN)


@rules.predicate
def own_rule(user, rule):
    return rule is None or (rule.owner_id is not None and rule.owner_id == user.pk)


@rules.predicate
def of_own_team(user, rule):
    return rule is None or (rule.team_id is not None and user.teams.filter(pk=rule.team_id).exists())


@rules.predicate
def manages_its_team(user, rule):
    return rule is None or (rule.team_id is not None
                            and user.team_memberships.filter(role="manager", team_id=rule.team_id).exists())


rules.add_perm("support.subscribe", subscribes)
rules.add_perm("support.read_rule", reads_every_rule | (subscribes & (own_rule | of_own_team)))
rules.add_perm("support.edit_rule", manages_every_rule | (subscribes & (own_rule | manages_its_team)))


def teams_for(user):
    """The teams ``user`` may make and edit rules for."""
    if manages_every_rule(user):
        return Team.objects.all()
    if not subscribes(user):
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user, memberships__role="manager")


def visible(queryset, user):
    """``queryset`` of rules as ``support.read_rule`` lets ``user`` read them."""
    from django.db.models import Q

    if not user.is_authenticated:
        return queryset.none()
    if reads_every_rule(user):
        return queryset
    if not subscribes(user):
        return queryset.none()
    return queryset.filter(Q(owner=user) | Q(team__in=user.teams.all()))
