"""The webhook form of the pages."""

from django import forms

from .models import Webhook


class WebhookForm(forms.ModelForm):
    """The secret is write-only: never shown again; leave it empty when editing to keep the current one."""

    url = forms.URLField(label="URL", max_length=500, assume_scheme="https")
    events = forms.MultipleChoiceField(choices=Webhook.Event.choices, widget=forms.CheckboxSelectMultiple)
    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), required=False, max_length=200,
                             help_text="Signs each payload (X-Portal-Signature). Leave empty to keep the current one.")

    class Meta:
        model = Webhook
        fields = ["name", "url", "events", "secret", "enabled"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stored_secret = self.instance.secret
        self.initial["secret"] = ""

    def clean_secret(self):
        secret = self.cleaned_data["secret"] or self.stored_secret
        if not secret:
            raise forms.ValidationError("A new webhook needs a secret.")
        return secret
