"""Issue 36: the migrations that make a team one model (``inventory.Team``) from a node's owner team, support's teams
and the Slurm accounts keep every row and point each at its team, and go back."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from inventory.models import Node, Team, TeamMember
from support.models import Ticket

BEFORE = [("inventory", "0019_telemetrysource_user_name"), ("support", "0003_row_remap_fault")]
T1, T2, T3 = (datetime(2026, 1, day, tzinfo=UTC) for day in (1, 2, 3))


def migrate(targets=None):
    executor = MigrationExecutor(connection)
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return executor


def old_state(executor):
    """The rows as they were: owner team strings, a support team with members, its history and tickets."""
    apps = executor.loader.project_state(BEFORE).apps
    model = apps.get_model
    rita, bob = (model("auth", "User").objects.create(username=name) for name in ("rita", "bob"))
    site = model("inventory", "Site").objects.create(name="s", power_capacity_kw=1, cooling_capacity_kw=1)
    node_model = model("inventory", "NodeModel").objects.create(
        vendor="v", name="m", cpu_cores=1, ram_gb=1, gpu_slots=8, max_power_w=1)
    for hostname, team in [("a", "vision"), ("b", ""), ("c", "Bio"), ("d", "ML Ops"), ("e", "Chem")]:
        node = model("inventory", "Node").objects.create(hostname=hostname, site=site, node_model=node_model,
                                                         owner_team=team)
        model("inventory", "HistoricalNode").objects.create(
            id=node.pk, hostname=hostname, site_id=site.pk, node_model_id=node_model.pk, owner_team=team,
            state="delivered", created=T1, updated=T1, history_date=T1, history_type="+")
    model("inventory", "HistoricalNode").objects.create(  # a team the node had before: history only
        id=node.pk, hostname="e", site_id=site.pk, node_model_id=node_model.pk, owner_team="old-team",
        state="delivered", created=T1, updated=T1, history_date=T1, history_type="~")
    source = model("inventory", "TelemetrySource").objects.create(name="slurm", kind="slurm", url="http://x")
    for job_id, account in [("1", "vision"), ("2", "nlp"), ("3", ""), ("4", "Chem")]:
        model("inventory", "SlurmJob").objects.create(source=source, job_id=job_id, account=account, submit_time=T1)
    support_team = model("support", "Team")
    support_team.objects.create(id=41, name="chem")  # "Chem" of a node: lower-casing it would merge two teams
    support_l1 = support_team.objects.create(id=40, name="Support L1")
    vision = support_team.objects.create(id=42, name="vision", email="vision@example.org")
    vision.members.set([bob])
    history = model("support", "HistoricalTeam")
    snapshots = model("support", "HistoricalTeam_members")
    for when, kind, members in [(T1, "+", [rita]), (T2, "~", [rita, bob]), (T3, "~", [bob])]:
        record = history.objects.create(id=42, name="vision", email="vision@example.org", history_date=when,
                                        history_type=kind, history_user=rita, history_change_reason="why")
        for user in members:  # ``id``: the membership row's
            snapshots.objects.create(id=user.pk, history=record, team_id=42, user=user)
    ticket = model("support", "Ticket")
    for title, team in [("mine", vision), ("l1", support_l1), ("none", None)]:
        made = ticket.objects.create(title=title, team=team, requester=rita)
        model("support", "HistoricalTicket").objects.create(
            id=made.pk, title=title, team_id=team and team.pk, history_date=T1, history_type="+", opened=T1,
            created=T1, category="hardware", priority="P3", status="new", source="person",
            paused_seconds=0)


@pytest.mark.django_db(transaction=True)
def test_the_teams_are_made_from_every_name_keeping_every_row_and_go_back():
    executor = migrate(BEFORE)
    try:
        old_state(executor)
        migrate()
        assert set(Team.objects.values_list("name", flat=True)) == {
            "vision", "bio", "ML Ops", "Chem", "chem", "nlp", "Support L1"}
        assert dict(Node.objects.values_list("hostname", "owner_team")) == {
            "a": "vision", "b": None, "c": "bio", "d": "ML Ops", "e": "Chem"}
        assert sorted(Node.history.values_list("hostname", "owner_team")) == [
            ("a", "vision"), ("b", None), ("c", "bio"), ("d", "ML Ops"), ("e", "Chem"), ("e", "old-team")]
        # Support's teams keep their ids, so the tickets and their history point at them as before.
        vision = Team.objects.get(name="vision")
        assert (vision.pk, vision.email, Team.objects.get(name="Support L1").pk) == (42, "vision@example.org", 40)
        assert [m.user.username for m in TeamMember.objects.filter(team=vision)] == ["bob"]
        assert dict(Ticket.objects.values_list("title", "team__name")) == {
            "mine": "vision", "l1": "Support L1", "none": None}
        assert dict(Ticket.history.values_list("title", "team_id")) == {"mine": 42, "l1": 40, "none": None}
        assert [(r.history_type, r.history_date, r.history_user.username) for r in
                Team.history.filter(id=42).order_by("history_date")] == [
            ("+", T1, "rita"), ("~", T2, "rita"), ("~", T3, "rita")]
        assert [(r.user.username, r.history_type, r.history_date) for r in
                TeamMember.history.filter(team_id=42).order_by("history_date", "user__username")] == [
            ("rita", "+", T1), ("bob", "+", T2), ("rita", "-", T3)]
        member_ids = set(TeamMember.history.filter(team_id=42).values_list("user_id", "id"))
        assert len({i for _, i in member_ids}) == 2  # rita's former membership has an id of its own
        assert Team.history.filter(name="nlp", history_type="+").count() == 1
        # New teams continue after the copied ids.
        assert Team.objects.create(name="new").pk > 42
        Team.objects.filter(name="new").delete()
        bob = User.objects.get(username="bob")
        assert list(bob.teams.values_list("name", flat=True)) == ["vision"]

        executor = migrate(BEFORE)
        apps = executor.loader.project_state(BEFORE).apps
        support_team = apps.get_model("support", "Team")
        assert support_team.objects.get(pk=42).name == "vision"
        assert list(support_team.objects.get(pk=42).members.values_list("username", flat=True)) == ["bob"]
        assert dict(apps.get_model("support", "Ticket").objects.values_list("title", "team__name")) == {
            "mine": "vision", "l1": "Support L1", "none": None}
        assert dict(apps.get_model("inventory", "Node").objects.values_list("hostname", "owner_team")) == {
            "a": "vision", "b": "", "c": "bio", "d": "ML Ops", "e": "Chem"}
    finally:
        migrate()
    assert Team.objects.get(name="vision").pk == 42  # and forward again
