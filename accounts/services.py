"""The only way Python code changes an account's lifecycle state.

Each service is atomic and returns the account as the triggers left it. The rules themselves
live in the database (accounts/sql/); a refusal arrives as a LifecycleError (accounts/errors.py).
"""

from collections.abc import Callable
from datetime import datetime

from django.db import connection, transaction

from accounts.errors import EmailAlreadyClaimed, IllegalTransition
from accounts.models import Account, AccountStatus
from accounts.selectors import email_is_claimed
from platform_events.audit import set_audit_context
from platform_events.db.refusals import lifecycle_rules
from tokens.models import Token, TokenAction
from tokens.services import token_issue


def account_provision(*, email: str, login: str) -> Account:
    """Create a provisioned account; the database issues its activation token.

    Leading and trailing whitespace is stripped from both (the one normalisation we make); the
    database refuses anything else that is not a plain ASCII address or login. An address that an
    activated account has claimed is refused here: such a sign-up could never activate.
    """
    email, login = email.strip(), login.strip()
    if email_is_claimed(email):
        raise EmailAlreadyClaimed(f"accounts: e-mail {email} is already claimed by an activated account")
    with lifecycle_rules(), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO accounts (email, login) VALUES (%s, %s) RETURNING id", [email, login])
            (account_id,) = cursor.fetchone()
    return Account.objects.get(pk=account_id)


def account_suspend(*, account: Account, actor=None, reason: str | None = None) -> Account:
    """Suspend; ``actor`` (a staff user) and ``reason`` go into the audit row the database writes."""
    return _move(
        account,
        to=AccountStatus.SUSPENDED,
        allowed_from={AccountStatus.PROVISIONED, AccountStatus.ACTIVE},
        refusal="is already suspended",
        actor=actor,
        reason=reason,
    )


def account_unsuspend(*, account: Account, actor=None, reason: str | None = None) -> Account:
    """Lift a suspension: back to active, or to provisioned if it never activated (seed rule)."""
    return _move(
        account,
        to=AccountStatus.ACTIVE,
        allowed_from={AccountStatus.SUSPENDED},
        refusal="is not suspended",
        actor=actor,
        reason=reason,
    )


def _move(
    account: Account, *, to: AccountStatus, allowed_from: set[AccountStatus], refusal: str, actor, reason
) -> Account:
    """Set the status (the triggers keep the timestamps), under a row lock so two moves cannot cross."""
    with lifecycle_rules(), transaction.atomic():
        set_audit_context(actor=actor, reason=reason)
        locked = Account.objects.select_for_update().get(pk=account.pk)
        if locked.status not in allowed_from:
            raise IllegalTransition(f"accounts: account {account.pk} {refusal}")
        Account.objects.filter(pk=account.pk).update(status=to)
    account.refresh_from_db()
    return account


def account_resend_activation(*, account: Account, actor=None, reason: str | None = None) -> Token:
    """Issue a fresh activation token; the older one stops working."""
    return _issue(account, TokenAction.ACTIVATION, AccountStatus.PROVISIONED, "get activation e-mails", actor, reason)


def account_send_password_recovery(*, account: Account, actor=None, reason: str | None = None) -> Token:
    """Issue a password-recovery token for an active account (staff's action; the mailroom sends it)."""
    return _issue(account, TokenAction.PASSWORD_RECOVERY, AccountStatus.ACTIVE, "can recover a password", actor, reason)


def _issue(account: Account, action: TokenAction, needs: AccountStatus, what: str, actor, reason) -> Token:
    with lifecycle_rules(), transaction.atomic():
        set_audit_context(actor=actor, reason=reason)
        locked = Account.objects.select_for_update().get(pk=account.pk)
        if locked.status != needs:
            raise IllegalTransition(f"accounts: account {account.pk} is {locked.status}; only {needs} accounts {what}")
        return token_issue(account=locked, action=action)


# Seed 003's periodic cleanup: sign-ups never activated, with no token issued since the cut-off.
ABANDONED_SIGN_UPS = """
    SELECT id FROM accounts a
    WHERE a.status = 'provisioned' AND a.activated_at IS NULL AND a.created_at < %(before)s
      AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.account = a.id AND t.created_at >= %(before)s)
"""


def abandoned_sign_ups_count(*, created_before: datetime) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({ABANDONED_SIGN_UPS}) abandoned", {"before": created_before})
        return cursor.fetchone()[0]


def accounts_sweep_abandoned(
    *, created_before: datetime, batch_size: int = 1000, on_progress: Callable[[int], None] = lambda deleted: None
) -> int:
    """Delete abandoned sign-ups (ABANDONED_SIGN_UPS) in batches, one transaction each; their tokens
    go with them. Returns how many were deleted."""
    deleted = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM accounts WHERE id IN ({ABANDONED_SIGN_UPS} ORDER BY id LIMIT %(batch)s FOR UPDATE SKIP LOCKED)",
                {"before": created_before, "batch": batch_size},
            )
            batch = cursor.rowcount
        if not batch:
            return deleted
        deleted += batch
        on_progress(deleted)
