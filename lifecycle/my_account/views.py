"""End users' own account pages (docs/public-pages.md, "Your account"): sign in with a login or
e-mail and the password, see the account and its latest sign-ins, sign out.

The session is the account pages' own (accounts/sessions.py): a cookie of its own name, sent only to
/account/, holding a secret minted at sign-in. The admin never reads it, and these pages never read
the admin's session: a staff login is nobody's account here. Signing in asks the same limits as the
client API's password check, on the same counters (lifecycle/api/session_limits.py), and gives one
answer, after the same work, for a name nobody has, a wrong password, and an account that may not
sign in (suspended, deprovisioned, never activated).
"""

from functools import wraps

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import rotate_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from accounts.errors import NotSignedIn
from accounts.models import AccountStatus, SessionEnd
from accounts.sessions import (
    account_session_by_secret,
    account_session_end,
    account_session_start,
    account_sign_ins,
)
from lifecycle.api.session_limits import SIGN_IN_PAGE, SessionCheck, password_checked
from lifecycle.my_account.forms import SignInForm
from platform_events.client_ip import client_ip, client_key
from platform_events.limits.counters import LimitExceeded
from tokens.pages import NextStep, form_page, outcome_page, too_many_page

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
def sign_in(request: HttpRequest) -> HttpResponse:
    if request.method == "GET" and _session(request) is not None:
        return redirect("account")
    form = SignInForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        check = SessionCheck(
            client=SIGN_IN_PAGE,
            identifier=form.cleaned_data["identifier"],
            # No address (gunicorn on a unix socket leaves REMOTE_ADDR empty): one shared count, never a 500.
            address=client_key(request) or "unknown",
        )
        try:
            account, right = password_checked(
                check, form.cleaned_data["password"], accepted=lambda account: account.status == AccountStatus.ACTIVE
            )
        except LimitExceeded as exceeded:
            return too_many_page(request, exceeded)
        if right:
            try:
                started = account_session_start(
                    account=account,
                    client_address=client_ip(request),
                    user_agent=request.headers.get("User-Agent", ""),
                )
            except NotSignedIn:
                pass  # suspended since its password was checked: answered as any refusal
            else:
                return _signed_in(request, started.secret)
        form.add_error(None, WRONG)
    return form_page(
        request,
        form,
        heading="Sign in",
        button="Sign in",
        intro="Sign in to see your account and change your password.",
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
    response = redirect("account")
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
