"""Who may do what with notification rules, role by role (``support/eventrules/policy.py``): make rules, read and
edit one's own, another user's, and a team's (as its manager, as a member, as neither)."""

import pytest

from inventory.models import Team, TeamMember
from portal.roles import ADMIN, MANAGER, PROCUREMENT, RESEARCHER, SUPPORT, VIEWER
from support.eventrules.policy import teams_for, visible
from support.models import NotificationRule
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db

# role, membership in the team → subscribe, (read, edit) of: own rule, another user's, the team's
TABLE = [
    (VIEWER, None, False, (False, False), (True, False), (True, False)),
    (PROCUREMENT, None, False, (False, False), (True, False), (True, False)),
    (SUPPORT, None, True, (True, True), (True, False), (True, False)),
    (MANAGER, None, True, (True, True), (True, True), (True, True)),
    (ADMIN, None, True, (True, True), (True, True), (True, True)),
    (RESEARCHER, None, True, (True, True), (False, False), (False, False)),
    (RESEARCHER, "member", True, (True, True), (False, False), (True, False)),
    (RESEARCHER, "manager", True, (True, True), (False, False), (True, True)),
]


@pytest.mark.parametrize("role, membership, subscribes, own, others, teams", TABLE)
def test_the_rules_of_each_role(role, membership, subscribes, own, others, teams):
    user, someone = make_user("u", role), make_user("someone", RESEARCHER)
    team = Team.objects.create(name="vision")
    if membership:
        TeamMember.objects.create(team=team, user=user, role=membership)
    rules = {
        "own": NotificationRule.objects.create(name="own", owner=user, events=["gpu.xid"]),
        "others": NotificationRule.objects.create(name="others", owner=someone, events=["gpu.xid"]),
        "teams": NotificationRule.objects.create(name="teams", team=team, events=["gpu.xid"]),
    }
    assert user.has_perm("support.subscribe") is subscribes
    for name, (reads, edits) in (("own", own), ("others", others), ("teams", teams)):
        rule = rules[name]
        if name == "own" and not subscribes:
            continue  # a role that makes no rule has none of its own
        assert user.has_perm("support.read_rule", rule) is reads, name
        assert user.has_perm("support.edit_rule", rule) is edits, name
        assert visible(NotificationRule.objects.filter(pk=rule.pk), user).exists() is reads, name
    assert (team in teams_for(user)) is teams[1]
