"""Notification rules end to end: an event where it happens (the pull's XID reading, a lifecycle move, the SLA check, a
source failing) → the rules it matches → one e-mail (Django's locmem backend) or one signed POST to a real local
receiver; digests once per subscriber and never twice; XID classes; who may change whose rule (pages and API)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from inventory import lifecycle
from inventory.models import Team, TeamMember, TelemetrySource
from inventory.telemetry import pull
from portal import events
from portal.roles import MANAGER, RESEARCHER, VIEWER
from support import sla
from support.eventrules import delivery, tasks
from support.models import NotificationEvent, NotificationRule, Ticket
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user, token_client
from tests.helpers.eventrules import read_xid, run_tasks_at_once
from tests.helpers.webhooks import Receiver, make_hook, signature_ok

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(monkeypatch):
    """Node g1 of team vision with GPUs in slots 0-3; rita (a researcher in vision) and max (a manager)."""
    run_tasks_at_once(monkeypatch)
    vision = Team.objects.create(name="vision", email="vision-list@example.org")
    node = make_node(hostname="g1", owner_team=vision, state="in_service")
    gpus = [make_gpu(node=node, slot=slot, uuid=f"GPU-g1-{slot}", state="in_service") for slot in range(4)]
    rita, max_ = make_user("rita", RESEARCHER), make_user("max", MANAGER)
    TeamMember.objects.create(team=vision, user=rita)
    return {"team": vision, "node": node, "gpu": gpus[3], "other_gpu": gpus[0], "rita": rita, "max": max_}


def rule(name, events=("gpu.xid",), **kw):
    return NotificationRule.objects.create(name=name, events=list(events), **kw)


def test_an_xid_79_mails_the_subscribed_user_once_with_node_gpu_code_and_meaning(
        fleet, mailoutbox, django_capture_on_commit_callbacks):
    rule("my GPUs", owner=fleet["rita"])
    with django_capture_on_commit_callbacks(execute=True):
        found = read_xid(fleet["gpu"], 79)
    assert [code for _, _, code in found] == [79]
    assert len(mailoutbox) == 1
    message = mailoutbox[0]
    assert message.to == ["rita@example.org"]
    assert message.subject == "[Cluster Portal] XID 79 on g1 GPU 3"
    for text in ("Node: g1", "GPU: 3 (GPU-g1-3)", "Code: XID 79 (hardware)", "Meaning: GPU has fallen off the bus",
                 f"/inventory/nodes/{fleet['node'].pk}/"):
        assert text in message.body
    notice = NotificationEvent.objects.get()
    assert (notice.status, notice.event, notice.payload["code"]) == ("sent", "gpu.xid", 79)

    with django_capture_on_commit_callbacks(execute=False) as rolled_back:  # told, then the pull rolls back
        read_xid(fleet["other_gpu"], 48)
    assert len(rolled_back) == 1 and len(mailoutbox) == 1  # recorded only once the emitter commits
    with django_capture_on_commit_callbacks(execute=True):  # the same reading again (a retried pull): no new event
        assert read_xid(fleet["gpu"], 79, ts=found[0][1]) == []
        events.emit("gpu.xid", notice.payload)  # and the same event told twice: recorded once
    tasks.deliver_event(notice.pk)  # a duplicated task finds it sent
    assert len(mailoutbox) == 1 and NotificationEvent.objects.count() == 1


def test_a_webhook_rule_gets_one_signed_post(fleet, django_capture_on_commit_callbacks):
    receiver = Receiver()
    try:
        hook = make_hook(receiver.url, events=["plan.approved"])
        rule("to the NOC", owner=fleet["max"], channel="webhook", webhook=hook)
        with django_capture_on_commit_callbacks(execute=True):
            read_xid(fleet["gpu"], 79)
        assert len(receiver.requests) == 1
        headers, body = receiver.requests[0]
        assert signature_ok(headers, body)
        assert headers["X-Portal-Event"] == "gpu.xid"
        data = json.loads(body)["data"]
        assert (data["node"], data["gpu"], data["code"], data["meaning"], data["rule"]) == (
            "g1", 3, 79, "GPU has fallen off the bus", "to the NOC")
        assert hook.deliveries.get().status == "sent"
    finally:
        receiver.close()


def test_a_daily_digest_sends_one_mail_with_both_events_and_a_retry_sends_nothing(
        fleet, mailoutbox, django_capture_on_commit_callbacks):
    rule("daily", events=["gpu.xid", "node.degraded"], owner=fleet["rita"], digest="daily")
    rule("daily too", events=["gpu.xid"], owner=fleet["rita"], digest="daily")  # the same subscriber: one mail
    with django_capture_on_commit_callbacks(execute=True):
        read_xid(fleet["gpu"], 79)
        lifecycle.transition(fleet["node"], "degraded", reason="XID 79 on GPU 3")
    assert mailoutbox == []  # a digest rule tells nothing at once
    assert tasks.send_digests("hourly") == 0  # nor in the hourly digest
    assert tasks.send_digests("daily") == 1
    assert len(mailoutbox) == 1
    message = mailoutbox[0]
    assert message.to == ["rita@example.org"] and "Daily digest: 2 events for rita" in message.subject
    assert "1. XID 79 on g1 GPU 3" in message.body and "2. Node g1 degraded" in message.body
    assert "Reason: XID 79 on GPU 3" in message.body
    assert set(NotificationEvent.objects.values_list("status", flat=True)) == {"sent"}

    assert tasks.send_digests("daily") == 0  # the task retried: nothing left to send
    assert len(mailoutbox) == 1


def test_a_failed_digest_is_sent_by_the_next_run(fleet, mailoutbox, monkeypatch, django_capture_on_commit_callbacks):
    rule("daily", owner=fleet["rita"], digest="daily")
    with django_capture_on_commit_callbacks(execute=True):
        read_xid(fleet["gpu"], 79)

    def refuse(*args):
        raise OSError("mail server down")

    monkeypatch.setattr(delivery, "mail", refuse)
    assert delivery.send_digests("daily") == 0
    assert NotificationEvent.objects.get().status == "pending"
    monkeypatch.undo()
    assert delivery.send_digests("daily") == 1 and len(mailoutbox) == 1


def test_an_application_xid_rule_is_not_told_of_xid_79(fleet, mailoutbox, django_capture_on_commit_callbacks):
    rule("my jobs' errors", owner=fleet["rita"], xid_classes=["application"])
    with django_capture_on_commit_callbacks(execute=True):
        read_xid(fleet["gpu"], 79)
    assert mailoutbox == [] and not NotificationEvent.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        read_xid(fleet["other_gpu"], 13)
    assert [m.subject for m in mailoutbox] == ["[Cluster Portal] XID 13 on g1 GPU 0"]


def test_a_team_rule_hears_its_teams_events_only_and_mails_the_team(fleet, mailoutbox,
                                                                     django_capture_on_commit_callbacks):
    TeamMember.objects.create(team=fleet["team"], user=make_user("lena", RESEARCHER), role="manager")
    rule("vision hardware", events=["gpu.xid", "node.degraded"], team=fleet["team"])
    other = make_node(hostname="s1", owner_team=Team.objects.create(name="speech"), state="in_service")
    with django_capture_on_commit_callbacks(execute=True):
        read_xid(make_gpu(node=other), 79)
        lifecycle.transition(fleet["gpu"], "degraded", reason="XID 79")
    assert len(mailoutbox) == 1
    assert mailoutbox[0].subject == "[Cluster Portal] g1 GPU 3 degraded"
    assert mailoutbox[0].to == ["lena@example.org", "vision-list@example.org"]


def test_sla_breaches_and_stale_sources_are_told(fleet, mailoutbox, django_capture_on_commit_callbacks):
    rule("support", events=["ticket.sla_breached", "source.stale"], owner=fleet["max"])
    now = timezone.now()
    ticket = Ticket.objects.create(title="GPU 3 lost", team=fleet["team"], opened=now - timedelta(hours=5),
                                   response_due=now - timedelta(hours=1), resolution_due=now + timedelta(hours=20))
    Ticket.objects.create(title="old news", team=fleet["team"], opened=now - timedelta(days=5),  # breached long ago
                          response_due=now - timedelta(days=3), resolution_due=now + timedelta(hours=20))
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090")
    with django_capture_on_commit_callbacks(execute=True):
        assert sla.announce_breaches(now) == 1
        assert sla.announce_breaches(now) == 1  # the next run tells it again: nobody hears it twice
        pull.record_failure(source, "connection refused", now)
        pull.record_failure(source, "connection refused", now + timedelta(minutes=1))  # still stale: no news
    assert sorted(m.subject for m in mailoutbox) == [
        "[Cluster Portal] Telemetry source prom stale", f"[Cluster Portal] Ticket #{ticket.pk} past its response SLA"]


def test_a_researcher_hears_only_what_they_may_read(fleet, mailoutbox, django_capture_on_commit_callbacks):
    rule("everything", events=["ticket.sla_breached", "source.stale", "gpu.xid"], owner=fleet["rita"])
    now = timezone.now()
    Ticket.objects.create(title="not rita's", opened=now - timedelta(hours=5), response_due=now - timedelta(hours=1),
                          resolution_due=now + timedelta(hours=20))
    with django_capture_on_commit_callbacks(execute=True):
        sla.announce_breaches(now)  # another team's ticket: rita may not read it
        pull.record_failure(TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://p:9090"),
                            "refused", now)  # researchers read telemetry
    assert [m.subject for m in mailoutbox] == ["[Cluster Portal] Telemetry source prom stale"]


# --- Who may change which rule ---------------------------------------------------------------------------------


def test_a_researcher_cannot_change_another_users_rule(fleet, client):
    theirs = rule("max's", owner=fleet["max"])
    client.force_login(fleet["rita"])
    assert client.get(f"/support/notifications/{theirs.pk}/edit/").status_code == 403
    assert client.post(f"/support/notifications/{theirs.pk}/delete/").status_code == 403
    assert client.post(f"/support/notifications/{theirs.pk}/test/").status_code == 403
    assert client.get(f"/support/notifications/{theirs.pk}/").status_code == 404  # nor read it
    assert "max&#x27;s" not in client.get("/support/notifications/").content.decode()
    api = token_client(fleet["rita"])
    url = f"/api/support/notification-rules/{theirs.pk}/"
    assert api.patch(url, {"name": "mine now"}, format="json").status_code == 403
    assert api.delete(url).status_code == 403
    assert api.post(f"{url}test/").status_code == 403
    assert NotificationRule.objects.get(pk=theirs.pk).name == "max's"


def test_a_researcher_makes_and_edits_their_own_rule_in_the_pages_and_the_api(fleet, client, mailoutbox):
    client.force_login(fleet["rita"])
    page = client.get("/support/notifications/add/")
    assert page.status_code == 200
    assert list(page.context["form"].fields["team"].queryset) == []  # rita manages no team
    response = client.post("/support/notifications/add/", {
        "name": "mine", "events": ["gpu.xid"], "xid_classes": ["hardware"], "channel": "email", "digest": "none",
        "enabled": "on"})
    assert response.status_code == 302
    mine = NotificationRule.objects.get(name="mine")
    assert (mine.owner, mine.team, mine.xid_classes) == (fleet["rita"], None, ["hardware"])
    assert client.post(f"/support/notifications/{mine.pk}/test/").status_code == 302
    assert mailoutbox[0].to == ["rita@example.org"] and "Test of notification rule mine" in mailoutbox[0].subject
    refused = client.post("/support/notifications/add/", {"name": "team's", "team": fleet["team"].pk,
                                                          "events": ["gpu.xid"], "channel": "email", "digest": "none"})
    assert refused.status_code == 200 and "team" in refused.context["form"].errors  # a member, not a manager

    api = token_client(fleet["rita"])
    made = api.post("/api/support/notification-rules/", {"name": "api", "events": ["gpu.xid", "node.degraded"],
                                                          "digest": "hourly"}, format="json")
    assert made.status_code == 201, made.json()
    assert (made.json()["owner"], made.json()["team"]) == ("rita", None)
    assert api.patch(f"/api/support/notification-rules/{mine.pk}/", {"digest": "daily"},
                     format="json").status_code == 200
    assert {row["name"] for row in api.get("/api/support/notification-rules/").json()["results"]} == {"mine", "api"}
    webhook = api.post("/api/support/notification-rules/", {"name": "hook", "events": ["gpu.xid"],
                                                            "channel": "webhook", "webhook": make_hook(
                                                                "https://noc.example.org/").pk}, format="json")
    assert webhook.status_code == 400  # researchers do not pick the managers' webhooks


def test_team_rules_are_edited_by_the_teams_managers_and_managers(fleet, client):
    lena = make_user("lena", RESEARCHER)
    TeamMember.objects.create(team=fleet["team"], user=lena, role="manager")
    teams = rule("vision's", team=fleet["team"])
    for user, status in ((lena, 200), (fleet["max"], 200), (fleet["rita"], 403), (make_user("vera", VIEWER), 403)):
        client.force_login(user)
        assert client.get(f"/support/notifications/{teams.pk}/edit/").status_code == status, user
    client.force_login(fleet["rita"])  # a member reads the team's rules
    assert client.get(f"/support/notifications/{teams.pk}/").status_code == 200
    client.force_login(lena)
    response = client.post("/support/notifications/add/", {
        "name": "vision daily", "team": fleet["team"].pk, "events": ["gpu.xid", "allocation.threshold"],
        "channel": "email", "digest": "daily", "enabled": "on"})
    assert response.status_code == 302
    assert NotificationRule.objects.get(name="vision daily").team == fleet["team"]
    fleetwide = client.post("/support/notifications/add/", {
        "name": "bad", "team": fleet["team"].pk, "events": ["recommendation.raised"], "channel": "email",
        "digest": "none"})
    assert "events" in fleetwide.context["form"].errors  # a team hears about its own hardware and budget


def test_the_list_filters_exports_and_refuses_nonsense_quietly(fleet, client):
    rule("mine", owner=fleet["max"], digest="daily")
    rule("vision's", team=fleet["team"], events=["node.degraded"])
    client.force_login(fleet["max"])
    page = client.get("/support/notifications/", {"digest": "daily"})
    assert [row.record.name for row in page.context["table"].page.object_list] == ["mine"]
    csv = client.get("/support/notifications/", {"_export": "csv"}).content.decode()
    assert "team vision" in csv and "Node or GPU degraded" in csv and "<" not in csv
    for params in ({"team": "x"}, {"enabled": "maybe"}, {"digest": "\u00b2"}, {"q": "a" * 500}):
        assert client.get("/support/notifications/", params).status_code == 200
    api = token_client(fleet["max"])
    assert api.post("/api/support/notification-rules/", {"name": "x", "events": ["nope"]},
                    format="json").status_code == 400
    assert api.post("/api/support/notification-rules/", {"name": "x", "events": ["gpu.xid"], "team": "vision",
                                                         "xid_classes": ["hardware"]}, format="json").status_code == 201
    assert api.post("/api/support/notification-rules/", {"name": "y", "events": ["source.stale"], "team": "vision"},
                    format="json").status_code == 400  # a team hears about its own hardware and budget only
