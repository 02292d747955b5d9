"""The rate card form with its rates (a formset) and the form that issues a month."""

from django import forms

from portal.forms import MonthField

from .models import Rate, RateCard


class RateCardForm(forms.ModelForm):
    """A card's date, currency and note. ``RateCard.clean`` refuses a card that priced issued statements: the form
    shows that as its error (add a card with a later date instead)."""

    class Meta:
        model = RateCard
        fields = ["effective_from", "currency", "note"]
        widgets = {"effective_from": forms.DateInput(attrs={"type": "date"})}


class BaseRateFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        seen = set()
        for form in self.forms:
            if not form.cleaned_data or form.cleaned_data.get("DELETE"):
                continue
            key = (form.cleaned_data.get("gpu_model"), form.cleaned_data.get("partition", ""))
            if key in seen:  # the database would refuse the second at the save: said here, with the others
                raise forms.ValidationError("Two rates for the same GPU model and partition.")
            seen.add(key)


RateFormSet = forms.inlineformset_factory(
    RateCard, Rate, formset=BaseRateFormSet, fields=["gpu_model", "partition", "price_per_gpu_hour"], extra=3,
    can_delete=True)


class IssueForm(forms.Form):
    month = MonthField(label="Month (YYYY-MM)", help_text="A month that has ended; issuing it closes it.")
