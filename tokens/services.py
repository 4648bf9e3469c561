"""Issuing and consuming tokens.

Whether a token may be consumed (unused, not replaced, unexpired, account in the right state,
and by code only while its code is not blocked by wrong codes) is decided by the trigger on tokens.consumed_at, for every client; these services
find the token, let the database decide, and turn its refusal into a LifecycleError. Like the
account services, each takes the acting party, ``actor`` (a staff user, an account acting for
itself, or None: the system or an end user not yet known, audited as the database role).
"""

import hmac

from django.db import connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, F, Q
from django.db.models.functions import Now

from accounts.errors import AccountGone
from accounts.models import Account, AccountStatus
from accounts.selectors import accounts_by_identifier
from platform_events.audit import audit_context
from platform_events.db.refusals import lifecycle_rules
from tokens.errors import TokenNotFound, WrongAccountState, WrongCode
from tokens.links import secret_from_text
from tokens.models import MaxCodeAttempts, Token, TokenAction


def token_resend_activation(*, account: Account, actor) -> Token:
    """Issue a fresh activation token for a provisioned account; the older one stops working."""
    return _issue_or_refuse(account, TokenAction.ACTIVATION, needs=AccountStatus.PROVISIONED, actor=actor)


def token_send_password_recovery(*, account: Account, actor) -> Token:
    """Issue a password-recovery token for an active account (staff's action; the mailroom sends it)."""
    return _issue_or_refuse(account, TokenAction.PASSWORD_RECOVERY, needs=AccountStatus.ACTIVE, actor=actor)


def _issue_or_refuse(account: Account, action: TokenAction, *, needs: AccountStatus, actor) -> Token:
    token = _issue(account.pk, action, needs=needs, actor=actor)
    if token is not None:
        return token
    state = Account.objects.filter(pk=account.pk).values_list("status", flat=True).first()
    if state is None:
        raise AccountGone(f"accounts: account {account.pk} no longer exists", account_id=account.pk)
    raise WrongAccountState(
        f"tokens: account {account.pk} is {state}; {action.label.lower()} e-mails go to {needs} accounts only",
        account_id=account.pk,
        state=state,
        needed=needs,
    )


def _issue(account_id: int, action: TokenAction, *, needs: AccountStatus, actor) -> Token | None:
    """Insert a token if the account is in the state ``needs``: one statement, which holds the account's
    row lock from the check to the insert (a concurrent activation or suspension waits, or wins
    first). The database supersedes the older tokens of that action and NOTIFYs. None when the
    account is not in that state."""
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor), connection.cursor() as cursor:
        cursor.execute(
            "WITH owner AS (SELECT id FROM accounts WHERE id = %s AND status = %s FOR NO KEY UPDATE)"
            " INSERT INTO tokens (account, action) SELECT id, %s FROM owner RETURNING id",
            [account_id, needs, action],
        )
        row = cursor.fetchone()
    return Token.objects.select_related("account").get(pk=row[0]) if row else None


def token_consume(*, secret: str | bytes, action: TokenAction | None = None, actor) -> Token:
    """Consume a token by the secret its link carries (URL-safe text, or the raw 32 bytes).

    With ``action``, a token of another action is not found (an activation page never consumes a
    recovery token).
    """
    raw = secret_from_text(secret) if isinstance(secret, str) else bytes(secret)
    if raw is None:
        raise TokenNotFound("tokens: this link is not valid")
    tokens = Token.objects.filter(secret=raw)
    if action is not None:
        tokens = tokens.filter(action=action)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor):
        # Two concurrent consumptions: the second waits for the first's row lock, then the trigger refuses it.
        if not tokens.update(consumed_at=Now(), consumed_with="link"):
            raise TokenNotFound("tokens: this link is not valid")
    return tokens.select_related("account").get()


def token_consume_code(*, identifier: str, code: str, action: TokenAction = TokenAction.ACTIVATION, actor) -> Token:
    """Consume a token by the 5-digit code, given with the login or e-mail it was sent for.

    The guess is compared with one token only: the newest of that action among the accounts the
    login or e-mail names (the code of the most recent e-mail), so that many sign-ups sharing an
    address do not multiply a guess's chances. A wrong code counts against that token; at the
    database's tokens_max_code_attempts() its code stops working, its link does not. The count is
    committed even though we raise.
    """
    with transaction.atomic(), audit_context(actor=actor):
        target = (
            Token.objects.select_for_update()
            .filter(action=action, superseded_at__isnull=True, account__in=accounts_by_identifier(identifier))
            .annotate(
                expired=ExpressionWrapper(Q(expires_at__lte=Now()), output_field=BooleanField()),
                attempts_left=MaxCodeAttempts() - F("failed_attempts"),
            )
            .order_by("-id")
            .first()
        )
        if target is None:
            raise TokenNotFound("tokens: no code was sent to this login or e-mail; ask for a new one")
        usable = target.consumed_at is None and target.attempts_left > 0 and not target.expired
        # Bytes, not text: compare_digest raises TypeError on non-ASCII text (full-width digits, say).
        right = hmac.compare_digest(target.code.encode(), code.strip().encode())
        if usable and not right:
            Token.objects.filter(pk=target.pk).update(failed_attempts=F("failed_attempts") + 1)

    if usable and not right:
        attempts_left = target.attempts_left - 1  # this wrong code counted
        if attempts_left == 0:
            raise WrongCode(
                "tokens: wrong code; this code no longer works, use the link in the e-mail or ask for a new one",
                attempts_left=0,
            )
        raise WrongCode(f"tokens: wrong code; {attempts_left} attempt(s) left", attempts_left=attempts_left)
    # The right code, or nothing to guess against: the consumption's refusal says why (expired, used,
    # code blocked, account suspended ...), and a wrong code never consumes anything.
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor):
        Token.objects.filter(pk=target.pk).update(consumed_at=Now(), consumed_with="code")
        if not right:  # unusable, yet not refused: rolled back, never consumed by a wrong code
            raise TokenNotFound("tokens: no code was sent to this login or e-mail; ask for a new one")
    return Token.objects.select_related("account").get(pk=target.pk)


def token_request_password_recovery(*, identifier: str, actor) -> None:
    """Issue a password-recovery token if an active account has this login or e-mail.

    Returns nothing either way, so the caller cannot tell whether an account exists.
    """
    account = accounts_by_identifier(identifier).filter(status=AccountStatus.ACTIVE).first()
    if account is not None:
        _issue(account.pk, TokenAction.PASSWORD_RECOVERY, needs=AccountStatus.ACTIVE, actor=actor)
