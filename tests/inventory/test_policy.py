"""The inventory's policy table (``inventory.policy``): for each role, the answer of each rule, read from one table
per kind of rule (as ``tests/support/test_policy.py``); then the job rules on a job or interruption of the user's
team and of another team, and ``visible_to``, the same rule as a query."""

import pytest

from inventory.models import GPU, Interruption, Node, SlurmJob, TeamMember
from portal.roles import RESEARCHER, VIEWER
from tests.factories import InterruptionFactory, make_gpu, make_node, make_team
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db

# Without an object. Y yes, - no; "none": an account without a role.
ROLE_TABLE = """
rule                          viewer  manager  admin  procurement  support  researcher  none
inventory.read_telemetry        Y       Y        Y        Y           Y         Y         -
inventory.read_every_job        Y       Y        Y        Y           Y         -         -
inventory.read_job              Y       Y        Y        Y           Y         Y         -
inventory.view_team             Y       Y        Y        Y           Y         Y         -
inventory.view_teammember       Y       Y        Y        Y           Y         Y         -
inventory.add_team              -       Y        Y        -           -         -         -
inventory.edit_team             -       Y        Y        -           -         -         -
inventory.change_team_pi        -       Y        Y        -           -         -         -
"""

# A node or a GPU: who may change its lifecycle state.
ASSET_TABLE = """
rule                          viewer  manager  admin  procurement  support  researcher  none
inventory.change_state          -       Y        Y        -           Y         -         -
"""

# A Slurm job or an interruption of team nlp, whose only member is the researcher "rita"; "other" is a researcher
# of team speech, "loner" one of no team; each other role is of no team.
JOB_TABLE = """
rule                    rita  other  loner  viewer  manager  admin  procurement  support  none
inventory.read_job       Y     -      -       Y        Y       Y        Y           Y       -
"""


# Team nlp: "rita" is a member, "nina" one of its managers, "lead" a manager of team speech (all researchers).
TEAM_TABLE = """
rule                       rita  nina  lead  viewer  manager  admin  procurement  support  none
inventory.edit_team          -     Y     -      -       Y       Y        -           -       -
inventory.change_team_pi     -     -     -      -       Y       Y        -           -       -
"""


def table(text):
    """``(row, column, answer)`` for each cell of a table written as above."""
    header, *rows = [line.split() for line in text.strip().splitlines()]
    return [(row, column, answer == "Y")
            for row, *answers in rows for column, answer in zip(header[1:], answers, strict=True)]


class Users(dict):
    """The table's users, made when first asked for (a test makes only the ones it reads): a role's user; "rita",
    the only member of team nlp; "other", of team speech; "loner", of no team."""

    TEAMS = {"rita": "nlp", "other": "speech", "loner": None}
    MANAGERS = {"nina": "nlp", "lead": "speech"}

    def __missing__(self, name):
        if name in self.TEAMS:
            user = make_user(name, RESEARCHER)
            if self.TEAMS[name]:
                make_team(self.TEAMS[name]).memberships.create(user=user)
        elif name in self.MANAGERS:
            user = make_user(name, RESEARCHER)
            make_team(self.MANAGERS[name]).memberships.create(user=user, role=TeamMember.Role.MANAGER)
        else:
            user = make_user(f"user-{name}", None if name == "none" else name)
        self[name] = user
        return user


@pytest.fixture
def users(db):
    return Users()


@pytest.mark.parametrize("rule, role, expected", table(ROLE_TABLE))
def test_role_table(users, rule, role, expected):
    assert users[role].has_perm(rule) is expected


@pytest.mark.parametrize("model", [Node, GPU])
@pytest.mark.parametrize("rule, role, expected", table(ASSET_TABLE))
def test_asset_table(users, rule, role, expected, model):
    asset = make_node() if model is Node else make_gpu()
    assert users[role].has_perm(rule, asset) is expected
    assert users[role].has_perm(rule, model) is expected  # the model itself: the list's bulk change


@pytest.mark.parametrize("rule, who, expected", table(TEAM_TABLE))
def test_team_table(users, rule, who, expected):
    assert users[who].has_perm(rule, make_team("nlp")) is expected


def test_a_team_manager_may_edit_some_team_and_only_theirs(users):
    assert users["nina"].has_perm("inventory.edit_team")  # the first check of a page: some team
    assert not users["nina"].has_perm("inventory.edit_team", make_team("speech"))
    assert not users["rita"].has_perm("inventory.edit_team")


@pytest.mark.parametrize("rule, who, expected", table(JOB_TABLE))
def test_job_table(users, rule, who, expected):
    interruption = InterruptionFactory(account="nlp", job__account="nlp")
    for row, model in ((interruption.job, SlurmJob), (interruption, Interruption)):
        assert users[who].has_perm(rule, row) is expected, model
        assert (row in model.objects.visible_to(users[who])) is expected, model  # the rule as a query


def test_a_job_without_an_account_is_for_the_whole_fleet_only(users):
    job = InterruptionFactory(account="", job__account="").job
    assert users[VIEWER].has_perm("inventory.read_job", job)
    assert not users["rita"].has_perm("inventory.read_job", job)
    assert not SlurmJob.objects.visible_to(users["rita"]).exists()


def test_a_superuser_reads_every_job(users):
    from django.contrib.auth.models import User

    boss = User.objects.create_superuser("boss", "boss@example.org", "pw")
    InterruptionFactory(account="speech", job__account="speech")
    assert boss.has_perm("inventory.read_every_job") and SlurmJob.objects.visible_to(boss).count() == 1
