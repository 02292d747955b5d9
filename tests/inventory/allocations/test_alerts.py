"""Warnings at 80 and 100 % of an allocation's budget: each level e-mailed once (a retried task sends nothing
again), to the team's address, its PI and its managers; the home page's tile names the worst allocation."""

from datetime import datetime, timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from inventory.allocations import alerts
from inventory.allocations.tasks import alert_allocations
from inventory.models import AllocationAlert, Team, TeamAllocation, TeamMember, TelemetrySource
from portal.roles import MANAGER, RESEARCHER
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user
from tests.helpers.goodput import add_job


@pytest.fixture
def used(db):
    """vision used 80 GPU-hours two days ago (8 GPUs × 10 h); its allocation's budget is 100."""
    pi, lead, member = make_user("pi", RESEARCHER), make_user("lead", RESEARCHER), make_user("member", RESEARCHER)
    team = Team.objects.create(name="vision", email="vision-list@example.org", pi=pi)
    TeamMember.objects.create(team=team, user=lead, role="manager")
    TeamMember.objects.create(team=team, user=member)
    node = make_node(hostname="g1")
    for slot in range(8):
        make_gpu(node=node, slot=slot)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/")
    today = timezone.localdate()
    start = timezone.make_aware(datetime.combine(today - timedelta(days=2), datetime.min.time()))
    add_job(source, "1", node, 8, start, start, start + timedelta(hours=10), "COMPLETED")
    allocation = TeamAllocation.objects.create(team=team, start=today - timedelta(days=10),
                                               end=today + timedelta(days=20), gpu_hours=100)
    return {"allocation": allocation, "node": node, "source": source, "start": start}


def test_each_level_once_to_the_team(used):
    assert alert_allocations() == 1
    assert [m.to for m in mail.outbox] == [["lead@example.org", "pi@example.org", "vision-list@example.org"]]
    assert "80.0 % of its GPU-hour budget" in mail.outbox[0].subject
    assert "used     80.0 GPU-hours of 100" in mail.outbox[0].body
    assert alert_allocations() == 0 and len(mail.outbox) == 1  # retried: nothing again
    start = used["start"] + timedelta(days=1)
    add_job(used["source"], "2", used["node"], 4, start, start, start + timedelta(hours=6), "COMPLETED")
    assert alert_allocations() == 1 and len(mail.outbox) == 2
    assert "104.0 %" in mail.outbox[1].subject and "holds the team's new jobs" in mail.outbox[1].body
    assert sorted(AllocationAlert.objects.values_list("level", flat=True)) == [80, 100]


def test_the_home_tile_names_the_worst(used):
    client = Client()
    client.force_login(make_user("ann", MANAGER))
    page = client.get("/").content.decode()
    assert 'id="tile-allocations"' in page
    assert "worst: vision at 80 %" in page
    assert alerts.over_levels(make_user("outsider", RESEARCHER)) == []
