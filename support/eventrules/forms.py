"""The notification rule form: for me or for a team I manage, the events (and XID classes), the channel, when."""

from django import forms

from planning.models import Webhook

from .models import XID_CLASSES, EventKind, NotificationRule
from .policy import teams_for


class NotificationRuleForm(forms.ModelForm):
    events = forms.MultipleChoiceField(choices=EventKind.choices, widget=forms.CheckboxSelectMultiple)
    xid_classes = forms.MultipleChoiceField(
        label="XID classes", choices=XID_CLASSES, widget=forms.CheckboxSelectMultiple, required=False,
        help_text="For XID errors: only these classes (none ticked: every class). The portal classifies each code "
                  "from NVIDIA's catalogue.")

    class Meta:
        model = NotificationRule
        fields = ["name", "team", "events", "xid_classes", "channel", "webhook", "digest", "enabled"]

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        teams = teams_for(user) if user is not None else self.fields["team"].queryset.none()
        if self.instance.team_id:  # kept on the list whoever edits it (the view checked they may)
            teams = teams | type(self.instance.team).objects.filter(pk=self.instance.team_id)
        self.fields["team"].queryset = teams.distinct().order_by("name")
        self.fields["team"].empty_label = "Me (my own rule)" if self.instance.owner_id in (None, getattr(
            user, "pk", None)) else f"{self.instance.owner} (their own rule)"
        self.fields["team"].label = "For"
        self.fields["team"].help_text = "A team's rule mails the team's address, its PI and its managers."
        may_use_webhooks = user is not None and user.has_perm("planning.view_webhook")
        webhooks = Webhook.objects.filter(enabled=True) if may_use_webhooks else Webhook.objects.none()
        if self.instance.webhook_id:
            webhooks = webhooks | Webhook.objects.filter(pk=self.instance.webhook_id)
        self.fields["webhook"].queryset = webhooks.order_by("name")
        self.fields["webhook"].help_text = ("For the webhook channel: one of the signed webhooks managers configure "
                                            "(Planning → Webhooks).")

    def clean(self):
        cleaned = super().clean()
        team = cleaned.get("team")
        if team is not None:
            self.instance.owner = None
        elif self.instance.pk is None or self.instance.team_id is not None:
            self.instance.owner = self.user  # a new rule, or a team's made one's own
        if cleaned.get("channel") != NotificationRule.Channel.WEBHOOK:
            cleaned["webhook"] = None
        return cleaned
