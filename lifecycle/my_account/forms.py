from django import forms

from tokens.forms import IdentifierForm


class SignInForm(IdentifierForm):
    password = forms.CharField(
        label="Password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["identifier"].widget.attrs["autocomplete"] = "username"
