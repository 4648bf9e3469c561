"""Issuing and consuming tokens.

Whether a token may be consumed (unused, not replaced, unexpired, account in the right state,
and by code only while its code is not blocked by wrong codes) is decided by the trigger on
tokens.consumed_at, for every client; these services find the token, let the database decide, and
raise its refusal as a Refused (tokens/errors.py). A consumption may set the account's password in
the same transaction (activation, recovery). Like the account services, each takes the acting party,
``actor``: a staff user, None (the system, audited as the database role), or TOKEN_HOLDER, the
person the token was sent to (audited as its account).
"""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, F, Q
from django.db.models.functions import Now

from accounts.errors import AccountGone
from accounts.models import Account, AccountPassword, AccountStatus
from accounts.selectors import accounts_by_identifier
from accounts.services import (
    account_password_check,
    account_password_hash,
    account_set_password,
    account_storage_back,
)
from platform_events.audit.context import audit_context
from platform_events.db.refusals import lifecycle_rules
from platform_events.limits.counters import Limit, LimitExceeded, limits_hit
from tokens.digests import code_digest, secret_digest
from tokens.errors import AddressChangedLately, PasswordNeeded, TokenNotFound, WrongAccountState, WrongCode
from tokens.links import secret_from_text
from tokens.models import MailState, MaxCodeAttempts, Token, TokenAction

# The acting party of an end user's own action: the account the token was sent to.
TOKEN_HOLDER = "token holder"

# The state an account must be in for each action's e-mail (the consume trigger says the same).
NEEDS = {
    TokenAction.ACTIVATION: AccountStatus.PROVISIONED,
    TokenAction.PASSWORD_RECOVERY: AccountStatus.ACTIVE,
    TokenAction.RESTORE: AccountStatus.DEPROVISIONED,
    TokenAction.DELETION: AccountStatus.ACTIVE,
}


def public_limit(name: str) -> Limit:
    """One of the public pages' limits, as settings.PUBLIC_LIMITS_PER_HOUR sets it (docs/public-pages.md, "Limits")."""
    return Limit(name=name, max_hits=settings.PUBLIC_LIMITS_PER_HOUR[name], window=timedelta(hours=1))


def email_change_limit() -> Limit:
    """Changes of address asked for per account an hour: each mails an address the account typed, so
    as many as the e-mails one account may be sent (LIMIT_MAIL_PER_ACCOUNT)."""
    return Limit(
        name="email-change-per-account",
        max_hits=settings.PUBLIC_LIMITS_PER_HOUR["mail-per-account"],
        window=timedelta(hours=1),
    )


def _acting(actor, account: Account | None):
    """Who the audit trail names: TOKEN_HOLDER is the token's account. With no account (a code typed
    for a login nobody has), a stand-in that writes nothing: named all the same, so that an unknown
    login costs the same statements as a known one."""
    if actor != TOKEN_HOLDER:
        return actor
    return account if account is not None else Account(pk=0, login="(nobody)")


@dataclass(frozen=True)
class NewPassword:
    """What a consumption does to the account's password: ``password`` to set (None: leave it), and
    whether an account without one must be given one (an activation from the public pages)."""

    password: str | None = None
    required: bool = False


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


def token_by_secret(secret: str | bytes, *, action: TokenAction | None = None) -> Token | None:
    """The token a link's secret (URL-safe text, or the raw 32 bytes) names, with its account; None when
    there is none (of ``action``, when given: an activation page never finds a recovery token). Found by
    the secret's digest alone, the one thing a mailed token keeps of it (tokens/sql/0015_digests.sql)."""
    raw = secret_from_text(secret) if isinstance(secret, str) else bytes(secret)
    if raw is None:
        return None
    tokens = Token.objects.select_related("account").filter(secret_digest=secret_digest(raw))
    # A deprovisioned account's link is not valid, but the restore link: the pages answer it as one
    # nobody was sent.
    tokens = tokens.exclude(Q(account__status=AccountStatus.DEPROVISIONED) & ~Q(action=TokenAction.RESTORE))
    if action is not None:
        tokens = tokens.filter(action=action)
    return tokens.first()


def token_consume(
    *, secret: str | bytes, action: TokenAction | None = None, actor, new_password: NewPassword = NewPassword()
) -> Token:
    """Consume a token by the secret its link carries (URL-safe text, or the raw 32 bytes), and set
    the account's password in the same transaction when ``new_password`` gives one.

    With ``action``, a token of another action is not found (an activation page never consumes a
    recovery token). A password the validators refuse raises their ValidationError, and nothing is
    consumed.
    """
    token = token_by_secret(secret, action=action)
    if token is None:
        raise TokenNotFound("tokens: this link is not valid")
    return _consume(token, how="link", actor=actor, new_password=new_password)


def _consume(token: Token, *, how: str, actor, new_password: NewPassword) -> Token:
    account = token.account
    password_hash = _password_hash(account, new_password)  # hashed before the row lock is taken: Argon2 is slow
    acting = _acting(actor, account)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=acting):
        # Two concurrent consumptions: the second waits for the first's row lock, then the trigger refuses it.
        if not Token.objects.filter(pk=token.pk).update(consumed_at=Now(), consumed_with=how):
            raise TokenNotFound("tokens: this link is not valid")
        if token.action == TokenAction.RESTORE:
            # The database reprovisioned the account; its storage comes back with it.
            account_storage_back(account_id=account.pk, actor=acting)
        if password_hash:
            # Consumed with the token: a recovery token ends with the password it set.
            account_set_password(account=account, password_hash=password_hash, actor=acting)
    return Token.objects.select_related("account").get(pk=token.pk)


def _password_hash(account: Account, new_password: NewPassword) -> str | None:
    if new_password.password is None:
        if new_password.required and not AccountPassword.objects.filter(account=account).exists():
            raise PasswordNeeded(f"tokens: account {account.pk} has no password yet; choose one", account_id=account.pk)
        return None
    account_password_check(new_password.password, login=account.login, email=account.email)
    return account_password_hash(new_password.password)


def token_consume_code(
    *,
    identifier: str,
    code: str,
    action: TokenAction = TokenAction.ACTIVATION,
    actor,
    new_password: NewPassword = NewPassword(),
) -> Token:
    """Consume a token by the 5-digit code, given with the login or e-mail it was sent for (and set the
    password as token_consume does, once the code is right).

    The guess is compared with one token only: the newest of that action among the accounts the
    login or e-mail names (the code of the most recent e-mail), so that many sign-ups sharing an
    address do not multiply a guess's chances. A wrong code counts against that token; at the
    database's tokens_max_code_attempts() its code stops working, its link does not. The count is
    committed even though we raise.

    Every identifier costs the same statements, whether or not it names an account (docs/public-pages.md,
    "No oracle").
    """
    with transaction.atomic():
        target = (
            Token.objects.select_for_update(of=("self",))
            .select_related("account")
            .filter(action=action, superseded_at__isnull=True, account__in=accounts_by_identifier(identifier))
            .annotate(
                expired=ExpressionWrapper(Q(expires_at__lte=Now()), output_field=BooleanField()),
                attempts_left=MaxCodeAttempts() - F("failed_attempts"),
            )
            .order_by("-id")
            .first()
        )
        usable = target is not None and target.consumed_at is None and target.attempts_left > 0 and not target.expired
        right = _code_matches(target, code.strip())
        acting = _acting(actor, target.account if target is not None else None)
        with audit_context(actor=acting):
            # The same UPDATE whether or not there is a token to count against (id 0 matches nothing).
            Token.objects.filter(pk=target.pk if usable and not right else 0).update(
                failed_attempts=F("failed_attempts") + 1
            )

    if target is None:
        raise TokenNotFound("tokens: no code was sent to this login or e-mail; ask for a new one")
    if usable and not right:
        attempts_left = target.attempts_left - 1  # this wrong code counted
        if attempts_left == 0:
            raise WrongCode(
                "tokens: wrong code; this code no longer works, use the link in the e-mail or ask for a new one",
                attempts_left=0,
            )
        raise WrongCode(f"tokens: wrong code; {attempts_left} attempt(s) left", attempts_left=attempts_left)
    if not right:
        # Nothing to guess against (used, expired, code blocked): a wrong code learns nothing of why.
        raise TokenNotFound("tokens: no code was sent to this login or e-mail; ask for a new one")
    return _consume(target, how="code", actor=actor, new_password=new_password)


def _code_matches(target: Token | None, code: str) -> bool:
    """Whether ``code`` is the target's, compared in the database: with the HMAC its e-mail's code was
    kept as once mailed (the only thing the row still has), with the plain code before. One statement
    whether or not there is a target (id 0 matches nothing). The digests are compared with ``=``: an
    HMAC under a key the guesser does not hold leaks nothing through the time a comparison takes."""
    token_id = target.pk if target is not None else 0
    digest = code_digest(token_id, code, key_id=target.code_digest_key if target is not None else None)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(code_digest = %s, code = %s) FROM tokens WHERE id = %s", [digest, code, token_id]
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def token_request_mail(
    *, identifier: str, action: TokenAction, actor, per_account: Limit | None = None
) -> Token | None:
    """Send an e-mail of ``action`` to the account this login or e-mail names, if it is in the state the
    action needs (the newest such sign-up, for an address several share): its live token while that has
    not expired and has not been mailed yet (queued again, not replaced), else a new token, which
    replaces the old one. A mailed token cannot be mailed again: the database kept only digests of its
    link and code (tokens/sql/0015_digests.sql), so asking again after an e-mail went out gives a new
    link and code, sent to the same mailbox. A token whose code is blocked by wrong codes is not live
    here either: mailing its dead code again would leave the person only the link.
    The token to be mailed, or None when there is no such account.

    The public pages run it after they have answered (tokens/tasks.py), the same answer for any input.
    With ``per_account``, an account over that limit gets nothing: the pages count what was typed,
    and a login and its address are two spellings of one mailbox.

    A restore e-mail goes to the deprovisioned account that holds the address (it had activated): a
    deprovisioned sign-up that never activated holds nothing, and a new sign-up takes its place; one
    deprovisioned while suspended gets none (staff reprovision it, or not), nor one its identity
    provider deleted (the provider or staff restore it).
    """
    needs = NEEDS[action]
    named = accounts_by_identifier(identifier).filter(status=needs)
    if action == TokenAction.RESTORE:
        # The database refuses the others too (tokens/sql/0019_deprovisioned.sql): one deprovisioned
        # while suspended is staff's to restore.
        named = named.filter(activated_at__isnull=False, suspended_at__isnull=True)
        # Nor one its identity provider deleted (accounts/sql/0026_scim_users.sql).
        named = named.exclude(scim_user__deleted_at__isnull=False)
    account = named.order_by("-id").first()
    if account is None:
        return None
    if per_account is not None:
        try:
            limits_hit([(per_account, f"account:{account.pk}")])
        except LimitExceeded:
            return None
    acting = _acting(actor, account)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=acting):
        # The account's row lock, as _issue takes it: a concurrent consume, suspension or issue waits.
        if not Account.objects.filter(pk=account.pk, status=needs).select_for_update(no_key=True).exists():
            return None
        live = Token.objects.filter(
            account=account,
            action=action,
            consumed_at__isnull=True,
            superseded_at__isnull=True,
            expires_at__gt=Now(),
            failed_attempts__lt=MaxCodeAttempts(),
            secret__isnull=False,
        ).first()
        if live is None:
            try:
                return _issue(account.pk, action, needs=needs, actor=acting)
            except AddressChangedLately:
                # A deletion waits for the undo of a recent change of address: the page answered the
                # same, and nothing is sent.
                return None
        # Due again now, unless a run is mailing it at this moment (its lease): then that e-mail is the one.
        again = Token.objects.filter(pk=live.pk, mail_claim__isnull=True).update(
            mail_state=MailState.QUEUED if live.mail_state != MailState.RETRYING else MailState.RETRYING,
            mail_next_attempt_at=Now(),
        )
        if again:
            with connection.cursor() as cursor:
                cursor.execute("NOTIFY token_insert")  # the listeners drain now, as for a new token
    return live


def token_delete_by_password(*, account: Account) -> Token:
    """A signed-in person's deletion of their account, its password checked by the caller: a deletion
    token issued and consumed at once, "password" its way, as the person (tokens/sql/0024). The
    database deprovisions the account, ends its sessions and issues the restore token, as for a
    deletion link; the restore e-mail says it was the person's request. ``WrongAccountState`` when the
    account is no longer active, ``AddressChangedLately`` while the undo of a change of address is live."""
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=account):
        token = _issue_or_refuse(account, TokenAction.DELETION, needs=AccountStatus.ACTIVE, actor=account)
        Token.objects.filter(pk=token.pk).update(consumed_at=Now(), consumed_with="password")
    return Token.objects.select_related("account").get(pk=token.pk)


def token_activate_vouched(*, account: Account, actor) -> Token:
    """Activate a provisioned account an identity provider vouched for, without an activation e-mail: an
    activation token issued and consumed at once, "identity_provider" its way, as ``actor`` (the
    client; tokens/sql/0027). The database activates the account as for a link, claiming its
    address: ``EmailAlreadyClaimed`` when another activated account holds it; ``WrongAccountState``
    when the account is not provisioned."""
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor):
        token = _issue_or_refuse(account, TokenAction.ACTIVATION, needs=AccountStatus.PROVISIONED, actor=actor)
        Token.objects.filter(pk=token.pk).update(consumed_at=Now(), consumed_with="identity_provider")
    return Token.objects.select_related("account").get(pk=token.pk)


def token_request_email_change(*, account: Account, email: str, actor) -> Token:
    """Mail ``email`` a link that makes it the account's address (tokens/sql/0026_email_change.sql);
    until it is used the account keeps its address, and a newer request replaces this one. Refused
    for an address the account rules refuse (``InvalidEmail``), the account's own
    (``AddressUnchanged``), an account whose address changed lately (``AddressChangedLately``), or one
    that is not active (``WrongAccountState``). Whether another
    account holds the address is not asked here: the link's use finds out, and only the mailbox's
    owner sees the answer."""
    acting = _acting(actor, account)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=acting), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tokens (account, action, email) VALUES (%s, %s, %s) RETURNING id",
            [account.pk, TokenAction.EMAIL_CHANGE, email],
        )
        (token_id,) = cursor.fetchone()
    return Token.objects.select_related("account").get(pk=token_id)
