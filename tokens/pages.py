"""How the public pages answer: an outcome with what happened and what to do next, a refusal, a form
again with its errors, the 429 of a limit; and what every page shows (where to sign in, whom to ask)."""

import math
from dataclasses import dataclass

from django.conf import settings
from django.core import checks
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse_lazy

from platform_events.limits.counters import LimitExceeded


@dataclass(frozen=True)
class NextStep:
    text: str
    url: str


def sign_in() -> list[NextStep]:
    """The way on once an account is active: the product's sign-in page when ``SIGN_IN_URL`` names one,
    else this site's own (the account page's, never the staff login at its root)."""
    return [NextStep("Sign in", settings.SIGN_IN_URL or reverse_lazy("account-sign-in"))]


def ask_again(action_page: str = "resend") -> NextStep:
    return NextStep("Ask for a new e-mail", reverse_lazy(action_page))


def public_context(request: HttpRequest | None = None) -> dict:
    """Context processor: the brand every public page and e-mail carries (its name, logo and accent
    colour), and the support contact every public page ends with."""
    contact = settings.SUPPORT_CONTACT
    href = contact if contact.startswith(("http://", "https://")) else f"mailto:{contact}"
    return {"support_contact": contact, "support_href": href, **brand()}


def brand(*, absolute: bool = False) -> dict:
    """The organisation's brand from settings: its name, its logo's URL (Lifecycle's own mark when
    SITE_LOGO_URL is unset; ``absolute`` for e-mails, which are read away from this site) and its
    accent colour."""
    own_logo = static("lifecycle/logo.svg")
    if absolute:
        own_logo = f"{settings.PUBLIC_BASE_URL}{own_logo}"
    return {
        "site_name": settings.SITE_NAME,
        "site_logo_url": settings.SITE_LOGO_URL or own_logo,
        "site_accent": settings.SITE_ACCENT_COLOUR,
    }


@checks.register(checks.Tags.security, deploy=True)
def check_public_contacts(app_configs, **kwargs):
    """In production the pages need a support contact people can reach."""
    if settings.DEBUG:
        return []
    warnings = []
    if settings.SUPPORT_CONTACT.rpartition("@")[2] in ("", "localhost"):
        warnings.append(
            checks.Warning(
                f"SUPPORT_CONTACT is {settings.SUPPORT_CONTACT!r}: every public page ends with it, and nobody"
                " outside this machine can write there.",
                hint="Set SUPPORT_CONTACT to your support team's address or page, e.g. support@example.com.",
                id="tokens.W002",
            )
        )
    return warnings


def outcome_page(
    request: HttpRequest,
    heading: str,
    text: str,
    *,
    status: int = 200,
    account=None,
    next_steps: list[NextStep] = (),
) -> HttpResponse:
    """``account`` only on pages reached with a link's secret or the right code: it shows whose account
    (login, masked address), which the holder of the e-mail knows already."""
    context = {"heading": heading, "text": text, "account": account, "next_steps": next_steps}
    return render(request, "pages/outcome.html", context, status=status)


def form_page(request: HttpRequest, form, *, heading: str, button: str, intro: str = "", account=None, links=()):
    """The form, again with its errors (400) after a bad POST."""
    context = {"heading": heading, "form": form, "button": button, "intro": intro, "account": account, "links": links}
    return render(request, "pages/form.html", context, status=400 if form.errors else 200)


def too_many_page(request: HttpRequest, exceeded: LimitExceeded) -> HttpResponse:
    minutes = math.ceil(exceeded.retry_after / 60)
    response = outcome_page(
        request,
        "Too many attempts",
        f"Please wait about {minutes} minute{'s' if minutes != 1 else ''} before you try again."
        " This limit keeps mailboxes and codes safe from people who are not their owners.",
        status=429,
    )
    response["Retry-After"] = str(exceeded.retry_after)
    return response
