"""The only way Python code changes an account's lifecycle state.

Each service is atomic and returns the account as the triggers left it. The rules themselves live
in the database (accounts/sql/); a refusal arrives as a Refused (accounts/errors.py). Every
service that changes state takes the acting party, ``actor`` (a staff user, an account acting for
itself, or None: the system, audited as the database role), and opens the audit context with it
(platform_events/audit/context.py).
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password, make_password
from django.contrib.auth.password_validation import validate_password
from django.db import connection, transaction
from django.db.models import F

from accounts.errors import (
    AccountGone,
    AlreadyDeprovisioned,
    AlreadySuspended,
    EmailAlreadyClaimed,
    InvalidEmail,
    InvalidLogin,
    NotDeprovisioned,
    NotSuspended,
)
from accounts.models import Account, AccountPassword, AccountStatus
from accounts.nodes.models import MAX_GENERATION, NodeAssignment
from accounts.nodes.services import assignment_reset
from accounts.selectors import ABANDONED, ABANDONED_SIGN_UPS, accounts_by_identifier, email_is_claimed
from platform_events.audit.context import audit_context
from platform_events.db.refusals import lifecycle_rules


def account_provision(*, email: str, login: str, actor, password_hash: str | None = None) -> Account:
    """Create a provisioned account, with the password ``password_hash`` (from account_password_hash)
    when given; the database issues its activation token.

    Leading and trailing whitespace is stripped from both (the one normalisation we make); the
    database refuses anything else that is not a plain ASCII address or login. An address that an
    activated account has claimed is refused here: such a sign-up could never activate.
    """
    email, login = email.strip(), login.strip()
    # PostgreSQL text cannot hold NUL: refused here with the rule's own words, not as a DataError.
    if "\x00" in email:
        raise InvalidEmail("accounts: e-mail must be plain ASCII without control characters")
    if "\x00" in login:
        raise InvalidLogin("accounts: login may only hold ASCII letters, digits and . _ + -")
    if email_is_claimed(email):
        raise EmailAlreadyClaimed(f"accounts: e-mail {email} is already claimed by an activated account")
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor):
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO accounts (email, login) VALUES (%s, %s) RETURNING id", [email, login])
            (account_id,) = cursor.fetchone()
            if password_hash:
                cursor.execute(
                    "INSERT INTO account_passwords (account, password) VALUES (%s, %s)", [account_id, password_hash]
                )
    return Account.objects.get(pk=account_id)


def account_sign_up(*, email: str, login: str, password_hash: str) -> Account | None:
    """A public sign-up (the person who typed it is the actor): a provisioned account with its password,
    whose activation token the database issues. None when an activated account holds the address:
    nothing is made, and the page says the same either way (docs/public-pages.md, "No oracle").

    ``password_hash`` is made by the caller (account_password_hash) while the request is answered,
    the same work for every sign-up.
    """
    email, login = email.strip(), login.strip()
    if "\x00" in email or "\x00" in login:  # PostgreSQL text cannot hold NUL; the form refuses it first
        raise InvalidEmail("accounts: e-mail must be plain ASCII without control characters")
    if email_is_claimed(email):
        return None
    with lifecycle_rules(), transaction.atomic(), connection.cursor() as cursor:
        # The id first, so that the account's own audit rows name it as their actor (account:N).
        cursor.execute("SELECT nextval(pg_get_serial_sequence('accounts', 'id'))")
        (account_id,) = cursor.fetchone()
        with audit_context(actor=Account(pk=account_id, email=email, login=login)):
            cursor.execute("INSERT INTO accounts (id, email, login) VALUES (%s, %s, %s)", [account_id, email, login])
            cursor.execute(
                "INSERT INTO account_passwords (account, password) VALUES (%s, %s)", [account_id, password_hash]
            )
    return Account.objects.get(pk=account_id)


def account_password_check(password: str, *, login: str, email: str) -> None:
    """Django's password validators (AUTH_PASSWORD_VALIDATORS) on a password chosen for this login
    and address: their ValidationError when they refuse it."""
    # An unsaved staff-user object only to carry the names: the validators read fields of a user model.
    validate_password(password, user=get_user_model()(username=login, email=email))


def account_password_hash(password: str) -> str:
    """The Django hash (Argon2id) of a password account_password_check accepted."""
    return make_password(password)


@dataclass(frozen=True)
class PasswordVerdict:
    """What a password check found: the account named (or None), whether the password is its password,
    and when the password it was checked against was set (None without one): a session started on
    the strength of this check holds that time, and the database refuses it once the password has
    changed since (accounts/sql/0025_account_sessions.sql)."""

    account: Account | None
    right: bool
    password_changed_at: datetime | None = None


def account_password_verdict(*, identifier: str, password: str) -> PasswordVerdict:
    """The account a login or e-mail names (for an address several sign-ups share, the activated one,
    else the newest), and whether ``password`` is its password. For a name nobody has, or an account
    without a password, a wrong verdict after the same work: a password is hashed either way, so the
    time taken does not say whether the account exists. A deprovisioned account is nobody's: its
    password is not checked (docs/rules.md, "Deprovisioning")."""
    named = accounts_by_identifier(identifier).exclude(status=AccountStatus.DEPROVISIONED)
    account = named.order_by(F("activated_at").asc(nulls_last=True), "-id").first()
    # Account 0 is nobody's: the same statement whether or not the name was found.
    stored = (
        AccountPassword.objects.filter(account_id=account.pk if account else 0)
        .values_list("password", "changed_at")
        .first()
    )
    if stored is None:
        make_password(password)  # the work check_password would have done
        return PasswordVerdict(account, False)
    return PasswordVerdict(account, check_password(password, stored[0]), stored[1])


def account_password_verify(*, identifier: str, password: str) -> tuple[Account | None, bool]:
    """``account_password_verdict`` as (account, right)."""
    verdict = account_password_verdict(identifier=identifier, password=password)
    return verdict.account, verdict.right


def account_set_password(*, account: Account, password_hash: str, actor) -> None:
    """Make ``password_hash`` (from account_password_hash) the account's password, audited as
    account.password_set without it. Call it inside the transaction of what allowed the change
    (a consumed token), so that the two stand or fall together."""
    with transaction.atomic(), audit_context(actor=actor), connection.cursor() as cursor:
        # One statement: two changes at once leave the later one, never a duplicate-key error.
        cursor.execute(
            "INSERT INTO account_passwords (account, password) VALUES (%s, %s)"
            " ON CONFLICT (account) DO UPDATE SET password = EXCLUDED.password",
            [account.pk, password_hash],
        )


def account_suspend(*, account: Account, actor) -> Account:
    """Suspend a provisioned or active account; the triggers keep the timestamps."""
    changed = _set_status(account, actor=actor, status=AccountStatus.SUSPENDED, only_from=None)
    if not changed:
        raise AlreadySuspended(
            f"accounts: account {account.pk} is already suspended",
            account_id=account.pk,
            state=AccountStatus.SUSPENDED,
        )
    return account


def account_unsuspend(*, account: Account, actor) -> Account:
    """Lift a suspension: back to active, or to provisioned if it never activated."""
    changed = _set_status(account, actor=actor, status=AccountStatus.ACTIVE, only_from=AccountStatus.SUSPENDED)
    if not changed:
        raise NotSuspended(
            f"accounts: account {account.pk} is not suspended", account_id=account.pk, state=account.status
        )
    return account


# The reason the node rows of a reprovisioning's resets give (beside the request's own id).
REPROVISIONED = "the account was reprovisioned"


def account_deprovision(*, account: Account, actor) -> Account:
    """Deprovision an account from any state: the database replaces its live tokens, retires its node
    assignments and keeps its address for it until it is reprovisioned or erased (docs/rules.md,
    "Deprovisioning")."""
    changed = _set_status(account, actor=actor, status=AccountStatus.DEPROVISIONED, only_from=None)
    if not changed:
        raise AlreadyDeprovisioned(
            f"accounts: account {account.pk} is already deprovisioned",
            account_id=account.pk,
            state=AccountStatus.DEPROVISIONED,
        )
    return account


def account_reprovision(*, account: Account, actor) -> Account:
    """Bring a deprovisioned account back to provisioned; the database issues a fresh activation token,
    which the mailroom sends. In the same transaction, each storage service whose assignments the
    deprovisioning retired is reset (accounts/nodes/services.py, assignment_reset), audited: the
    account's next sync gets a fresh node with the generation it had."""
    with transaction.atomic():
        changed = _set_status(
            account, actor=actor, status=AccountStatus.PROVISIONED, only_from=AccountStatus.DEPROVISIONED
        )
        if not changed:
            raise NotDeprovisioned(
                f"accounts: account {account.pk} is not deprovisioned", account_id=account.pk, state=account.status
            )
        account_storage_back(account_id=account.pk, actor=actor)
    return account


def account_storage_back(*, account_id: int, actor) -> int:
    """Reset each storage service whose assignments deprovisioning retired, now that the account is
    reprovisioned (assignment_reset, audited with the reason REPROVISIONED); how many services. Call it
    in the reprovisioning's transaction: the services above and the restore link (tokens/services.py) do."""
    services = services_retired_by_deprovisioning(account_id)
    for service in services:
        assignment_reset(service=service, account_id=account_id, actor=actor, reason=REPROVISIONED)
    return len(services)


def services_retired_by_deprovisioning(account_id: int) -> list[str]:
    """The services in which deprovisioning retired the account's assignments and a reset has not
    given them back yet (their rows with a retired_generation still carry the tombstone)."""
    return list(
        NodeAssignment.objects.filter(
            account_id=account_id, generation=MAX_GENERATION, retired_generation__isnull=False
        )
        .values_list("service__service", flat=True)
        .distinct()
    )


def _set_status(account: Account, *, actor, status: AccountStatus, only_from: AccountStatus | None) -> bool:
    """One UPDATE decides, under the row's lock: it changes the status unless the account is already
    there (or, with ``only_from``, not in that state). Returns whether it did; ``account`` is
    refreshed either way."""
    rows = Account.objects.filter(pk=account.pk).exclude(status=status)
    if only_from:
        rows = rows.filter(status=only_from)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor):
        changed = rows.update(status=status)
    try:
        account.refresh_from_db()
    except Account.DoesNotExist:
        raise AccountGone(f"accounts: account {account.pk} no longer exists", account_id=account.pk) from None
    return bool(changed)


def accounts_delete_abandoned(*, created_before: datetime, batch_size: int) -> int:
    """Delete up to ``batch_size`` abandoned sign-ups (ABANDONED_SIGN_UPS) in one transaction; their
    tokens go with them, each deletion audited with the reason. Returns how many were deleted."""
    reason = f"abandoned sign-up: never activated, no token since {created_before:%Y-%m-%d %H:%M %Z}"
    params = {"before": created_before, "batch": batch_size}
    with transaction.atomic(), audit_context(reason=reason), connection.cursor() as cursor:
        # Lock the batch first, then delete in a second statement that checks the rule again. A single
        # statement would read the tokens as of its start: a new code asked for (token_resend_activation,
        # which holds the account's row lock until it commits) that commits while that statement scans
        # would not be seen, and the sign-up would go with the token it had just been sent. The second
        # statement's snapshot is taken under our locks: such a token is seen, and one asked for later
        # waits for this batch and then finds the account gone (AccountGone).
        while True:
            cursor.execute(f"{ABANDONED_SIGN_UPS} ORDER BY id LIMIT %(batch)s FOR UPDATE SKIP LOCKED", params)
            locked = [row[0] for row in cursor.fetchall()]
            if not locked:
                return 0
            cursor.execute(
                f"DELETE FROM accounts a WHERE a.id = ANY(%(locked)s) AND {ABANDONED}",
                {**params, "locked": locked},
            )
            # None deleted: every sign-up locked asked for a new code meanwhile. Those no longer match
            # the rule, so the next look skips them; 0 would end the cleanup with more to delete.
            if cursor.rowcount:
                return cursor.rowcount
