"""Claims: a run leases a batch of due tokens, then gives each back marked sent or failed.

Only the run holding a token's claim may mark it: a run whose lease ended finds its marks matching
nothing, and the run that took the token over decides.
"""

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper, Value
from django.db.models.functions import Now

from tokens.models import MailState, Token
from tokens.selectors import due_mail


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


def mark_sent(token: Token, *, claim: uuid.UUID) -> None:
    # One statement, committed on its own; plain SQL, as the ORM's own cost here was twice the database's.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tokens SET mail_state = 'sent', mailed_at = now(), mail_attempts = mail_attempts + 1,"
            " mail_lease_until = NULL, mail_claim = NULL, mail_error = NULL WHERE id = %s AND mail_claim = %s",
            [token.pk, claim],
        )


def mark_failed(token: Token, *, claim: uuid.UUID, reason: str, permanent: bool) -> MailState:
    """Mark a failed attempt: retrying after a backoff, or dead when permanent or out of attempts."""
    attempts = token.mail_attempts + 1
    if not permanent and attempts >= settings.MAILROOM_MAX_ATTEMPTS:
        permanent, reason = True, f"gave up after {attempts} attempts: {reason}"
    backoff = min(settings.MAILROOM_BACKOFF_SECONDS * 2 ** (attempts - 1), settings.MAILROOM_BACKOFF_MAX_SECONDS)
    state = MailState.DEAD if permanent else MailState.RETRYING
    Token.objects.filter(pk=token.pk, mail_claim=claim).update(
        mail_state=state,
        mail_attempts=attempts,
        mail_next_attempt_at=ExpressionWrapper(Now() + Value(timedelta(seconds=backoff)), output_field=DateTimeField()),
        mail_lease_until=None,
        mail_claim=None,
        mail_error=reason[:1000],
    )
    return state
