"""The rate card form (its rates are written in the admin and the API) and the form that issues a month."""

from django import forms

from portal.forms import MonthField

from .models import RateCard


class RateCardForm(forms.ModelForm):
    """A card's date, currency and note. ``RateCard.clean`` refuses a card that priced issued statements: the form
    shows that as its error (add a card with a later date instead)."""

    class Meta:
        model = RateCard
        fields = ["effective_from", "currency", "note"]
        widgets = {"effective_from": forms.DateInput(attrs={"type": "date"})}


class IssueForm(forms.Form):
    month = MonthField(label="Month (YYYY-MM)", help_text="A month that has ended; issuing it closes it.")
