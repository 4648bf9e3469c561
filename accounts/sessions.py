"""End users' own sessions (the /account/ pages; accounts/sql/0025_account_sessions.sql).

A sign-in makes a new random secret, which only the browser keeps (in a cookie of its own); the row
keeps its SHA-256. A session is never picked by the browser (a secret it brings is looked up, never
adopted), so a secret planted before sign-in signs nobody in. The database ends the sessions of an
account that leaves the active state or gets a new password, whoever made the change.
"""

import hashlib
import ipaddress
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from ua_parser import parse

from accounts.models import Account, AccountPassword, AccountSession, AccountStatus, SessionEnd
from accounts.services import account_set_password
from platform_events.db.refusals import lifecycle_rules

# Browsers' User-Agent headers run to a few hundred characters; the list of sign-ins needs the start.
USER_AGENT_KEPT = 256


@dataclass(frozen=True)
class SignedIn:
    """A new session: ``secret`` goes to the browser and nowhere else."""

    session: AccountSession
    secret: str


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def account_session_start(
    *, account: Account, password_changed_at: datetime, client_address: str | None, user_agent: str
) -> SignedIn:
    """A new session of ``account`` for ACCOUNT_SESSION_HOURS, on the strength of a check of the
    password set at ``password_changed_at`` (``PasswordVerdict.password_changed_at``). The database
    refuses it (``NotSignedIn``) when the account is not active, or its password changed since the
    check: a sign-in under way when the owner sets a new password does not outlive it."""
    secret = secrets.token_urlsafe(32)
    with lifecycle_rules(), transaction.atomic():
        session = AccountSession.objects.create(
            account=account,
            secret_digest=_digest(secret),
            password_changed_at=password_changed_at,
            expires_at=timezone.now() + timedelta(hours=settings.ACCOUNT_SESSION_HOURS),
            client_address=_ip_address(client_address),
            user_agent=_printable(user_agent)[:USER_AGENT_KEPT],
        )
    return SignedIn(session=session, secret=secret)


def account_session_by_secret(secret: str) -> AccountSession | None:
    """The live session whose secret this is (not ended, not expired, its account active), with its
    account; None for anything else, a secret nobody was given included."""
    if not secret or len(secret) > 128:
        return None
    return (
        AccountSession.objects.select_related("account")
        .filter(
            secret_digest=_digest(secret),
            ended_at__isnull=True,
            expires_at__gt=timezone.now(),
            account__status=AccountStatus.ACTIVE,
        )
        .first()
    )


def account_session_end(*, session: AccountSession, why: str = SessionEnd.SIGN_OUT) -> None:
    """End a session; one ended meanwhile (another tab signed out, the password changed) stays as it ended."""
    AccountSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(ended_by=why)


@dataclass(frozen=True)
class SignIn:
    """One of an account's sign-ins as its owner reads it."""

    signed_in_at: datetime
    client_address: str | None
    browser: str
    now: str  # "this browser", "signed out", "password changed", ..., "expired", "signed in"


def account_sign_ins(account: Account, *, current: AccountSession | None = None, limit: int = 10) -> list[SignIn]:
    """The account's latest sign-ins, newest first; ``current`` is the reader's own."""
    now = timezone.now()
    sessions = AccountSession.objects.filter(account=account).order_by("-signed_in_at", "-id")[:limit]
    return [
        SignIn(
            signed_in_at=session.signed_in_at,
            client_address=session.client_address,
            browser=browser_name(session.user_agent),
            now="this browser"
            if current is not None and session.pk == current.pk
            else session.get_ended_by_display()
            if session.ended_by
            else "expired"
            if session.expires_at <= now
            else "signed in",
        )
        for session in sessions
    ]


def _ip_address(address: str | None) -> str | None:
    """The client's address when it is an IP address; None for what a server may put there instead
    (``unix:``, a socket path)."""
    try:
        return str(ipaddress.ip_address(address)) if address else None
    except ValueError:
        return None


def _printable(text: str) -> str:
    # A header is Latin-1 text; control characters (NUL among them) are nobody's browser name.
    return "".join(character for character in text if character.isprintable())


def browser_name(user_agent: str) -> str:
    """A User-Agent header as a person reads it: "Firefox 133 on Windows", "Mobile Safari 17 on iOS";
    "unknown browser" for a header no rule knows."""
    if not user_agent:
        return "unknown browser"
    parsed = parse(user_agent)
    agent, system = parsed.user_agent, parsed.os
    if agent is None or agent.family == "Other":
        return "unknown browser"
    name = f"{agent.family} {agent.major}" if agent.major else agent.family
    return f"{name} on {system.family}" if system is not None and system.family != "Other" else name


def account_password_change(
    *, account: Account, password_hash: str, client_address: str | None, user_agent: str
) -> SignedIn:
    """Give the account a new password (``password_hash``, from account_password_hash) and sign this
    browser in again, in one transaction. The database ends every session of the account and issues
    the notice the mailroom sends to its address; the new session is this browser's only one."""
    with transaction.atomic():
        account_set_password(account=account, password_hash=password_hash, actor=account)
        changed_at = AccountPassword.objects.values_list("changed_at", flat=True).get(account=account)
        return account_session_start(
            account=account, password_changed_at=changed_at, client_address=client_address, user_agent=user_agent
        )
