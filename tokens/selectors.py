from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Case, Count, F, Max, Q, QuerySet, Sum, Value, When
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
    their next attempt due, and their account in the state the action needs (docs/mailroom.md, "Due mail")."""
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
            | Q(action=TokenAction.RESTORE, account__status=AccountStatus.DEPROVISIONED)
            | Q(action=TokenAction.DELETION, account__status=AccountStatus.ACTIVE)
            | Q(action=TokenAction.PASSWORD_CHANGED, account__status=AccountStatus.ACTIVE)
            | Q(action=TokenAction.EMAIL_CHANGE, account__status=AccountStatus.ACTIVE)
            | Q(action=TokenAction.EMAIL_CHANGE_UNDO, account__status=AccountStatus.ACTIVE)
        )
    )


def longest_mail_wait() -> timedelta | None:
    """How long the e-mail due longest has been due (since its next attempt came); None when none is.
    The drain mails what is due within a minute or two (docs/mailroom.md, "Due mail"): a long wait says it is
    not running."""
    return due_mail().aggregate(waited=Max(Now() - F("mail_next_attempt_at")))["waited"]


def due_mail_count(*, up_to: int) -> int:
    """How many e-mails are due now, counted up to ``up_to``: it reads the due-mail index (tokens_due_mail_idx)
    and stops there, so a backlog past it costs no more."""
    return due_mail().order_by()[:up_to].count()


def oldest_due_mail_issued_at() -> datetime | None:
    """When the oldest e-mail due now was issued; None when none is due. Tokens live equally long, so
    the first to expire is the oldest."""
    return due_mail().order_by("expires_at").values_list("created_at", flat=True).first()


def mail_count(state: MailState, *, up_to: int) -> int:
    """How many e-mails are in a mail state, counted up to ``up_to``. Retrying mail is read through
    tokens_due_mail_idx, dead mail through tokens_dead_mail_idx."""
    return Token.objects.filter(mail_state=state).order_by()[:up_to].count()


def expired_unmailed() -> QuerySet[Token]:
    """Waiting tokens that expired before they could be mailed (read through tokens_due_mail_idx)."""
    return Token.objects.filter(mail_state__in=WAITING, expires_at__lte=Now())


def mail_runs() -> QuerySet[Job]:
    return Job.objects.filter(job_type=JobType.MAILROOM)


# A run in trouble: mail it could not send (retrying or dead), or it stopped early (an unreachable
# SMTP server, a lost connection, killed mid-way: tokens/mailroom/drain.py).
MAIL_RUN_TROUBLE = Q(failed__gt=0) | Q(error__isnull=False)
_FINISHED = Q(finished_at__isnull=False)


@dataclass(frozen=True)
class MailRunCounts:
    """The mail runs started in a window: how many, the e-mails they sent, those in trouble
    (MAIL_RUN_TROUBLE, finished or not), and each run by its outcome (ok, failed_mail, error, running)."""

    runs: int
    sent: int
    trouble: int
    ok: int  # finished, every e-mail sent
    failed_mail: int  # finished, some mail retrying or dead
    error: int  # stopped early
    running: int  # not finished


def mail_run_counts(*, since: datetime) -> MailRunCounts:
    """The mail runs started since ``since``, in one read of the index on (job_type, started_at). An idle
    run leaves no row (tokens/mailroom/drain.py)."""
    return MailRunCounts(
        **mail_runs()
        .filter(started_at__gte=since)
        .aggregate(
            runs=Count("id"),
            sent=Sum("sent", default=0),
            trouble=Count("id", filter=MAIL_RUN_TROUBLE),
            ok=Count("id", filter=_FINISHED & Q(error__isnull=True, failed=0)),
            failed_mail=Count("id", filter=_FINISHED & Q(error__isnull=True, failed__gt=0)),
            error=Count("id", filter=_FINISHED & Q(error__isnull=False)),
            running=Count("id", filter=Q(finished_at__isnull=True)),
        )
    )


def unfinished_mail_runs_count() -> int:
    """Mail runs not finished, however long ago they started: running now, or killed mid-way."""
    return mail_runs().filter(finished_at__isnull=True).count()


def last_mail_run() -> Job | None:
    return mail_runs().order_by("-started_at", "-id").first()


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
