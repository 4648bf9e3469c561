from datetime import timedelta

from django.db.models import Case, F, Max, Q, QuerySet, Value, When
from django.db.models.functions import Now

from accounts.models import Account, AccountStatus
from accounts.selectors import accounts_search
from tokens.models import Job, JobType, MailState, MaxCodeAttempts, Token, TokenAction, TokenState

WAITING = [MailState.QUEUED, MailState.RETRYING]


def live_token(*, account: Account | int, action: TokenAction = TokenAction.ACTIVATION) -> Token | None:
    """The account's usable token of this action: unconsumed and not replaced by a newer one (there is
    at most one, by the index tokens_one_live_per_action_key). It may still have expired or be burnt."""
    return Token.objects.filter(
        account=account, action=action, consumed_at__isnull=True, superseded_at__isnull=True
    ).first()


def due_mail() -> QuerySet[Token]:
    """Tokens to mail now: waiting, unexpired, unconsumed, not replaced, not leased by another run,
    their next attempt due, and their account in the state the action needs (README, "Mailroom")."""
    return (
        Token.objects.filter(
            mail_state__in=WAITING,
            expires_at__gt=Now(),
            consumed_at__isnull=True,
            superseded_at__isnull=True,
            mail_next_attempt_at__lte=Now(),
        )
        .filter(Q(mail_lease_until__isnull=True) | Q(mail_lease_until__lt=Now()))
        .filter(
            Q(action=TokenAction.ACTIVATION, account__status=AccountStatus.PROVISIONED)
            | Q(action=TokenAction.PASSWORD_RECOVERY, account__status=AccountStatus.ACTIVE)
        )
    )


def longest_mail_wait() -> timedelta | None:
    """How long the e-mail due longest has been due (since its next attempt came); None when none is.
    The drain mails what is due within a minute or two (README, "Mailroom"): a long wait says it is
    not running."""
    return due_mail().aggregate(waited=Max(Now() - F("mail_next_attempt_at")))["waited"]


def expired_unmailed() -> QuerySet[Token]:
    """Waiting tokens that expired before they could be mailed (read through tokens_due_mail_idx)."""
    return Token.objects.filter(mail_state__in=WAITING, expires_at__lte=Now())


def mail_runs() -> QuerySet[Job]:
    return Job.objects.filter(job_type=JobType.MAILROOM)


# A run in trouble: mail it could not send (retrying or dead), or it stopped early (an unreachable
# SMTP server, a lost connection, killed mid-way: tokens/mailroom/drain.py).
MAIL_RUN_TROUBLE = Q(failed__gt=0) | Q(error__isnull=False)


# Each state's condition, disjoint, in the order the database refuses a consumption
# (tokens/sql/0012_code_only_burnt.sql): used, then replaced, then expired; a blocked code matters
# only while the token could otherwise be used.
_OPEN = Q(consumed_at__isnull=True, superseded_at__isnull=True)
TOKEN_STATES = {
    TokenState.USED: Q(consumed_at__isnull=False),
    TokenState.REPLACED: Q(consumed_at__isnull=True, superseded_at__isnull=False),
    TokenState.EXPIRED: _OPEN & Q(expires_at__lte=Now()),
    TokenState.CODE_BLOCKED: _OPEN & Q(expires_at__gt=Now(), failed_attempts__gte=MaxCodeAttempts()),
    TokenState.VALID: _OPEN & Q(expires_at__gt=Now(), failed_attempts__lt=MaxCodeAttempts()),
}


def token_state() -> Case:
    """A token's state (TokenState) as an SQL expression of its own row: annotate a list with it, no
    query per row."""
    return Case(*(When(condition, then=Value(state.value)) for state, condition in TOKEN_STATES.items()))


def tokens_in_state(queryset: QuerySet[Token], state: TokenState) -> QuerySet[Token]:
    return queryset.filter(TOKEN_STATES[state])


# The largest id a bigint holds has 19 digits; a longer number names no token.
TOKEN_ID_DIGITS = 18


def tokens_search(queryset: QuerySet[Token], term: str) -> QuerySet[Token]:
    """Tokens whose id is ``term`` or whose account accounts_search finds by ``term`` (its login or
    e-mail: exact, its start, or a part of it). Never by a secret or a code: they are credentials."""
    term = term.strip()
    if not term:
        return queryset
    found = Q(account__in=accounts_search(Account.objects.all(), term).values("pk"))
    if term.isascii() and term.isdigit() and len(term) <= TOKEN_ID_DIGITS:
        found |= Q(pk=int(term))
    return queryset.filter(found)
