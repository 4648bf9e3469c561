"""Claims: a run leases a batch of due tokens, then gives each back marked sent or failed.

Only the run holding a token's claim may mark it: a run whose lease ended finds its marks matching
nothing, and the run that took the token over decides. A run renews its lease while it still has
tokens to send (a batch may take longer than one lease), so a slow server never lets two runs hold
one token.
"""

import functools
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper, Value
from django.db.models.functions import Now

from accounts.models import Account
from platform_events.db.unawaited import UnawaitedStatement
from platform_events.quantities import quantity
from tokens.digests import code_digest, current_key_id
from tokens.models import MailState, Token
from tokens.selectors import due_mail


@dataclass
class Claim:
    id: uuid.UUID
    # time.monotonic() by which the lease ends at the latest: read before the database starts it.
    lease_ends: float

    def running_out(self) -> bool:
        """Whether one more message could outlast the lease (settings.MAILROOM_MESSAGE_SECONDS), counting
        the answer to the message before it, read after this check (tokens/mailroom/wire.py)."""
        return time.monotonic() + settings.MAILROOM_MESSAGE_SECONDS + settings.EMAIL_TIMEOUT >= self.lease_ends


def claim_batch(size: int) -> tuple[Claim, list[Token]]:
    """Lease up to ``size`` due tokens to this run, soonest to expire first (the older first between equals,
    so a batch goes out in one order every time); rows another run is claiming are skipped, not waited for.
    One statement (locked, leased and read back) and one read of their accounts: outside a transaction,
    two round trips, whatever the batch's size."""
    claim = Claim(id=uuid.uuid4(), lease_ends=time.monotonic() + settings.MAILROOM_LEASE_SECONDS)
    statement, due_params = claim_statement(size)
    batch = list(
        Token.objects.raw(statement, [timedelta(seconds=settings.MAILROOM_LEASE_SECONDS), claim.id, *due_params])
    )
    # The ids as one array, not an IN list of a parameter each (in_bulk(), a prefetch): psycopg parses a
    # statement of over 50 parameters afresh each time, 15-20 µs a token of a claim of 100.
    accounts = {
        account.pk: account
        for account in Account.objects.raw(accounts_statement(), [list({token.account_id for token in batch})])
    }
    for token in batch:
        token.account = accounts[token.account_id]
    return claim, batch


@functools.cache
def accounts_statement() -> str:
    """The claimed tokens' accounts by one array of ids: the model's columns, as in_bulk() reads them."""
    columns = ", ".join(connection.ops.quote_name(field.column) for field in Account._meta.concrete_fields)
    return f"SELECT {columns} FROM {Account._meta.db_table} WHERE id = ANY(%s)"


@functools.cache
def claim_statement(size: int) -> tuple[str, tuple]:
    """The claim (its lease and claim id as its first two parameters) and the parameters of its due-mail
    part: due_mail()'s SQL, compiled once (its times are the database's, read when it runs)."""
    due = due_mail().select_for_update(skip_locked=True, of=("self",)).order_by("expires_at", "id").values("id")
    with transaction.atomic():  # Django writes FOR UPDATE only inside one; compiling sends nothing
        due_sql, due_params = due[:size].query.sql_with_params()
    # ARRAY(): the ids as one value, each token then found by its key (joined to them instead, the planner
    # may read the whole table to find the batch).
    return (
        "WITH claimed AS ("
        "  UPDATE tokens SET mail_lease_until = now() + %s, mail_claim = %s"
        f"  WHERE id = ANY(ARRAY({due_sql})) RETURNING *"
        ") SELECT * FROM claimed ORDER BY expires_at, id",
        due_params,
    )


def renew_lease(claim: Claim, tokens: list[Token]) -> set[int]:
    """Lease ``tokens`` for another MAILROOM_LEASE_SECONDS, those this run still holds; returns their ids
    (a token missing was taken over by another run after this run's lease ran out: not ours to send)."""
    lease_ends = time.monotonic() + settings.MAILROOM_LEASE_SECONDS
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tokens SET mail_lease_until = now() + %s WHERE id = ANY(%s) AND mail_claim = %s RETURNING id",
            [timedelta(seconds=settings.MAILROOM_LEASE_SECONDS), [token.pk for token in tokens], claim.id],
        )
        held = {row[0] for row in cursor.fetchall()}
    claim.lease_ends = lease_ends
    return held


class SentMarks:
    """Marks tokens mailed without waiting for the database's answer: the next message goes out while
    PostgreSQL applies the mark (platform_events/db/unawaited.py). The mark is on its way before
    ``mark()`` returns, so a run killed later still marks its token, and a killed run re-sends at most
    the one message in flight. ``collect()`` reads the answer; anything else using the
    connection calls it first. The statement is prepared once per connection, not parsed and planned
    for each e-mail."""

    # mail_attempts counts failures only: a token sent again on request keeps its whole retry budget.
    # The same statement empties the token's secret and code and keeps the code's digest
    # (tokens/sql/0015_digests.sql): a row that is a mailed token holds no working credential.
    STATEMENT = "SELECT * FROM tokens_mark_sent($1, $2, $3, $4)"

    def __init__(self, claim: Claim):
        self.claim = claim
        self.matched = 0
        # Marks that matched nothing: the run's lease ran out and another run took the token over.
        self.unmatched = 0
        self._statement = UnawaitedStatement(prepared=True)

    def mark(self, token: Token) -> None:
        self.collect()
        self._statement.send(self.STATEMENT, self.parameters(token))

    def parameters(self, token: Token) -> list[str]:
        key_id = current_key_id()
        digest = code_digest(token.pk, token.code, key_id=key_id)
        return [str(token.pk), str(self.claim.id), "\\x" + digest.hex(), key_id]

    def collect(self) -> None:
        """Read the answer to the last mark, if any is due; raises what the statement raised."""
        rows = self._statement.collect()
        if rows == 1:
            self.matched += 1
        elif rows is not None:
            self.unmatched += 1


def mark_failed(token: Token, *, claim: Claim, reason: str, permanent: bool) -> MailState | None:
    """Mark a failed attempt: retrying after a backoff, or dead when permanent or at the
    MAILROOM_MAX_ATTEMPTS-th failure. None when this run no longer holds the token's claim (the mark
    matched nothing)."""
    attempts = token.mail_attempts + 1
    if not permanent and attempts >= settings.MAILROOM_MAX_ATTEMPTS:
        permanent, reason = True, f"gave up after {quantity(attempts, 'failed attempt')}: {reason}"
    backoff = min(settings.MAILROOM_BACKOFF_SECONDS * 2 ** (attempts - 1), settings.MAILROOM_BACKOFF_MAX_SECONDS)
    state = MailState.DEAD if permanent else MailState.RETRYING
    matched = Token.objects.filter(pk=token.pk, mail_claim=claim.id).update(
        mail_state=state,
        mail_attempts=attempts,
        mail_next_attempt_at=ExpressionWrapper(Now() + Value(timedelta(seconds=backoff)), output_field=DateTimeField()),
        mail_lease_until=None,
        mail_claim=None,
        mail_error=reason[:1000],
    )
    return state if matched else None


def mark_expired(token: Token, *, claim: Claim) -> bool:
    """Give back a claimed token that expired before its turn in the batch came: skipped, never sent,
    since its link and code no longer work. False when this run no longer holds its claim."""
    return (
        Token.objects.filter(pk=token.pk, mail_claim=claim.id).update(
            mail_state=MailState.SKIPPED,
            mail_error="expired before it was mailed",
            mail_lease_until=None,
            mail_claim=None,
        )
        == 1
    )
