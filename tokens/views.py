"""The public pages: sign up, activate (by the e-mail's link or its code), recover to a new password
(link or code), and ask for an e-mail again. A GET never consumes a token (mail scanners fetch
links); a POST does. Every outcome has its own page, never a 500.

No page tells whether a login or address names an account (docs/public-pages.md, "No oracle"): the request
forms answer the same for every input and leave the work to a queued task (tokens/tasks.py); the
code forms answer a wrong code the same way whoever it was for. Only a link's secret or the right
code shows whose account it is.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from accounts.erasure import erasure_due
from accounts.errors import EmailAlreadyClaimed
from accounts.models import AccountPassword, AccountStatus
from accounts.services import account_password_check, account_password_hash
from platform_events.audit.context import audit_context, request_origin
from platform_events.client_ip import client_key
from platform_events.limits.counters import LimitExceeded, limits_hit
from platform_events.quantities import quantity
from platform_events.refusals import Refused
from tokens.errors import (
    AccountDeprovisioned,
    AccountSuspended,
    PasswordNeeded,
    TokenAlreadyUsed,
    TokenBurnt,
    TokenExpired,
    TokenNotFound,
    TokenSuperseded,
    WrongAccountState,
    WrongCode,
)
from tokens.forms import (
    ActivationCodeForm,
    ChoosePasswordForm,
    IdentifierForm,
    NewPasswordForm,
    RecoveryCodeForm,
    SignUpForm,
)
from tokens.models import Token, TokenAction
from tokens.pages import NextStep, ask_again, form_page, outcome_page, sign_in, too_many_page
from tokens.services import (
    TOKEN_HOLDER,
    NewPassword,
    public_limit,
    token_by_secret,
    token_consume,
    token_consume_code,
)
from tokens.tasks import queue_public_request

WRONG_CODE = (
    "This code does not match the latest e-mail sent to this login or e-mail address. Check it, or open"
    " the link in that e-mail instead; after 5 wrong codes a code stops working, its link does not."
)
CHECK_YOUR_EMAIL = "Check your e-mail"

# What each refusal means to the person holding the link or the right code: (status, heading, text, next steps).
REFUSALS = {
    TokenNotFound: (404, "This link is not valid", "Check that you copied all of it.", [ask_again()]),
    TokenAlreadyUsed: (409, "Already used", "This link or code has been used already; each works once.", []),
    TokenSuperseded: (
        410,
        "Replaced by a newer e-mail",
        "A newer e-mail was sent after this one: use its link or code.",
        [ask_again()],
    ),
    TokenExpired: (410, "Expired", "This link or code is no longer valid.", [ask_again()]),
    TokenBurnt: (
        403,
        "Code blocked",
        "Too many wrong codes were tried, so this code no longer works. The link in the same e-mail still does;"
        " a new e-mail brings a new link and code, and replaces this one.",
        [ask_again()],
    ),
    # Answered as a link nobody was sent: the pages do not say that a deprovisioned account exists.
    AccountDeprovisioned: (404, "This link is not valid", "Check that you copied all of it.", [ask_again()]),
    AccountSuspended: (403, "Account suspended", "This account is suspended. Please contact support.", []),
    WrongAccountState: (409, "Nothing to do", "This account is not in a state where this link applies.", []),
    EmailAlreadyClaimed: (
        409,
        "E-mail address already in use",
        "Another account has already been activated with this e-mail address. Please contact support.",
        [],
    ),
}


def refusal_page(request: HttpRequest, error: Refused, token: Token | None = None) -> HttpResponse:
    status, heading, text, next_steps = REFUSALS.get(
        type(error), (400, "Not possible", "This request cannot be completed.", [])
    )
    account = token.account if token is not None else None
    if isinstance(error, TokenAlreadyUsed) and account is not None and account.status == AccountStatus.ACTIVE:
        text = f"{text} Your account is active: sign in with your login, {account.login}."
        next_steps = sign_in()
    if token is not None and token.action == TokenAction.PASSWORD_RECOVERY:
        # A recovery link's way on is always another recovery e-mail, sign-in page or not.
        next_steps = [ask_again("recover")] if next_steps or isinstance(error, TokenAlreadyUsed) else []
    if token is not None and token.action == TokenAction.RESTORE:
        # A restore e-mail is asked for again by signing up again with the address.
        next_steps = [NextStep("Sign up again with this address", reverse("sign-up"))] if next_steps else []
    if token is not None and token.action == TokenAction.DELETION:
        next_steps = [ask_again("delete-account")] if next_steps else []
    if token is not None and token.action == TokenAction.EMAIL_CHANGE:
        # A new address is asked for again from the account page.
        next_steps = [ask_again("account-email")] if next_steps else []
    if token is not None and token.action == TokenAction.EMAIL_CHANGE_UNDO:
        next_steps = []  # an undo is not asked for again: support restores an address after 7 days
    return outcome_page(request, heading, text, status=status, account=account, next_steps=next_steps)


def _limited(request: HttpRequest, kind: str, identifier: str) -> HttpResponse | None:
    """The 429 page when the ``kind`` limit of this identifier or of this client is over (both counted
    either way), else None."""
    # No address (gunicorn on a unix socket leaves REMOTE_ADDR empty): one shared count, never a 500.
    # An IPv6 client is its /64.
    client = client_key(request) or "unknown"
    hits = [(public_limit(f"{kind}-per-identifier"), identifier), (public_limit(f"{kind}-per-client"), client)]
    try:
        limits_hit(hits)
    except LimitExceeded as exceeded:
        return too_many_page(request, exceeded)
    return None


def _posted(request: HttpRequest):
    """The form's data on a POST, even an empty one (``request.POST or None`` would show a blank form)."""
    return request.POST if request.method == "POST" else None


def _has_password(account) -> bool:
    return AccountPassword.objects.filter(account=account).exists()


# Sign-up


@sensitive_post_parameters("password", "password_again")
@require_http_methods(["GET", "POST"])
def sign_up(request: HttpRequest) -> HttpResponse:
    if not settings.PUBLIC_SIGN_UP:
        return outcome_page(
            request, "Sign-up is closed", "Accounts are made by our support team here. Please contact them.", status=404
        )
    form = SignUpForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        email, login, password = (form.cleaned_data[name] for name in ("email", "login", "password"))
        try:
            # Before the limit: a refused password uses up nobody's allowance (else anyone could spend a
            # victim's sign-up allowance with three weak passwords).
            account_password_check(password, login=login, email=email)
        except ValidationError as error:
            form.add_error("password", error)
        else:
            if refused := _limited(request, "sign-up", email):
                return refused
            password_hash = account_password_hash(password)  # checked above
            queue_public_request("sign_up", email, login, password_hash, request_origin(request))
            return outcome_page(
                request,
                CHECK_YOUR_EMAIL,
                "If this address can take a new account, an activation e-mail is on its way to it, with a link"
                " and a code; both work for 15 minutes. If you already have an account with this address,"
                " recover it instead.",
                next_steps=[
                    NextStep("Enter the code", reverse("activate-code")),
                    ask_again(),
                    NextStep("Recover", reverse("recover")),
                ],
            )
    return form_page(
        request,
        form,
        heading="Create your account",
        button="Sign up",
        intro="We will e-mail you a link and a code to activate the account.",
        links=[NextStep("Already have an account? Recover it", reverse("recover"))],
    )


# Activation


@sensitive_post_parameters("password", "password_again")
@require_http_methods(["GET", "POST"])
def activate_link(request: HttpRequest, secret: str) -> HttpResponse:
    token = token_by_secret(secret, action=TokenAction.ACTIVATION)
    if token is None:
        return refusal_page(request, TokenNotFound("tokens: this link is not valid"))
    needs_password = not _has_password(token.account)
    # A sign-up chose its password already; an account made by staff or a service chooses it here.
    form = ChoosePasswordForm(_posted(request)) if needs_password else None
    if request.method == "POST" and (form is None or form.is_valid()):
        password = form.cleaned_data["password"] if form is not None else None
        try:
            with audit_context(request=request):
                token = token_consume(
                    secret=secret,
                    action=TokenAction.ACTIVATION,
                    actor=TOKEN_HOLDER,
                    new_password=NewPassword(password, required=needs_password),
                )
        except ValidationError as error:
            form.add_error("password", error)
        except Refused as error:
            return refusal_page(request, error, token)
        else:
            return _activated(request, token)
    if form is None:
        context = {"heading": "Activate your account", "button": "Activate my account", "account": token.account}
        return render(request, "pages/confirm.html", context)
    return form_page(
        request,
        form,
        heading="Activate your account",
        button="Activate my account",
        intro="Choose a password to finish.",
        account=token.account,
    )


def _activated(request: HttpRequest, token: Token) -> HttpResponse:
    return outcome_page(
        request,
        "Your account is active",
        f"Sign in with your login, {token.account.login}, and your password.",
        account=token.account,
        next_steps=sign_in(),
    )


@sensitive_post_parameters("password", "password_again")
@require_http_methods(["GET", "POST"])
def activate_code(request: HttpRequest) -> HttpResponse:
    return _code_page(
        request,
        ActivationCodeForm(_posted(request)),
        TokenAction.ACTIVATION,
        done=_activated,
        heading="Activate with a code",
        button="Activate",
        intro="Enter the login or e-mail you signed up with and the 5-digit code from the e-mail.",
        links=[ask_again()],
    )


def _code_page(request, form, action: TokenAction, *, done, **page) -> HttpResponse:
    """A code form: the code consumes the newest token of ``action`` for the identifier, with the
    password the form gives (an activation needs one when the account has none)."""
    if request.method == "POST" and form.is_valid():
        identifier = form.cleaned_data["identifier"]
        if refused := _limited(request, "code", identifier):
            return refused
        activation = action == TokenAction.ACTIVATION
        try:
            with audit_context(request=request):
                token = token_consume_code(
                    identifier=identifier,
                    code=form.cleaned_data["code"],
                    action=action,
                    actor=TOKEN_HOLDER,
                    new_password=NewPassword(form.cleaned_data["password"] or None, required=activation),
                )
        except (WrongCode, TokenNotFound):
            form.add_error("code", WRONG_CODE)  # the same words for every login or address, known or not
        except PasswordNeeded:
            form.add_error("password", "Choose a password: this account has none yet.")
        except ValidationError as error:
            form.add_error("password", error)
        except Refused as error:
            return refusal_page(request, error)
        else:
            return done(request, token)
    return form_page(request, form, **page)


# Recovery


@require_http_methods(["GET", "POST"])
def recover_request(request: HttpRequest) -> HttpResponse:
    return _request_mail(
        request,
        TokenAction.PASSWORD_RECOVERY,
        heading="Recover your account",
        intro="Enter your login or e-mail. If it names an active account, we e-mail it a link and a code"
        " to choose a new password.",
        done="If an active account has this login or e-mail, we sent it a link and a code to choose a new"
        " password; both work for 15 minutes. A link sent earlier keeps working.",
        code_page="recover-code",
    )


@require_http_methods(["GET", "POST"])
def resend_activation(request: HttpRequest) -> HttpResponse:
    return _request_mail(
        request,
        TokenAction.ACTIVATION,
        heading="Send me a new activation e-mail",
        intro="Enter the login or e-mail you signed up with.",
        done="If an account waiting for activation has this login or e-mail, we sent it the activation"
        " e-mail again, with a link and a code. A link sent earlier keeps working until it expires, unless"
        " its code was blocked by wrong codes: then the e-mail is a new one, which replaces it.",
        code_page="activate-code",
    )


def _request_mail(request, action: TokenAction, *, heading: str, intro: str, done: str, code_page: str | None):
    form = IdentifierForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        identifier = form.cleaned_data["identifier"]
        if refused := _limited(request, "mail", identifier):
            return refused
        # Queued for every input: issuing a token only for real accounts would show in the answer's time.
        queue_public_request("send_again", identifier, action.value, request_origin(request))
        next_steps = [NextStep("Enter the code", reverse(code_page))] if code_page else []
        return outcome_page(request, CHECK_YOUR_EMAIL, done, next_steps=next_steps)
    return form_page(request, form, heading=heading, button="Send me an e-mail", intro=intro)


# Deleting an account

# The trail's reason for a deprovisioning the person asked for on these pages.
DELETION_REASON = "the person asked to delete the account (public page)"
EMAIL_CHANGE_REASON = "the person confirmed the new address (public page)"
EMAIL_UNDO_REASON = "the person put the old address back (public page)"


@require_http_methods(["GET", "POST"])
def delete_request(request: HttpRequest) -> HttpResponse:
    """Ask for the deletion e-mail: the same answer for every login or address (no oracle), limited as
    the other e-mails are; only an active account's address is mailed a link."""
    return _request_mail(
        request,
        TokenAction.DELETION,
        heading="Delete your account",
        intro="Enter your login or e-mail. If it names an active account, we e-mail it a link to confirm;"
        " nothing changes until that link is opened and its page confirmed.",
        done="If an active account has this login or e-mail, we sent it a link to confirm the deletion;"
        " it works for 15 minutes. Nothing changes until it is used.",
        code_page=None,
    )


@require_http_methods(["GET", "POST"])
def delete_link(request: HttpRequest, secret: str) -> HttpResponse:
    """The deletion e-mail's link: GET says what deleting does and when (it changes nothing: mail
    scanners fetch links); the button's POST consumes the token, which deprovisions the account as the
    person, and the restore e-mail follows."""
    token = token_by_secret(secret, action=TokenAction.DELETION)
    if token is None:
        return refusal_page(request, TokenNotFound("tokens: this link is not valid"))
    days = quantity(settings.ERASURE_DELAY_DAYS, "day")
    if request.method == "POST":
        try:
            with audit_context(request=request, reason=DELETION_REASON):
                token = token_consume(secret=secret, action=TokenAction.DELETION, actor=TOKEN_HOLDER)
        except Refused as error:
            return refusal_page(request, error, token)
        account = token.account
        account.refresh_from_db()
        erased_on = erasure_due(account)
        when = f"on {erased_on:%Y-%m-%d}" if erased_on else f"{days} from now"
        return outcome_page(
            request,
            "Your account is closed",
            f"It can no longer sign in. It is erased for good {when}; until then, the e-mail we are sending"
            " you has a link to restore it.",
        )
    context = {
        "heading": "Delete your account",
        "intro": f"Deleting closes the account {token.account.login} at once: it can no longer sign in, and the"
        f" links and codes it was sent stop working. {days.capitalize()} later it is erased for good: its"
        " address, login and password are gone, and the address is free for a new account. Until then, a"
        " link we e-mail you restores it.",
        "button": "Delete my account",
        "account": token.account,
    }
    return render(request, "pages/confirm.html", context)


@sensitive_post_parameters("password", "password_again")
@require_http_methods(["GET", "POST"])
def recover_link(request: HttpRequest, secret: str) -> HttpResponse:
    token = token_by_secret(secret, action=TokenAction.PASSWORD_RECOVERY)
    if token is None:
        return refusal_page(request, TokenNotFound("tokens: this link is not valid"))
    form = NewPasswordForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            with audit_context(request=request):
                token = token_consume(
                    secret=secret,
                    action=TokenAction.PASSWORD_RECOVERY,
                    actor=TOKEN_HOLDER,
                    new_password=NewPassword(form.cleaned_data["password"]),
                )
        except ValidationError as error:
            form.add_error("password", error)
        except Refused as error:
            return refusal_page(request, error, token)
        else:
            return _password_changed(request, token)
    return form_page(request, form, heading="Choose a new password", button="Change my password", account=token.account)


@sensitive_post_parameters("password", "password_again")
@require_http_methods(["GET", "POST"])
def recover_code(request: HttpRequest) -> HttpResponse:
    return _code_page(
        request,
        RecoveryCodeForm(_posted(request)),
        TokenAction.PASSWORD_RECOVERY,
        done=_password_changed,
        heading="Choose a new password",
        button="Change my password",
        intro="Enter your login or e-mail, the 5-digit code from the recovery e-mail and a new password.",
        links=[NextStep("No e-mail? Ask for one", reverse("recover"))],
    )


def _password_changed(request: HttpRequest, token: Token) -> HttpResponse:
    return outcome_page(
        request,
        "Your password is changed",
        f"Sign in with your login, {token.account.login}, and the new password.",
        account=token.account,
        next_steps=sign_in(),
    )


# Restoring a deprovisioned account


@require_http_methods(["GET", "POST"])
def restore_link(request: HttpRequest, secret: str) -> HttpResponse:
    """The restore e-mail's link: GET says what restoring does, the button's POST consumes the token,
    which reprovisions the account; the database then issues its activation e-mail."""
    token = token_by_secret(secret, action=TokenAction.RESTORE)
    if token is None:
        return refusal_page(request, TokenNotFound("tokens: this link is not valid"))
    if request.method == "POST":
        try:
            with audit_context(request=request):
                token = token_consume(secret=secret, action=TokenAction.RESTORE, actor=TOKEN_HOLDER)
        except Refused as error:
            return refusal_page(request, error, token)
        return outcome_page(
            request,
            "Your account is restored",
            "It is back as it was before it was activated: an e-mail with a link to activate it again is on its way.",
            account=token.account,
        )
    erased_on = erasure_due(token.account)
    context = {
        "heading": "Restore your account",
        "intro": "This account was closed"
        + (f" and is erased for good on {erased_on:%Y-%m-%d}" if erased_on else "")
        + ". Restoring it brings it back; you then activate it again from the e-mail that follows.",
        "button": "Restore my account",
        "account": token.account,
    }
    return render(request, "pages/confirm.html", context)


# Changing the address


@require_http_methods(["GET", "POST"])
def email_change_link(request: HttpRequest, secret: str) -> HttpResponse:
    """The link mailed to a new address: GET says which address becomes whose (it changes nothing:
    mail scanners fetch links); the button's POST consumes the token, which makes it the account's
    address, and the old address is told, with a link to undo it."""
    token = token_by_secret(secret, action=TokenAction.EMAIL_CHANGE)
    if token is None:
        return refusal_page(request, TokenNotFound("tokens: this link is not valid"))
    if request.method == "POST":
        try:
            with audit_context(request=request, reason=EMAIL_CHANGE_REASON):
                token = token_consume(secret=secret, action=TokenAction.EMAIL_CHANGE, actor=TOKEN_HOLDER)
        except Refused as error:
            return refusal_page(request, error, token)
        return outcome_page(
            request,
            "Your address is changed",
            f"{token.email} is now the address of your account: its e-mails come here. The old address is told,"
            " with a link that puts it back within 7 days.",
            next_steps=sign_in(),
        )
    context = {
        "heading": "Confirm your new address",
        "intro": f"Make {token.email} the address of the account {token.account.login}? Its e-mails come here"
        " from then on, and the old address is told.",
        "button": "Confirm my new address",
    }
    return render(request, "pages/confirm.html", context)


@require_http_methods(["GET", "POST"])
def email_undo_link(request: HttpRequest, secret: str) -> HttpResponse:
    """The link mailed to the old address after a change: GET says what undoing does; the button's
    POST puts the old address back, and the database signs out every browser of the account."""
    token = token_by_secret(secret, action=TokenAction.EMAIL_CHANGE_UNDO)
    if token is None:
        return refusal_page(request, TokenNotFound("tokens: this link is not valid"))
    if request.method == "POST":
        try:
            with audit_context(request=request, reason=EMAIL_UNDO_REASON):
                token = token_consume(secret=secret, action=TokenAction.EMAIL_CHANGE_UNDO, actor=TOKEN_HOLDER)
        except Refused as error:
            return refusal_page(request, error, token)
        return outcome_page(
            request,
            "Your address is back",
            f"{token.email} is the address of your account again, and every browser signed in to it is signed"
            " out. If you did not change it, someone knows your password: choose a new one now.",
            next_steps=[NextStep("Choose a new password", reverse("recover"))],
        )
    context = {
        "heading": "Put your address back",
        "intro": f"The address of the account {token.account.login} was changed from {token.email}. Put"
        f" {token.email} back? Every browser signed in to the account is signed out.",
        "button": "Put my address back",
    }
    return render(request, "pages/confirm.html", context)
