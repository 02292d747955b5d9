"""Planning's policy (``planning.policy``): who approves or rejects a submitted capacity plan, by role and by who
submitted it; the rule holds for a superuser too, where Django's ``has_perm`` would let them through."""

import pytest
from django.contrib.auth.models import User

from planning.models import CapacityPlan
from planning.plans.views import workflow_actions
from planning.policy import decides_plan
from portal import roles
from tests.helpers.accounts import make_user


@pytest.fixture
def submitter(db):
    return make_user("sub", roles.MANAGER)


@pytest.fixture
def plan(submitter):
    return CapacityPlan.objects.create(name="p", status=CapacityPlan.Status.SUBMITTED, submitted_by=submitter,
                                       owner=submitter)


@pytest.mark.parametrize("role, decides", [
    (roles.MANAGER, True), (roles.ADMIN, True),
    (roles.VIEWER, False), (roles.PROCUREMENT, False), (roles.SUPPORT, False), (roles.RESEARCHER, False),
])
def test_who_decides_a_plan_someone_else_submitted(plan, role, decides):
    user = make_user(f"u-{role}", role)
    assert decides_plan(user, plan) is decides
    assert user.has_perm("planning.decide_plan", plan) is decides
    assert bool(workflow_actions(plan, user)) is decides


def test_the_submitter_never_decides_their_own_plan_not_even_a_superuser(plan, submitter):
    assert not decides_plan(submitter, plan) and workflow_actions(plan, submitter) == []
    boss = User.objects.create_superuser("boss", "b@example.org", "pw")
    plan.submitted_by = boss
    plan.save()
    assert not decides_plan(boss, plan) and workflow_actions(plan, boss) == []
