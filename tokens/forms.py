from django import forms

from accounts.selectors import problem_sentence, sign_up_problems

IDENTIFIER = {"label": "Login or e-mail", "max_length": 254, "strip": True}


def _printable(value: str) -> bool:
    # PostgreSQL text cannot hold NUL; nobody's login or address holds a control character.
    return all(character.isprintable() for character in value)


class IdentifierForm(forms.Form):
    identifier = forms.CharField(**IDENTIFIER)

    def clean_identifier(self):
        identifier = self.cleaned_data["identifier"]
        # Logins and addresses are plain ASCII (accounts/sql/0007). Anything else names nobody, yet
        # PostgreSQL's lower() folds some of it onto ASCII ("İAN" is "ian"): it would find an account
        # under a spelling the limits count apart.
        if not identifier.isascii() or not _printable(identifier):
            raise forms.ValidationError("A login or e-mail address is plain ASCII letters, digits and signs.")
        return identifier


class NewPasswordForm(forms.Form):
    """Two typings of a new password; Django's validators check it once the account is known
    (accounts.services.account_password_check), since some compare it with the login and address."""

    password = forms.CharField(
        label="New password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password_again = forms.CharField(
        label="New password, again", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )

    def clean(self):
        cleaned = super().clean()
        if (
            cleaned.get("password")
            and cleaned.get("password_again")
            and cleaned["password"] != cleaned["password_again"]
        ):
            self.add_error("password_again", "The two passwords differ.")
        return cleaned


class ChoosePasswordForm(NewPasswordForm):
    """A first password (sign-up, activation): labelled without "new"."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("password", "password_again"):
            self.fields[name].label = self.fields[name].label.replace("New password", "Password")


class OptionalNewPasswordForm(ChoosePasswordForm):
    """At activation by code: a password is needed only when the account has none (sign-up chose one)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("password", "password_again"):
            self.fields[name].required = False
        self.fields["password"].help_text = "Only if you did not choose one when you signed up."


class CodeForm(IdentifierForm):
    code = forms.RegexField(
        label="Code",
        regex=r"^[0-9]{5}$",
        strip=True,
        error_messages={"invalid": "The code is the 5 digits from the e-mail."},
        widget=forms.TextInput(attrs={"inputmode": "numeric", "autocomplete": "one-time-code", "maxlength": 5}),
    )


FIELD_ORDER = ["identifier", "code", "password", "password_again"]


class ActivationCodeForm(CodeForm, OptionalNewPasswordForm):
    field_order = FIELD_ORDER


class RecoveryCodeForm(CodeForm, NewPasswordForm):
    field_order = FIELD_ORDER


class SignUpForm(ChoosePasswordForm):
    email = forms.EmailField(label="E-mail", max_length=254)
    login = forms.CharField(label="Login", max_length=254, strip=True, help_text="Letters, digits and . _ + -")
    field_order = ["email", "login", "password", "password_again"]

    def clean(self):
        cleaned = super().clean()
        email, login = cleaned.get("email"), cleaned.get("login")
        if email and login and _printable(email) and _printable(login):
            for field, problem in sign_up_problems(email=email, login=login).items():
                self.add_error(field, problem_sentence(problem))
        elif login and not _printable(login):
            self.add_error("login", "Login may only hold ASCII letters, digits and . _ + -.")
        return cleaned
