"""The notification rule list's table."""

import django_tables2 as tables

from .models import EventKind, NotificationRule

LABELS = dict(EventKind.choices)


class NotificationRuleTable(tables.Table):
    name = tables.Column(linkify=True)
    subscriber = tables.Column("For", accessor="pk", order_by=("team__name", "owner__username"))
    events = tables.Column(orderable=False)
    channel = tables.Column()
    digest = tables.Column()

    class Meta:
        model = NotificationRule
        fields = ["name", "subscriber", "events", "xid_classes", "channel", "digest", "enabled"]

    def render_subscriber(self, record):
        return f"team {record.team}" if record.team_id else str(record.owner)

    def render_events(self, value):
        return ", ".join(LABELS.get(event, event) for event in value or [])

    def render_xid_classes(self, value):
        return ", ".join(value) if value else "all"

    def render_channel(self, record):
        return f"webhook {record.webhook}" if record.webhook_id else record.get_channel_display()
