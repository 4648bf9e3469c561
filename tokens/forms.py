from django import forms


class CodeForm(forms.Form):
    identifier = forms.CharField(label="Login or e-mail", max_length=254, strip=True)
    code = forms.RegexField(
        label="Code",
        regex=r"^[0-9]{5}$",
        strip=True,
        error_messages={"invalid": "The code is the 5 digits from the e-mail."},
        widget=forms.TextInput(attrs={"inputmode": "numeric", "autocomplete": "one-time-code", "maxlength": 5}),
    )


class RecoveryRequestForm(forms.Form):
    identifier = forms.CharField(label="Login or e-mail", max_length=254, strip=True)
