"""From a business event to the people subscribed to it: ``hear`` (subscribed to ``portal.events`` by the support
app) has ``record`` write one ``NotificationEvent`` per rule the event matches once the emitter commits; a rule that
tells at once has its event sent by ``tasks.deliver_event`` then, a digest rule's events wait for ``send_digests``
(hourly or daily), which sends one message per subscriber with every event since its last one.

Each event is sent at most once: a rule records an event once (unique per rule and key, so an event emitted again
is not recorded again), and a sender first claims what it sends (pending → sending, a conditional UPDATE), so a
retried or duplicated task finds nothing left to send. A send that fails puts its events back to pending (digest)
or marks them failed (at once), never undoing the change that emitted them.

Webhooks are planning's (``planning.webhooks.delivery``): the same signed, logged and retried delivery as every
other webhook event.
"""

import hashlib
import json
import logging
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMessage
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from inventory.allocations.alerts import recipients as team_recipients
from inventory.policy import reads_whole_fleet
from planning.webhooks import delivery as webhooks
from portal.tasks import enqueue

from .models import EventKind, NotificationEvent, NotificationRule

log = logging.getLogger(__name__)

K = EventKind
DIGEST_EVENT = "notifications.digest"  # the webhook event of a digest: ``data.events`` lists them
TEST_EVENT = "notifications.test"
SWEEP_GRACE = timedelta(minutes=2)  # an event to tell at once still pending this long after: its task was lost


# --- Who may hear what -----------------------------------------------------------------------------------


def _team_names(user):
    if not hasattr(user, "_eventrules_teams"):
        user._eventrules_teams = set(user.teams.values_list("name", flat=True))
    return user._eventrules_teams


def _reads_ticket(user, payload):
    if user.has_perm("support.read_every_ticket"):
        return True
    return user.has_perm("support.read_ticket") and (
        payload.get("requester_id") == user.pk or payload.get("team") in _team_names(user))


# What a user's own rule may tell its owner: what the owner may read in the portal.
READERS = {
    K.XID: lambda user, payload: user.has_perm("inventory.view_node"),
    K.DEGRADED: lambda user, payload: user.has_perm("inventory.view_node"),
    K.SLA_BREACHED: _reads_ticket,
    K.ALLOCATION: lambda user, payload: reads_whole_fleet(user) or payload.get("team") in _team_names(user),
    K.SOURCE_STALE: lambda user, payload: user.has_perm("inventory.read_telemetry"),
    K.RECOMMENDATION: lambda user, payload: user.has_perm("planning.view_recommendation"),
}


def matches(rule, event, payload):
    """Whether ``rule`` hears ``event``: one of its kinds, of its XID classes, and about its team (a team's rule)
    or one its owner may read (a user's)."""
    if not rule.enabled or event not in (rule.events or []):
        return False
    if event == K.XID and rule.xid_classes and payload.get("class") not in rule.xid_classes:
        return False
    if rule.team_id is not None:
        return payload.get("team") == rule.team.name
    owner = rule.owner
    return owner is not None and owner.is_active and READERS[event](owner, payload)


# --- Recording ------------------------------------------------------------------------------------------


def key_of(event, payload):
    """The event's identity: its kind and its payload (the same event emitted twice has the same key)."""
    text = json.dumps([event, payload], sort_keys=True, cls=DjangoJSONEncoder)
    return hashlib.sha256(text.encode()).hexdigest()


def hear(event, payload):
    """``portal.events`` subscriber: once the emitter's transaction commits (nothing for a change rolled back, and no
    query inside the emitter's transaction: a bulk move of 1,000 nodes stays a few queries), ``record`` the event."""
    if event not in EventKind.values:
        return
    payload = json.loads(json.dumps(payload, cls=DjangoJSONEncoder))  # dates, decimals → JSON values, now
    transaction.on_commit(lambda: record(event, payload), robust=True)  # a failure is logged, never the emitter's


def record(event, payload):
    """Record the event for every rule it matches; queue at once those that tell at once. Returns those recorded."""
    key = key_of(event, payload)
    rules = [rule for rule in NotificationRule.objects.filter(enabled=True).select_related("owner", "team", "webhook")
             if matches(rule, event, payload)]  # few rules; filtered in Python (SQLite has no JSON "contains")
    recorded = []
    for rule in rules:
        try:
            with transaction.atomic():  # a savepoint: an event the rule already has leaves the emitter's going
                notice = NotificationEvent.objects.create(rule=rule, event=event, key=key, payload=payload)
        except IntegrityError:
            continue
        recorded.append(notice)
        if rule.digest == NotificationRule.Digest.NONE:
            transaction.on_commit(lambda pk=notice.pk: _queue(pk))
    return recorded


def _queue(pk):
    from .tasks import deliver_event  # the task module imports this one

    enqueue(deliver_event, pk)  # a broker down: the hourly sweep queues it again


def claim(queryset):
    """Compare-and-set pending → sending on ``queryset``'s pending rows; returns the ids this caller won."""
    with transaction.atomic():
        ids = list(queryset.select_for_update(skip_locked=True).filter(status=NotificationEvent.Status.PENDING)
                   .values_list("pk", flat=True))
        NotificationEvent.objects.filter(pk__in=ids).update(status=NotificationEvent.Status.SENDING)
    return ids


# --- What a message says ------------------------------------------------------------------------------------


def _url(name, pk):
    if pk is None:
        return ""
    try:
        return settings.PORTAL_URL + reverse(name, args=[pk])
    except NoReverseMatch:
        return ""


def _gpu(payload):
    return f"GPU {payload['gpu']}" if payload.get("gpu") is not None else f"GPU #{payload.get('gpu_id')}"


def describe(event, payload):
    """``(title, detail lines, link)`` of an event, in words."""
    p = payload
    if event == K.XID:
        return (f"XID {p['code']} on {p['node']} {_gpu(p)}",
                [f"Node: {p['node']}" + (f" (site {p['site']})" if p.get("site") else ""),
                 f"GPU: {p.get('gpu')}" + (f" ({p['uuid']})" if p.get("uuid") else ""),
                 f"Code: XID {p['code']} ({p['class']})", f"Meaning: {p['meaning']}", f"Seen: {p['at']}"],
                _url("inventory:node_detail", p.get("node_id")))
    if event == K.DEGRADED:
        what = f"{p['node']} {_gpu(p)}" if p.get("gpu_id") else f"Node {p['node']}"
        return (f"{what} degraded", [f"Reason: {p.get('reason') or '—'}", f"At: {p['at']}"],
                _url("inventory:gpu_detail", p["gpu_id"]) if p.get("gpu_id") else _url("inventory:node_detail",
                                                                                       p.get("node_id")))
    if event == K.SLA_BREACHED:
        return (f"Ticket #{p['ticket_id']} past its {p['clock']} SLA",
                [f"Ticket: #{p['ticket_id']} {p['title']}", f"Priority: {p['priority']}",
                 f"{p['clock'].capitalize()} was due: {p['due']}"],
                _url("support:ticket_detail", p["ticket_id"]))
    if event == K.ALLOCATION:
        return (f"{p['team']}: {p['percent']} % of its GPU-hour budget used",
                [f"Allocation: {p.get('scope') or p['allocation_id']}",
                 f"Used: {p['used']} of {p['budget']} GPU-hours (level {p['level']} %)"],
                _url("inventory:teamallocation_detail", p["allocation_id"]))
    if event == K.SOURCE_STALE:
        return (f"Telemetry source {p['source']} stale", [f"Failing since: {p['since']}",
                                                          "Its figures stop where its last pull succeeded."],
                _url("inventory:telemetrysource_detail", p["source_id"]))
    if event == K.RECOMMENDATION:
        return (f"Recommendation: {p['title']}", [f"Kind: {p['kind']}", f"Severity: {p['severity']}"],
                _url("planning:recommendation_detail", p["recommendation_id"]))
    return event, [json.dumps(p)], ""


def addresses(rule):
    """Where a rule's e-mails go: a user's address, or the team's (its address, PI and managers)."""
    if rule.team_id is not None:
        return team_recipients(rule.team)
    return [rule.owner.email] if rule.owner and rule.owner.email else []


def _subject(text):
    return f"[Cluster Portal] {text}"[:200]


def mail(to, subject, body):
    EmailMessage(subject=subject, body=body, from_email=settings.DEFAULT_FROM_EMAIL, to=to).send()


# --- Sending ----------------------------------------------------------------------------------------------------


def deliver(notice_id):
    """Send one event of a rule that tells at once (its task); nothing when another task has it."""
    if not claim(NotificationEvent.objects.filter(pk=notice_id)):
        return False
    notice = NotificationEvent.objects.select_related("rule__owner", "rule__team", "rule__webhook").get(pk=notice_id)
    rule = notice.rule
    try:
        if rule.channel == NotificationRule.Channel.WEBHOOK:
            webhooks.emit(notice.event, {**notice.payload, "rule": rule.name}, webhooks=[rule.webhook])
        else:
            to = addresses(rule)
            if not to:
                raise ValueError("the rule's subscriber has no e-mail address")
            title, lines, link = describe(notice.event, notice.payload)
            body = render_to_string("support/eventrules/email/event.txt",
                                    {"title": title, "lines": lines, "link": link, "rule": rule,
                                     "rules_url": settings.PORTAL_URL + reverse("support:notificationrule_list")})
            mail(to, _subject(title), body)
    except Exception as error:  # a refused mail is logged on the event, never raised to the emitter's task
        log.exception("Could not send notification %s", notice_id)
        NotificationEvent.objects.filter(pk=notice_id).update(status=NotificationEvent.Status.FAILED,
                                                                error=str(error)[:2000])
        return False
    NotificationEvent.objects.filter(pk=notice_id).update(status=NotificationEvent.Status.SENT, sent_at=timezone.now(),
                                                            error="")
    return True


def subscriber_key(rule):
    """Who a digest goes to: one message per subscriber, whatever the number of their rules."""
    if rule.channel == NotificationRule.Channel.WEBHOOK:
        return ("webhook", rule.webhook_id)
    return ("team", rule.team_id) if rule.team_id is not None else ("user", rule.owner_id)


def send_digests(frequency, now=None):
    """Claim every pending event of the ``frequency`` (hourly, daily) rules recorded up to ``now``, and send each
    subscriber one message with them all (an event two of its rules heard, once). Returns the messages sent."""
    now = now or timezone.now()
    ids = claim(NotificationEvent.objects.filter(rule__digest=frequency, rule__enabled=True, created__lte=now))
    if not ids:
        return 0
    notices = (NotificationEvent.objects.filter(pk__in=ids).select_related("rule__owner", "rule__team",
                                                                            "rule__webhook").order_by("created", "pk"))
    groups = defaultdict(list)
    for notice in notices:
        groups[subscriber_key(notice.rule)].append(notice)
    sent = 0
    for group in groups.values():
        pks = [notice.pk for notice in group]
        try:
            _send_digest(frequency, group)
        except Exception as error:
            log.exception("Could not send a %s digest", frequency)
            NotificationEvent.objects.filter(pk__in=pks).update(status=NotificationEvent.Status.PENDING,
                                                                error=str(error)[:2000])
            continue
        NotificationEvent.objects.filter(pk__in=pks).update(status=NotificationEvent.Status.SENT, sent_at=now,
                                                            error="")
        sent += 1
    return sent


def _send_digest(frequency, group):
    unique = list({notice.key: notice for notice in group}.values())
    rule = group[0].rule
    if rule.channel == NotificationRule.Channel.WEBHOOK:
        told = [{"event": n.event, "data": n.payload, "at": n.created} for n in unique]
        webhooks.emit(DIGEST_EVENT, {"frequency": frequency, "events": told}, webhooks=[rule.webhook])
        return
    to = addresses(rule)
    if not to:
        raise ValueError("the subscriber has no e-mail address")
    items = [(notice, *describe(notice.event, notice.payload)) for notice in unique]
    body = render_to_string("support/eventrules/email/digest.txt", {
        "frequency": frequency, "items": items, "subscriber": rule.subscriber,
        "rules_url": settings.PORTAL_URL + reverse("support:notificationrule_list")})
    mail(to, _subject(f"{frequency.capitalize()} digest: {len(unique)} event{'s' if len(unique) != 1 else ''} "
                      f"for {rule.subscriber}"), body)


def sweep(now=None):
    """Queue again the events to tell at once whose task was lost (the broker down); returns how many."""
    cutoff = (now or timezone.now()) - SWEEP_GRACE
    ids = list(NotificationEvent.objects.filter(status=NotificationEvent.Status.PENDING, created__lte=cutoff,
                                                rule__digest=NotificationRule.Digest.NONE).values_list("pk", flat=True))
    for pk in ids:
        _queue(pk)
    return len(ids)


def send_test(rule):
    """Send a test message through the rule's channel now; returns what was done, in words."""
    if rule.channel == NotificationRule.Channel.WEBHOOK:
        webhooks.emit(TEST_EVENT, {"rule": rule.name, "message": "Test notification from Cluster Portal."},
                      webhooks=[rule.webhook])
        return f"Test event queued for webhook {rule.webhook}."
    to = addresses(rule)
    if not to:
        raise ValueError(f"{rule.subscriber} has no e-mail address to send to.")
    body = render_to_string("support/eventrules/email/test.txt", {"rule": rule, "events": [
        EventKind(event).label for event in rule.events if event in EventKind.values]})
    mail(to, _subject(f"Test of notification rule {rule.name}"), body)
    return f"Test e-mail sent to {', '.join(to)}."
