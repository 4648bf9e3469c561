from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from accounts.models import Account, AccountStatus
from tokens.models import Job, JobType, MailState, Token, TokenAction

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


def expired_unmailed() -> QuerySet[Token]:
    """Waiting tokens that expired before they could be mailed (read through tokens_due_mail_idx)."""
    return Token.objects.filter(mail_state__in=WAITING, expires_at__lte=Now())


def mail_runs() -> QuerySet[Job]:
    return Job.objects.filter(job_type=JobType.MAILROOM)


# A run in trouble: mail it could not send (retrying or dead), or it stopped early (an unreachable
# SMTP server, a lost connection, killed mid-way: tokens/mailroom/drain.py).
MAIL_RUN_TROUBLE = Q(failed__gt=0) | Q(error__isnull=False)
