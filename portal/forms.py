from django import forms


class DateInput(forms.DateInput):
    """The browser's date picker."""

    input_type = "date"


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'procurement sync'.")
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, help_text="Leave empty for a token that does not expire."
    )
