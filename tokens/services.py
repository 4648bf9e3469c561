"""Issuing and consuming tokens.

Whether a token may be consumed (unused, not replaced, not burnt, unexpired, account in the
right state) is decided by the trigger on tokens.consumed_at, for every client; these services
find the token, let the database decide, and turn its refusal into a LifecycleError.
"""

import hmac

from django.db import connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, F, Q
from django.db.models.functions import Now

from accounts.models import Account, AccountStatus
from accounts.selectors import accounts_by_identifier
from platform_events.db.refusals import lifecycle_rules
from tokens.errors import TokenNotFound, WrongCode
from tokens.models import MAX_CODE_ATTEMPTS, Token, TokenAction, secret_from_text


def token_issue(*, account: Account, action: TokenAction) -> Token:
    """Insert a token; the database supersedes the older ones of that action and NOTIFYs."""
    with lifecycle_rules(), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO tokens (account, action) VALUES (%s, %s) RETURNING id", [account.pk, action])
            (token_id,) = cursor.fetchone()
    return Token.objects.select_related("account").get(pk=token_id)


def token_consume(*, secret: str | bytes, action: TokenAction | None = None) -> Token:
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
    with lifecycle_rules(), transaction.atomic():
        # Two concurrent consumptions: the second waits for the first's row lock, then the trigger refuses it.
        if not tokens.update(consumed_at=Now()):
            raise TokenNotFound("tokens: this link is not valid")
    return tokens.select_related("account").get()


def token_consume_code(*, identifier: str, code: str, action: TokenAction = TokenAction.ACTIVATION) -> Token:
    """Consume a token by the 5-digit code, given with the login or e-mail it was sent for.

    A wrong code counts against every usable token of that action for the account(s); at
    MAX_CODE_ATTEMPTS a token is burnt. The count is committed even though we raise.
    """
    with transaction.atomic():
        candidates = list(
            Token.objects.select_for_update()
            .filter(action=action, superseded_at__isnull=True, account__in=accounts_by_identifier(identifier))
            .annotate(expired=ExpressionWrapper(Q(expires_at__lte=Now()), output_field=BooleanField()))
            .order_by("-id")
        )
        usable = [token for token in candidates if token.consumed_at is None and not token.burnt and not token.expired]
        match = next((token for token in candidates if hmac.compare_digest(token.code, code.strip())), None)
        if match is None and usable:
            Token.objects.filter(pk__in=[token.pk for token in usable]).update(failed_attempts=F("failed_attempts") + 1)

    if not candidates:
        raise TokenNotFound("tokens: no code was sent to this login or e-mail; ask for a new one")
    if match is None and usable:
        attempts_left = MAX_CODE_ATTEMPTS - 1 - max(token.failed_attempts for token in usable)
        if attempts_left == 0:
            raise WrongCode("tokens: wrong code; this code no longer works, ask for a new one", attempts_left=0)
        raise WrongCode(f"tokens: wrong code; {attempts_left} attempt(s) left", attempts_left=attempts_left)
    # Nothing usable to guess against: let the newest token's refusal say why (expired, used, burnt).
    target = match or candidates[0]
    with lifecycle_rules(), transaction.atomic():
        Token.objects.filter(pk=target.pk).update(consumed_at=Now())
    return Token.objects.select_related("account").get(pk=target.pk)


def token_request_password_recovery(*, identifier: str) -> None:
    """Issue a password-recovery token if an active account has this login or e-mail.

    Returns nothing either way, so the caller cannot tell whether an account exists.
    """
    account = accounts_by_identifier(identifier).filter(status=AccountStatus.ACTIVE).first()
    if account is None:
        return
    token_issue(account=account, action=TokenAction.PASSWORD_RECOVERY)
