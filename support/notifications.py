"""Email notices on create, assign, comment and status change (the console backend in the demo).

One message per event to the people concerned, never to the person who acted: the requester (not for
internal comments), the assignee, and for a new ticket the support queue's address (``SUPPORT_EMAIL``).
A mail server that refuses is logged; it never undoes the change it tells about."""

import logging

from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string

log = logging.getLogger(__name__)

CREATED, ASSIGNED, COMMENTED, STATUS = "created", "assigned", "commented", "status"
SUBJECTS = {CREATED: "new ticket", ASSIGNED: "assigned to {assignee}", COMMENTED: "new comment",
            STATUS: "now {status}"}


def recipients(ticket, event, actor=None, internal=False):
    people = [ticket.assignee]
    if not internal:
        people.append(ticket.requester)
    addresses = {person.email for person in people if person is not None and person.email and person != actor}
    if event == CREATED:
        if settings.SUPPORT_EMAIL:
            addresses.add(settings.SUPPORT_EMAIL)
        if ticket.team_id and ticket.team.email and not internal:
            addresses.add(ticket.team.email)
    return sorted(addresses)


def notify(ticket, event, actor=None, comment=None, note=""):
    """Mail the people concerned about ``event``; returns the addresses written to."""
    internal = comment is not None and comment.internal
    to = recipients(ticket, event, actor, internal)
    if not to:
        return []
    subject = SUBJECTS[event].format(
        assignee=ticket.assignee.get_username() if ticket.assignee else "nobody",
        status=ticket.get_status_display().lower(),
    )
    context = {"ticket": ticket, "event": event, "actor": actor, "comment": comment, "note": note,
               "portal_url": settings.PORTAL_URL}
    message = EmailMessage(
        subject=f"[Ticket #{ticket.pk}] {ticket.title}: {subject}",
        body=render_to_string("support/email/notice.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL, to=to,
    )
    try:
        message.send()
    except Exception:  # a mail server's refusal must not undo the ticket change
        log.exception("Could not mail the %s notice of ticket %s", event, ticket.pk)
        return []
    return to
