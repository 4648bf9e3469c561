"""The public landing pages of the e-mails. A GET never consumes a token (mail scanners fetch
links); a POST does. Every outcome has its own page, never a 500. The person acting is not known
to the services yet (actor=None: audited as the database role)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from accounts.errors import EmailAlreadyClaimed
from platform_events.db.refusals import LifecycleError
from tokens.errors import (
    AccountSuspended,
    TokenAlreadyUsed,
    TokenBurnt,
    TokenExpired,
    TokenNotFound,
    TokenSuperseded,
    WrongAccountState,
    WrongCode,
)
from tokens.forms import CodeForm, RecoveryRequestForm
from tokens.models import TokenAction
from tokens.services import token_consume, token_consume_code, token_request_password_recovery

# What each refusal means to the person holding the link: (HTTP status, heading, explanation).
REFUSALS = {
    TokenNotFound: (404, "This link or code is not valid", "Check that you copied all of it, or ask for a new e-mail."),
    TokenAlreadyUsed: (409, "Already used", "This link or code has been used already; each works once."),
    TokenSuperseded: (410, "Replaced by a newer e-mail", "Use the link or code from the most recent e-mail."),
    TokenExpired: (410, "Expired", "This link or code is no longer valid. Ask for a new e-mail."),
    TokenBurnt: (
        403,
        "Code blocked",
        "Too many wrong codes were tried, so this code no longer works. The link in the same e-mail still does.",
    ),
    AccountSuspended: (403, "Account suspended", "This account is suspended. Please contact support."),
    WrongAccountState: (409, "Nothing to do", "This account is not in a state where this link applies."),
    EmailAlreadyClaimed: (
        409,
        "E-mail address already in use",
        "Another account has already been activated with this e-mail address.",
    ),
}


def outcome_page(request: HttpRequest, heading: str, text: str, status: int = 200) -> HttpResponse:
    return render(request, "pages/outcome.html", {"heading": heading, "text": text}, status=status)


def refusal_page(request: HttpRequest, error: LifecycleError) -> HttpResponse:
    status, heading, text = REFUSALS.get(type(error), (400, "Not possible", "This request cannot be completed."))
    return outcome_page(request, heading, text, status)


def form_page(request: HttpRequest, form, *, heading: str, button: str) -> HttpResponse:
    """The form, again with its errors (400) after a bad POST."""
    context = {"heading": heading, "form": form, "button": button}
    return render(request, "pages/form.html", context, status=400 if form.errors else 200)


def _confirm_link(request, secret, *, action, title, button, done):
    if request.method == "GET":
        return render(request, "pages/confirm.html", {"heading": title, "button": button})
    try:
        token = token_consume(secret=secret, action=action, actor=None)
    except LifecycleError as error:
        return refusal_page(request, error)
    return outcome_page(request, done, f"Account: {token.account.login}.")


@require_http_methods(["GET", "POST"])
def activate_link(request: HttpRequest, secret: str) -> HttpResponse:
    return _confirm_link(
        request,
        secret,
        action=TokenAction.ACTIVATION,
        title="Activate your account",
        button="Activate my account",
        done="Your account is active",
    )


@require_http_methods(["GET", "POST"])
def recover_link(request: HttpRequest, secret: str) -> HttpResponse:
    return _confirm_link(
        request,
        secret,
        action=TokenAction.PASSWORD_RECOVERY,
        title="Recover your account",
        button="Yes, this is my account",
        done="Recovery confirmed",
    )


@require_http_methods(["GET", "POST"])
def activate_code(request: HttpRequest) -> HttpResponse:
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            token = token_consume_code(
                identifier=form.cleaned_data["identifier"], code=form.cleaned_data["code"], actor=None
            )
        except WrongCode as error:
            form.add_error(
                "code",
                f"Wrong code: {error.attempts_left} attempt(s) left."
                if error.attempts_left
                else "Wrong code. This code no longer works; the link in the same e-mail still does.",
            )
        except LifecycleError as error:
            return refusal_page(request, error)
        else:
            return outcome_page(request, "Your account is active", f"Account: {token.account.login}.")
    return form_page(request, form, heading="Activate with a code", button="Activate")


@require_http_methods(["GET", "POST"])
def recover_request(request: HttpRequest) -> HttpResponse:
    form = RecoveryRequestForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        token_request_password_recovery(identifier=form.cleaned_data["identifier"], actor=None)
        # The same answer whether or not an account exists.
        return outcome_page(
            request, "Check your e-mail", "If an active account has this login or e-mail, we sent it a link."
        )
    return form_page(request, form, heading="Recover your account", button="Send me a link")
