"""End users' own account pages (docs/public-pages.md, "Your account"): sign in with a login or
e-mail and the password, see the account and its latest sign-ins, change its password or address,
delete it, sign out. Each change asks for the password again, on the sign-in's limits.

The session is the account pages' own (accounts/sessions.py): a cookie of its own name, sent only to
/account/, holding a secret minted at sign-in. The admin never reads it, and these pages never read
the admin's session: a staff login is nobody's account here. Signing in asks the same limits as the
client API's password check, on the same counters (lifecycle/api/session_limits.py), and gives one
answer, after the same work, for a name nobody has, a wrong password, and an account that may not
sign in (suspended, deprovisioned, never activated).
"""

from functools import wraps

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import rotate_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from accounts.erasure import erasure_due
from accounts.errors import NotSignedIn
from accounts.models import AccountStatus, SessionEnd
from accounts.selectors import email_problem, problem_sentence
from accounts.services import account_password_check, account_password_hash
from accounts.sessions import (
    account_password_change,
    account_session_by_secret,
    account_session_end,
    account_session_start,
    account_sign_ins,
)
from lifecycle.api.session_limits import SessionCheck, password_checked
from lifecycle.my_account.forms import ChangeEmailForm, ChangePasswordForm, DeleteAccountForm, SignInForm
from platform_events.audit.context import audit_context
from platform_events.client_ip import client_ip, client_key
from platform_events.limits.counters import LimitExceeded, limits_hit
from platform_events.quantities import quantity
from platform_events.refusals import Refused
from tokens.errors import AddressChangedLately
from tokens.models import TokenAction
from tokens.pages import NextStep, form_page, outcome_page, too_many_page
from tokens.selectors import live_token
from tokens.services import (
    email_change_limit,
    public_limit,
    token_delete_by_password,
    token_request_email_change,
)
from tokens.views import DELETION_REASON

COOKIE = "lifecycle_account"
# Sent to the account pages only: not to the admin, the API or the other public pages.
COOKIE_PATH = "/account/"
# The one answer for every refusal: which of the name or the password was wrong is not said.
WRONG = "Wrong login, e-mail or password."


def _posted(request: HttpRequest):
    return request.POST if request.method == "POST" else None


def _session(request: HttpRequest):
    return account_session_by_secret(request.COOKIES.get(COOKIE, ""))


def _forget_cookie(response: HttpResponse) -> HttpResponse:
    response.delete_cookie(COOKIE, path=COOKIE_PATH, samesite="Lax")
    return response


def limited(view):
    """The view, with a limit it meets (``LimitExceeded``, from a password check or an e-mail's count)
    answered as the 429 page."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except LimitExceeded as exceeded:
            return too_many_page(request, exceeded)

    return wrapper


def signed_in(view):
    """The view for a signed-in browser (``request.account_session``, its account at
    ``.account``); anyone else goes to the sign-in page, a dead cookie forgotten on the way."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        session = _session(request)
        if session is None:
            response = redirect("account-sign-in")
            return _forget_cookie(response) if COOKIE in request.COOKIES else response
        request.account_session = session
        return view(request, *args, **kwargs)

    return wrapper


@never_cache
@sensitive_post_parameters("password")
@require_http_methods(["GET", "POST"])
@limited
def sign_in(request: HttpRequest) -> HttpResponse:
    if request.method == "GET" and _session(request) is not None:
        return redirect("account")
    form = SignInForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        check = _check(request, form.cleaned_data["identifier"])
        verdict = password_checked(
            check, form.cleaned_data["password"], accepted=lambda account: account.status == AccountStatus.ACTIVE
        )
        if verdict.right:
            try:
                started = account_session_start(
                    account=verdict.account,
                    password_changed_at=verdict.password_changed_at,
                    client_address=client_ip(request),
                    user_agent=request.headers.get("User-Agent", ""),
                )
            except NotSignedIn:
                pass  # suspended, or its password changed, since it was checked: answered as any refusal
            else:
                return _signed_in(request, started.secret)
        form.add_error(None, WRONG)
    return form_page(
        request,
        form,
        heading="Sign in",
        button="Sign in",
        intro="Sign in to see your account, change its password or address, or delete it.",
        links=[
            NextStep("Forgot your password?", reverse("recover")),
            *([NextStep("Create an account", reverse("sign-up"))] if settings.PUBLIC_SIGN_UP else []),
        ],
    )


def _signed_in(request: HttpRequest, secret: str) -> HttpResponse:
    """To the account page with the new session's cookie. The browser's earlier session, if it had
    one, ends; its CSRF token changes too (what a page read before sign-in cannot post after)."""
    earlier = _session(request)
    if earlier is not None:
        account_session_end(session=earlier)
    rotate_token(request)
    return _with_cookie(redirect("account"), secret)


def _with_cookie(response: HttpResponse, secret: str) -> HttpResponse:
    response.set_cookie(
        COOKIE,
        secret,
        max_age=settings.ACCOUNT_SESSION_HOURS * 3600,
        path=COOKIE_PATH,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return response


@never_cache
@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    """Ends this browser's session, if it has one; the same page either way."""
    session = _session(request)
    if session is not None:
        account_session_end(session=session, why=SessionEnd.SIGN_OUT)
    response = outcome_page(
        request,
        "You are signed out",
        "Your session has ended on this browser.",
        next_steps=[NextStep("Sign in again", reverse("account-sign-in"))],
    )
    return _forget_cookie(response)


@never_cache
@sensitive_post_parameters("current_password", "password", "password_again")
@require_http_methods(["GET", "POST"])
@signed_in
@limited
def change_password(request: HttpRequest) -> HttpResponse:
    """The current password, asked on the sign-in's limits and counters (a stolen session may not guess
    it faster than a stranger at the sign-in), then the new one through the sign-up's validators. The
    database ends every session of the account and mails the notice; this browser is signed in again."""
    account = request.account_session.account
    form = ChangePasswordForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        new = form.cleaned_data["password"]
        try:
            # Before the current password is checked: a refused new one costs no try.
            account_password_check(new, login=account.login, email=account.email)
        except ValidationError as error:
            form.add_error("password", error)
        else:
            if not _current_password_right(request, account, form.cleaned_data["current_password"]):
                form.add_error("current_password", "This is not your current password.")
            else:
                return _password_changed(request, account, account_password_hash(new))
    return form_page(
        request,
        form,
        heading="Change your password",
        button="Change my password",
        intro="Every other browser signed in to your account is signed out, and your address is told.",
        links=[NextStep("Back to your account", reverse("account"))],
    )


def _password_changed(request: HttpRequest, account, password_hash: str) -> HttpResponse:
    try:
        with audit_context(request=request):
            started = account_password_change(
                account=account,
                password_hash=password_hash,
                client_address=client_ip(request),
                user_agent=request.headers.get("User-Agent", ""),
            )
    except NotSignedIn:
        # Suspended meanwhile: the password stands, and this browser is signed out with the rest.
        return _forget_cookie(
            outcome_page(
                request,
                "Your password is changed",
                "Your account can no longer be signed in to. Please contact support.",
            )
        )
    response = outcome_page(
        request,
        "Your password is changed",
        "Every other browser signed in to your account is signed out, and an e-mail tells your address.",
        next_steps=[NextStep("Back to your account", reverse("account"))],
    )
    return _with_cookie(response, started.secret)


@never_cache
@sensitive_post_parameters("password")
@require_http_methods(["GET", "POST"])
@signed_in
@limited
def change_email(request: HttpRequest) -> HttpResponse:
    """A new address, with the password: a link goes to the new address, which becomes the account's
    once it is used (tokens/sql/0026_email_change.sql). The answer is the same whether or not another
    account holds the address: only its mailbox learns that, when the link is used. E-mails asked for
    count on the public pages' limits (per address typed, per visitor)."""
    account = request.account_session.account
    form = ChangeEmailForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        new = form.cleaned_data["email"]
        # The address first: a refused one costs no try of the password.
        if problem := email_problem(new):
            form.add_error("email", problem_sentence(problem))
        elif new == account.email:
            form.add_error("email", "This is your address already.")
        else:
            right = _current_password_right(request, account, form.cleaned_data["password"])
            if right:
                # Per account and per visitor, never per address typed: a count keyed on the address
                # would let a stranger spend its owner's recovery allowance, and would outlive an erasure.
                limits_hit(
                    [
                        (email_change_limit(), f"account:{account.pk}"),
                        (public_limit("mail-per-client"), client_key(request) or "unknown"),
                    ]
                )
            if not right:
                form.add_error("password", "This is not your password.")
            else:
                try:
                    with audit_context(request=request):
                        token_request_email_change(account=account, email=new, actor=account)
                except AddressChangedLately:
                    return _changed_lately(request, account)
                except Refused:
                    # Suspended or closed since the page was shown: nothing was sent.
                    return outcome_page(
                        request, "Not possible", "This account's address cannot be changed now.", status=409
                    )
                return outcome_page(
                    request,
                    "Check your new address",
                    f"A link to confirm {new} is on its way to it; it works for 15 minutes. Until it is used,"
                    f" {account.email} stays your address.",
                    next_steps=[NextStep("Back to your account", reverse("account"))],
                )
    return form_page(
        request,
        form,
        heading="Change your e-mail address",
        button="Send the link",
        intro=f"Your address is {account.email}. We e-mail a link to the new one; it becomes your address once"
        " the link is used, and the old one is told, with a link to undo the change within 7 days.",
        links=[NextStep("Back to your account", reverse("account"))],
    )


@never_cache
@sensitive_post_parameters("password")
@require_http_methods(["GET", "POST"])
@signed_in
@limited
def delete_account(request: HttpRequest) -> HttpResponse:
    """Delete my account, confirmed by the password rather than a mailed link: the same deletion as the
    link's (tokens.services.token_delete_by_password), the restore e-mail following at once."""
    account = request.account_session.account
    form = DeleteAccountForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        if not _current_password_right(request, account, form.cleaned_data["password"]):
            form.add_error("password", "This is not your password.")
        else:
            try:
                with audit_context(request=request, reason=DELETION_REASON):
                    token_delete_by_password(account=account)
            except AddressChangedLately:
                return _changed_lately(request, account)
            except Refused:
                # Suspended or closed meanwhile: nothing was deleted, and this browser is signed out.
                return _forget_cookie(
                    outcome_page(
                        request,
                        "Not possible",
                        "This account can no longer be deleted here. Please contact support.",
                        status=409,
                    )
                )
            account.refresh_from_db()
            erased_on = erasure_due(account)
            return _forget_cookie(
                outcome_page(
                    request,
                    "Your account is closed",
                    f"It can no longer sign in. It is erased for good on {erased_on:%Y-%m-%d}; until then, the"
                    " e-mail we are sending you has a link to restore it.",
                )
            )
    days = quantity(settings.ERASURE_DELAY_DAYS, "day")
    return form_page(
        request,
        form,
        heading="Delete your account",
        button="Delete my account",
        intro=f"Deleting closes the account {account.login} at once: it can no longer sign in, and the links and"
        f" codes it was sent stop working. {days.capitalize()} later it is erased for good: its address, login"
        " and password are gone, and the address is free for a new account. Until then, a link we e-mail you"
        " restores it. Your password confirms it is you.",
        links=[NextStep("Keep my account", reverse("account"))],
    )


def _changed_lately(request: HttpRequest, account) -> HttpResponse:
    """The page for a change of address too recent (``AddressChangedLately``): until when, and why."""
    undo = live_token(account=account, action=TokenAction.EMAIL_CHANGE_UNDO)
    until = f" ({undo.expires_at:%Y-%m-%d %H:%M %Z})" if undo is not None else ""
    return outcome_page(
        request,
        "Not now",
        "Your address changed lately. Until the link we mailed to your old address is used or expires"
        f"{until}, the address does not change again and the account is not deleted here: whoever changed"
        " it cannot take that way back from the old address.",
        status=409,
        next_steps=[NextStep("Back to your account", reverse("account"))],
    )


def _current_password_right(request: HttpRequest, account, password: str) -> bool:
    """Whether ``password`` is the signed-in account's, asked on the sign-in's limits and counters: a
    stolen session may not guess it faster than a stranger at the sign-in (``LimitExceeded``, which
    ``limited`` answers)."""
    return password_checked(
        _check(request, account.login), password, accepted=lambda named: named.pk == account.pk
    ).right


def _check(request: HttpRequest, identifier: str) -> SessionCheck:
    """A password check on these pages: counted per name and per visitor's address, with no count of
    the pages' own (lifecycle/api/session_limits.py)."""
    # No address (gunicorn on a unix socket leaves REMOTE_ADDR empty): one shared count, never a 500.
    return SessionCheck(client=None, identifier=identifier, address=client_key(request) or "unknown")


@never_cache
@require_http_methods(["GET"])
@signed_in
def home(request: HttpRequest) -> HttpResponse:
    session = request.account_session
    account = session.account
    context = {
        "heading": "Your account",
        "account_shown": account,
        "sign_ins": account_sign_ins(account, current=session),
    }
    return render(request, "pages/account.html", context)
