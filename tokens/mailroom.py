"""The mailroom: e-mails every due token exactly once, over SMTP (DESIGN.md section 5).

A drain run claims due tokens in batches (``FOR UPDATE SKIP LOCKED``, then a lease so other runs
leave the batch alone while it is sent), renders ``templates/emails/<action>.*``, sends the batch
over one SMTP connection, and marks each token ``sent`` in its own commit once the server has
accepted it. So any number of runs may drain at once; a run killed between an accept and its
commit re-sends at most that one e-mail (its Message-ID is the same, so a mail server may fold
the copy); the rest of its batch waits for the lease to end. Nothing is skipped whatever order
transactions commit in: there is no cursor, only the tokens' own state.

Failures: connection refused, a timeout or a 4xx answer are transient (``retrying``, with
exponential backoff, while the token is valid); a 5xx answer or too many attempts make it ``dead``
with the reason. Each run leaves a row in ``jobs``.
"""

import smtplib
import uuid
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper, Value
from django.db.models.functions import Now
from django.template.loader import render_to_string
from django.urls import reverse

from tokens.models import Job, JobType, MailState, Token, TokenAction, secret_to_text
from tokens.selectors import due_mail, expired_unmailed

LANDING_PAGES = {TokenAction.ACTIVATION: "activate-link", TokenAction.PASSWORD_RECOVERY: "recover-link"}


@dataclass
class DrainResult:
    job_id: int
    claimed: int = 0
    sent: int = 0
    retrying: int = 0
    dead: int = 0
    expired: int = 0
    error: str | None = None
    # The highest token id this run handled: the seed's last_seq, kept in jobs for the record only.
    last_seq: int | None = None

    @property
    def failed(self) -> int:
        return self.retrying + self.dead

    def summary(self) -> str:
        return (
            f"mail run {self.job_id}: claimed {self.claimed}, sent {self.sent}, retrying {self.retrying}, "
            f"dead {self.dead}, expired unsent {self.expired}"
        )


def drain(*, batch_size: int | None = None, on_batch=lambda result: None) -> DrainResult:
    """Mail everything due, batch after batch, until nothing is due or the SMTP server is unreachable."""
    batch_size = batch_size or settings.MAILROOM_BATCH_SIZE
    result = DrainResult(job_id=Job.objects.create(job_type=JobType.MAILROOM).pk)
    # Each accepted e-mail is marked in a commit of its own (so a killed run re-sends at most the one
    # in flight); not waiting for the WAL flush keeps those commits cheap. Only a crash of PostgreSQL
    # itself could lose the last marks, and with them re-send those e-mails.
    _set_synchronous_commit("off")
    try:
        result.expired = expired_unmailed().update(
            mail_state=MailState.SKIPPED, mail_error="expired before it was mailed"
        )
        while result.error is None:
            claim, batch = claim_batch(batch_size)
            if not batch:
                break
            result.claimed += len(batch)
            send_batch(batch, claim=claim, result=result)
            on_batch(result)
    except Exception as error:
        result.error = f"{type(error).__name__}: {error}"
        raise
    finally:
        _set_synchronous_commit("DEFAULT")
        _record_run(result)
    return result


def claim_batch(size: int) -> tuple[uuid.UUID, list[Token]]:
    """Lease up to ``size`` due tokens to this run; rows another run is claiming are skipped, not waited for."""
    claim = uuid.uuid4()
    with transaction.atomic():
        ids = list(
            due_mail()
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("expires_at")
            .values_list("id", flat=True)[:size]
        )
        if not ids:
            return claim, []
        lease_until = ExpressionWrapper(
            Now() + Value(timedelta(seconds=settings.MAILROOM_LEASE_SECONDS)), output_field=DateTimeField()
        )
        Token.objects.filter(id__in=ids).update(mail_lease_until=lease_until, mail_claim=claim)
    return claim, list(Token.objects.select_related("account").filter(id__in=ids).order_by("expires_at"))


def send_batch(batch: list[Token], *, claim: uuid.UUID, result: DrainResult) -> None:
    """Send the batch over one SMTP connection, recording each token's outcome as it happens."""
    messages = [(token, render_mail(token)) for token in batch]
    smtp = get_connection(fail_silently=False)
    try:
        smtp.open()
    except OSError as error:  # smtplib's errors are OSErrors too: refused, timed out, bad greeting
        result.error = f"SMTP server unreachable: {_describe(error)}"
        for token, _ in messages:
            mark_failed(token, claim=claim, reason=result.error, permanent=False, result=result)
        return
    try:
        for position, (token, message) in enumerate(messages):
            try:
                smtp.send_messages([message])
            except (smtplib.SMTPRecipientsRefused, smtplib.SMTPResponseException) as error:
                code, reason = _smtp_answer(error)
                mark_failed(token, claim=claim, reason=reason, permanent=500 <= code < 600, result=result)
            except OSError as error:
                # The connection is gone: this token and the rest of the batch wait for their backoff.
                result.error = f"SMTP connection lost: {_describe(error)}"
                for unsent, _ in messages[position:]:
                    mark_failed(unsent, claim=claim, reason=result.error, permanent=False, result=result)
                return
            else:
                mark_sent(token, claim=claim, result=result)
    finally:
        try:
            smtp.close()
        except OSError:
            pass


def mark_sent(token: Token, *, claim: uuid.UUID, result: DrainResult) -> None:
    # One statement, committed on its own; plain SQL, as the ORM's own cost here was twice the database's.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tokens SET mail_state = 'sent', mailed_at = now(), mail_attempts = mail_attempts + 1,"
            " mail_lease_until = NULL, mail_claim = NULL, mail_error = NULL WHERE id = %s AND mail_claim = %s",
            [token.pk, claim],
        )
    result.sent += 1
    result.last_seq = max(result.last_seq or 0, token.pk)


def mark_failed(token: Token, *, claim: uuid.UUID, reason: str, permanent: bool, result: DrainResult) -> None:
    attempts = token.mail_attempts + 1
    if not permanent and attempts >= settings.MAILROOM_MAX_ATTEMPTS:
        permanent, reason = True, f"gave up after {attempts} attempts: {reason}"
    backoff = min(settings.MAILROOM_BACKOFF_SECONDS * 2 ** (attempts - 1), settings.MAILROOM_BACKOFF_MAX_SECONDS)
    Token.objects.filter(pk=token.pk, mail_claim=claim).update(
        mail_state=MailState.DEAD if permanent else MailState.RETRYING,
        mail_attempts=attempts,
        mail_next_attempt_at=ExpressionWrapper(Now() + Value(timedelta(seconds=backoff)), output_field=DateTimeField()),
        mail_lease_until=None,
        mail_claim=None,
        mail_error=reason[:1000],
    )
    if permanent:
        result.dead += 1
    else:
        result.retrying += 1
    result.last_seq = max(result.last_seq or 0, token.pk)


def render_mail(token: Token) -> EmailMultiAlternatives:
    """The e-mail for a token, from templates/emails/<action>.subject.txt, .txt and .html."""
    account = token.account
    path = reverse(LANDING_PAGES[token.action], args=[secret_to_text(token.secret)])
    context = {
        "login": account.login,
        "link": f"{settings.PUBLIC_BASE_URL}{path}",
        "code": token.code,
        "expires_at": token.expires_at,
        "valid_minutes": max(1, round((token.expires_at - token.created_at).total_seconds() / 60)),
    }
    name = f"emails/{token.action}"
    subject = " ".join(render_to_string(f"{name}.subject.txt", context).split())
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string(f"{name}.txt", context),
        to=[account.email],
        headers={
            # The same Message-ID on a re-sent copy lets mail servers and clients fold duplicates.
            "Message-ID": f"<token-{token.pk}@{urlsplit(settings.PUBLIC_BASE_URL).hostname}>",
            "X-Lifecycle-Token": str(token.pk),
        },
    )
    message.attach_alternative(render_to_string(f"{name}.html", context), "text/html")
    return message


def retry_now(tokens) -> int:
    """Make dead or retrying tokens due at once (one more attempt); returns how many still could be."""
    return tokens.filter(
        mail_state__in=[MailState.RETRYING, MailState.DEAD],
        expires_at__gt=Now(),
        consumed_at__isnull=True,
        superseded_at__isnull=True,
    ).update(mail_state=MailState.RETRYING, mail_next_attempt_at=Now())


def _set_synchronous_commit(value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET synchronous_commit TO {value}")


def _record_run(result: DrainResult) -> None:
    Job.objects.filter(pk=result.job_id).update(
        finished_at=Now(),
        claimed=result.claimed,
        sent=result.sent,
        failed=result.failed,
        error=result.error,
        last_seq=result.last_seq,
    )


def _smtp_answer(error: smtplib.SMTPException) -> tuple[int, str]:
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        code, text = next(iter(error.recipients.values()))
    else:
        code, text = error.smtp_code, error.smtp_error
    text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    return code, f"{code} {text}"


def _describe(error: OSError) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
