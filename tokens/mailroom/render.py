"""The e-mail of a token: templates/emails/<action>.subject.txt, .txt and .html."""

from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import get_template
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from accounts.erasure import erasure_due
from platform_events.quantities import quantity
from tokens.links import LANDING_PAGES, secret_to_text
from tokens.mailroom.prerender import Prerendered, Whole, active_locale, prerendered
from tokens.models import Token, TokenAction
from tokens.pages import brand

# Where a person whose link ran out asks for a new e-mail (tokens/urls.py).
# A restore e-mail is asked for by signing up again with the address.
ASK_AGAIN_PAGES = {
    TokenAction.ACTIVATION: "resend",
    TokenAction.PASSWORD_RECOVERY: "recover",
    TokenAction.RESTORE: "sign-up",
    TokenAction.DELETION: "delete-account",
    # A password notice's way on, when the change was not the person's: recovery.
    TokenAction.PASSWORD_CHANGED: "recover",
    # A new address is asked for again on the account page; an undo cannot be asked for again.
    TokenAction.EMAIL_CHANGE: "account-email",
}


# Most pages an e-mail links to are tokens/urls.py's, which the site serves at its root (a test checks that
# both give the same paths): reversed against it alone, a mail run imports the rest of the site's pages
# (about 40% of drain_mailroom's start-up) only for an e-mail linking to one of them.
TOKEN_URLS = "tokens.urls"


def page_path(name: str, *args: str) -> str:
    """reverse(name, args=args), from tokens/urls.py when it has the page."""
    try:
        return reverse(name, args=args, urlconf=TOKEN_URLS)
    except NoReverseMatch:
        return reverse(name, args=args)


def render_mail(token: Token, *, now: datetime | None = None) -> EmailMultiAlternatives:
    """The e-mail, rendered as it is sent (``now``, by default the moment of the call): it states the
    validity left then, not the configured lifetime (mailed 9 minutes late, it says about 6 minutes,
    not 15)."""
    return MailRenderer().render(token, now=now)


class MailRenderer:
    """Renders the e-mails of one batch: what every e-mail of an action shares (the brand, the pages'
    links, the templates' text and the variables that read only those) is rendered once, and each
    e-mail's own values are filled in (tokens/mailroom/prerender.py)."""

    def __init__(self):
        self._shared: dict | None = None
        self._host: str | None = None
        self._actions: dict[str, tuple[bool, list[Prerendered | Whole]]] = {}

    def _action(self, action: str, own: set[str]) -> tuple[bool, list[Prerendered | Whole]]:
        """Whether the action's templates format times, and its subject, text and HTML templates."""
        if action not in self._actions:
            shared = {
                **self._shared,
                "ask_again_link": (
                    f"{settings.PUBLIC_BASE_URL}{page_path(ASK_AGAIN_PAGES[action])}"
                    if action in ASK_AGAIN_PAGES
                    else None
                ),
            }
            templates = [
                prerendered(get_template(f"emails/{action}{suffix}"), shared=shared, own=set(own))
                for suffix in (".subject.txt", ".txt", ".html")
            ]
            self._actions[action] = (any(template.formats_time for template in templates), templates)
        return self._actions[action]

    def render(self, token: Token, *, now: datetime | None = None) -> EmailMultiAlternatives:
        now = now or timezone.now()
        account = token.account
        if self._shared is None:  # with the first e-mail: what fails here fails that e-mail, as any other
            self._shared = {
                **brand(absolute=True),
                "erasure_delay": quantity(settings.ERASURE_DELAY_DAYS, "day"),  # for a deletion e-mail
            }
            self._host = urlsplit(settings.PUBLIC_BASE_URL).hostname
        own = {
            "login": account.login,
            "deprovisioned_at": account.deprovisioned_at,  # for a restore e-mail
            "erased_on": erasure_due(account),
            # The person closed the account with a deletion link, rather than someone signing up again with
            # its address: a deletion token consumed since the deprovisioning began (its consumption is what
            # deprovisioned it; a deprovisioning after an earlier one's would be later than it).
            "closed_by_request": token.action == TokenAction.RESTORE
            and account.deprovisioned_at is not None
            and Token.objects.filter(
                account=account, action=TokenAction.DELETION, consumed_at__gte=account.deprovisioned_at
            ).exists(),
            # A notice has no page to land on: its secret opens nothing.
            "link": f"{settings.PUBLIC_BASE_URL}{page_path(LANDING_PAGES[token.action], secret_to_text(token.secret))}"
            if token.action in LANDING_PAGES
            else None,
            "code": token.code,
            "expires_at": token.expires_at,
            "issued_at": token.created_at,  # for a password notice: when the password changed
            "valid_for": validity_left(token.expires_at - now),
            # For an address change: the address the token is for (the new one, or the old one for an undo)
            # and the account's address when the e-mail is sent.
            "address": token.email,
            "account_address": account.email,
        }
        formats_time, (subject_template, text_template, html_template) = self._action(token.action, own.keys())
        locale = active_locale() if formats_time else None
        message = EmailMultiAlternatives(
            subject=" ".join(subject_template.render(own, locale=locale).split()),
            body=text_template.render(own, locale=locale),
            # An address change's e-mail goes to the address it is for; every other one to the account's.
            to=[token.email or account.email],
            headers={
                # The same Message-ID on a re-sent copy lets mail servers and clients fold duplicates.
                "Message-ID": f"<token-{token.pk}@{self._host}>",
                "X-Lifecycle-Token": str(token.pk),
            },
        )
        message.attach_alternative(html_template.render(own, locale=locale), "text/html")
        return message


def validity_left(left: timedelta) -> str:
    """How long a token stays valid, in words: "less than a minute", "about 6 minutes", "about 3 hours".

    Rounded to the nearest unit: the e-mail gives the exact time beside it. Never zero or negative: a
    token that has expired is not mailed (tokens/mailroom/send.py)."""
    minutes = round(left.total_seconds() / 60)
    if left < timedelta(minutes=1):
        return "less than a minute"
    if minutes < 120:
        return f"about {minutes} minute{'s' if minutes != 1 else ''}"
    return f"about {round(minutes / 60)} hours"
