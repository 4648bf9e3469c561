"""A drain run: mail everything due, batch after batch; a run that claims mail leaves a row in ``jobs``."""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from tokens.mailroom.claim import Claim, claim_batch
from tokens.mailroom.send import send_batch
from tokens.models import Job, JobType, MailState, Token
from tokens.selectors import expired_unmailed


@dataclass
class DrainResult:
    # The run's row in jobs: None until its first claim, and for good when it claims nothing.
    job_id: int | None = None
    claimed: int = 0
    sent: int = 0
    retrying: int = 0
    dead: int = 0
    expired: int = 0
    # Tokens this run sent or failed after its lease ran out and another run took them over.
    lost_claims: int = 0
    error: str | None = None
    # The highest token id this run handled, kept in jobs for the record only: no run reads a cursor.
    last_seq: int | None = None

    @property
    def failed(self) -> int:
        return self.retrying + self.dead

    def summary(self) -> str:
        name = f"mail run {self.job_id}" if self.job_id else "mail run (no row kept: nothing to mail)"
        return (
            f"{name}: claimed {self.claimed}, sent {self.sent}, retrying {self.retrying}, "
            f"dead {self.dead}, expired unsent {self.expired}"
            + (f", lease ran out on {self.lost_claims} (see MAILROOM_LEASE_SECONDS)" if self.lost_claims else "")
        )


def drain(*, batch_size: int | None = None, on_batch=lambda result: None) -> DrainResult:
    """Mail everything due, batch after batch, until nothing is due or the SMTP server is unreachable.

    The run's row in ``jobs`` is inserted with its first claim, in the claim's transaction: a run
    that claims nothing and fails nothing leaves no row (otherwise the listener's poll every
    MAILROOM_POLL_SECONDS would add an empty row each time), and a run holding tokens always has one,
    whose ``progress_at`` tells a killed run from a live one (close_stopped_runs)."""
    batch_size = batch_size or settings.MAILROOM_BATCH_SIZE
    close_stopped_runs()
    result = DrainResult()
    # Each accepted e-mail is marked in a commit of its own (so a killed run re-sends at most the one
    # in flight); not waiting for the WAL flush keeps those commits cheap. Only a crash of PostgreSQL
    # itself could lose the last marks, and with them re-send those e-mails.
    _set_synchronous_commit("off")
    try:
        result.expired = expired_unmailed().update(
            mail_state=MailState.SKIPPED, mail_error="expired before it was mailed"
        )
        while result.error is None:
            claim, batch = _claim(result, batch_size)
            if not batch:
                break
            result.claimed += len(batch)
            send_batch(batch, claim=claim, result=result)
            _record_run(result, finished=False)
            on_batch(result)
    except Exception as error:
        result.error = f"{type(error).__name__}: {error}"
        raise
    finally:
        _set_synchronous_commit("DEFAULT")
        _record_run(result)
    return result


def _claim(result: DrainResult, batch_size: int) -> tuple[Claim, list[Token]]:
    """Claim a batch; with the run's first batch, insert its row in the same transaction, so that no
    token is ever held by a run without a row (a run killed right after its claim is still seen)."""
    if result.job_id is not None:  # later batches: the claim alone, no transaction round trips
        return claim_batch(batch_size)
    with transaction.atomic():
        claim, batch = claim_batch(batch_size)
        job = Job.objects.create(job_type=JobType.MAILROOM) if batch and result.job_id is None else None
    if job is not None:  # only once committed: a claim rolled back leaves the run without a row
        result.job_id = job.pk
    return claim, batch


def _set_synchronous_commit(value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET synchronous_commit TO {value}")


def close_stopped_runs() -> int:
    """Close the rows of runs that stopped recording progress (killed, or their host lost): they keep
    the counts of their last batch. A live run records progress after every batch; one whose single
    batch outlasts two leases (a very slow SMTP server) is closed too, and its own final record then
    overwrites this one."""
    stopped_before = timezone.now() - timedelta(seconds=2 * settings.MAILROOM_LEASE_SECONDS)
    return (
        Job.objects.filter(job_type=JobType.MAILROOM, finished_at__isnull=True)
        .filter(Q(progress_at__lt=stopped_before) | Q(progress_at__isnull=True, started_at__lt=stopped_before))
        .update(
            finished_at=Coalesce("progress_at", "started_at"),
            error="stopped before it finished (killed, or its host lost); counts are up to its last batch",
        )
    )


def _record_run(result: DrainResult, *, finished: bool = True) -> None:
    """Record the run's counts in its row. A run without a row claimed nothing: it keeps none unless
    it failed (an error before its first claim is still worth a row)."""
    counts = {
        "progress_at": Now(),
        "claimed": result.claimed,
        "sent": result.sent,
        "failed": result.failed,
        "error": result.error,
        "last_seq": result.last_seq,
        **({"finished_at": Now()} if finished else {}),
    }
    if result.job_id is not None:
        Job.objects.filter(pk=result.job_id).update(**counts)
    elif result.error is not None:
        result.job_id = Job.objects.create(job_type=JobType.MAILROOM, **counts).pk
