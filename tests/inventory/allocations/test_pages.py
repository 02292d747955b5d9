"""The allocation pages walked as users do: a team manager asks through the form, a second manager approves on the
request's page, the allocation page shows the use and the burn-down; researchers see their own teams' only; bad
input re-renders the form with its message and writes nothing."""

from datetime import date, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from inventory.models import AllocationRequest, Team, TeamAllocation, TeamMember, TelemetrySource
from portal.roles import MANAGER, RESEARCHER
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user
from tests.helpers.goodput import add_job


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def site(db):
    vision, speech = Team.objects.create(name="vision"), Team.objects.create(name="speech")
    lead, stranger = make_user("lead", RESEARCHER), make_user("stranger", RESEARCHER)
    TeamMember.objects.create(team=vision, user=lead, role="manager")
    TeamMember.objects.create(team=speech, user=stranger)
    node = make_node(hostname="g1")
    for slot in range(8):
        make_gpu(node=node, slot=slot)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/")
    today = timezone.localdate()
    start = timezone.make_aware(datetime.combine(today, datetime.min.time())) - timedelta(days=2)
    add_job(source, "7", node, 4, start - timedelta(hours=1), start, start + timedelta(hours=10), "COMPLETED")
    return {"vision": vision, "lead": lead, "stranger": stranger, "ann": make_user("ann", MANAGER), "today": today}


def test_from_a_request_to_an_allocation_with_its_use(site):
    lead = logged_in(site["lead"])
    form = lead.get(reverse("inventory:allocationrequest_add"))
    assert form.status_code == 200 and b'name="reason"' in form.content
    start, end = site["today"] - timedelta(days=5), site["today"] + timedelta(days=24)
    answer = lead.post(reverse("inventory:allocationrequest_add"), {
        "team": site["vision"].pk, "start": start, "end": end, "gpu_hours": "400", "max_gpus": "8",
        "reason": "LLM pretraining"})
    pending = AllocationRequest.objects.get()
    assert answer.status_code == 302 and answer["Location"] == pending.get_absolute_url()
    page = lead.get(pending.get_absolute_url())
    assert b"A manager other than you approves" in page.content and b'value="approve"' not in page.content
    manager = logged_in(site["ann"])
    assert b'value="approve"' in manager.get(pending.get_absolute_url()).content
    decided = manager.post(reverse("inventory:allocationrequest_decide", args=[pending.pk]),
                           {"action": "approve", "comment": "fine"}, follow=True)
    allocation = TeamAllocation.objects.get()
    assert b"is in force" in decided.content
    page = lead.get(allocation.get_absolute_url())
    assert page.status_code == 200
    assert b"40.0 GPU-hours (10.0 % of the budget)" in page.content  # job 7: 4 GPUs x 10 h
    assert b'id="burn-down-data"' in page.content
    listing = lead.get(reverse("inventory:teamallocation_list"))
    assert b"vision" in listing.content and b"10.0" in listing.content


def test_bad_terms_re_render_with_the_message_and_write_nothing(site):
    lead = logged_in(site["lead"])
    answer = lead.post(reverse("inventory:allocationrequest_add"), {
        "team": site["vision"].pk, "start": "2027-02-01", "end": "2027-01-01", "reason": "x"})
    assert answer.status_code == 400
    assert b"Give a GPU-hour budget" in answer.content and b"ends before it starts" in answer.content
    assert not AllocationRequest.objects.exists()
    for hostile in ("abc", "-1", "99999999999999999999", "1;DROP", "²", "１"):
        assert lead.get(reverse("inventory:allocationrequest_add"), {"allocation": hostile}).status_code == 404
    assert lead.get(reverse("inventory:allocationrequest_add"), {"kind": "evil"}).status_code == 404


def test_researchers_see_their_teams_only(site):
    other = TeamAllocation.objects.create(team=site["vision"], start=date(2026, 1, 1), end=date(2026, 12, 31),
                                          gpu_hours=100)
    stranger = logged_in(site["stranger"])
    assert stranger.get(other.get_absolute_url()).status_code == 404
    link = f'href="{other.get_absolute_url()}"'.encode()
    assert link not in stranger.get(reverse("inventory:teamallocation_list")).content  # team names are public, not this
    assert stranger.get(reverse("inventory:allocationrequest_add")).status_code == 403  # manages no team
    assert logged_in(site["lead"]).get(other.get_absolute_url()).status_code == 200
    viewer_page = logged_in(site["ann"]).get(reverse("inventory:teamallocation_list"))
    assert viewer_page.status_code == 200 and link in viewer_page.content


def test_the_team_page_shows_its_allocations_to_those_who_may_read_them(site):
    today = site["today"]
    allocation = TeamAllocation.objects.create(team=site["vision"], start=today - timedelta(days=5),
                                               end=today + timedelta(days=24), gpu_hours=400, max_gpus=8)
    page = logged_in(site["lead"]).get(reverse("inventory:team", args=["vision"])).content.decode()
    assert 'id="team-allocations"' in page and allocation.get_absolute_url() in page
    assert "40.0 (10.0 %)" in page  # job 7: 4 GPUs × 10 h of 400
    other = logged_in(site["stranger"]).get(reverse("inventory:team", args=["vision"])).content.decode()
    assert 'id="team-allocations"' not in other


def test_figures_read_as_people_write_them(site):
    # Found by the browser journey of issue 36: the budget read "1000.0" and the sync page listed the look it showed
    # among its "earlier looks".
    from inventory.models import SlurmSync

    allocation = TeamAllocation.objects.create(team=site["vision"], start=site["today"], end=site["today"],
                                               gpu_hours=20000, max_gpus=8)
    page = logged_in(site["ann"]).get(allocation.get_absolute_url()).content.decode()
    assert "<td>20,000</td>" in page and "<td>20000.0</td>" not in page
    older, latest = (SlurmSync.objects.create(cluster="c", changes=[]) for _ in range(2))
    page = logged_in(site["ann"]).get(latest.get_absolute_url()).content.decode()
    earlier = page[page.index("Earlier looks"):]
    assert f'href="{older.get_absolute_url()}"' in earlier and f'href="{latest.get_absolute_url()}"' not in earlier
