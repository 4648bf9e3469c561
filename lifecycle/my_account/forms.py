from django import forms

from tokens.forms import IdentifierForm, NewPasswordForm


class SignInForm(IdentifierForm):
    password = forms.CharField(
        label="Password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["identifier"].widget.attrs["autocomplete"] = "username"


class ChangePasswordForm(NewPasswordForm):
    """The current password, then the new one twice; the validators see the new one once the view
    has the account (accounts.services.account_password_check)."""

    current_password = forms.CharField(
        label="Current password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )
    field_order = ["current_password", "password", "password_again"]


class DeleteAccountForm(forms.Form):
    password = forms.CharField(
        label="Your password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )


class ChangeEmailForm(forms.Form):
    # The database's address rules check it (accounts/sql/0007_address_rules.sql), in their own words.
    email = forms.CharField(
        label="New e-mail address",
        max_length=254,
        strip=True,
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
    password = forms.CharField(
        label="Your password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )
