"""Claims: a run skips what another run is claiming, marks only what it still holds, renews its lease."""

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import DatabaseError, connection, transaction

from lifecycle.demo.factories import AccountFactory
from tests.support import analyze, connect, in_threads
from tokens.mailroom.claim import SentMarks, claim_batch, claim_statement, mark_failed, renew_lease
from tokens.models import MailState, Token, TokenAction
from tokens.selectors import live_token
from tokens.services import token_request_mail

pytestmark = pytest.mark.django_db(transaction=True)

ENDED = datetime(2000, 1, 1, tzinfo=UTC)


def lease_runs_out(claim) -> None:
    """What time does to a lease: the database's ends (another run may then claim), and so does ours."""
    Token.objects.filter(mail_claim=claim.id).update(mail_lease_until=ENDED)
    claim.lease_ends = 0.0


def test_a_claim_skips_rows_another_run_is_claiming_instead_of_waiting_for_them(psql):
    """A second run claims the rest at once while the first still holds its rows' locks."""
    held, free = (live_token(account=AccountFactory()) for _ in range(2))
    claimed = []
    with psql.transaction():
        psql.execute("SELECT 1 FROM tokens WHERE id = %s FOR UPDATE", [held.pk])
        (runner,), _ = in_threads(lambda: claimed.extend(claim_batch(10)[1]))
        # Holding the lock until the claim returns: a claim that waited for it would never return.
        with connect() as watcher:
            while runner.is_alive():
                runner.join(0.05)
                waiting = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND datname = current_database()"
                ).fetchone()[0]
                watcher.rollback()
                assert waiting == 0, "the claim waits for a row another run holds"
    assert [token.pk for token in claimed] == [free.pk]


def test_tokens_made_together_are_claimed_in_the_order_they_were_made():
    """Tokens made in one transaction share their expiry (now() is the transaction's start): the older goes
    first, so a batch goes out in one order every time, whatever order the rows are read in (here the
    accounts', which is the reverse)."""
    accounts = AccountFactory.create_batch(4)
    first, mailed = claim_batch(10)
    marks = SentMarks(first)
    for token in mailed:
        marks.mark(token)
    marks.collect()
    with transaction.atomic():  # asking again after a mail replaces the token
        for account in reversed(accounts):
            token_request_mail(identifier=account.login, action=TokenAction.ACTIVATION, actor=None)
    made = [live_token(account=account).pk for account in reversed(accounts)]
    _, claimed = claim_batch(10)
    assert [token.pk for token in claimed] == made


def test_a_run_whose_lease_ran_out_cannot_mark_a_token_another_run_took_over():
    token = live_token(account=AccountFactory())
    first, _ = claim_batch(10)
    lease_runs_out(first)
    second, (taken,) = claim_batch(10)
    assert taken.pk == token.pk
    late = SentMarks(first)
    late.mark(token)
    late.collect()
    assert (late.matched, late.unmatched) == (0, 1)
    assert mark_failed(token, claim=first, reason="421 try later", permanent=False) is None
    token.refresh_from_db()
    assert (token.mail_state, token.mail_claim, token.mail_attempts) == (MailState.QUEUED, second.id, 0)
    holder = SentMarks(second)
    holder.mark(token)
    holder.collect()
    assert (holder.matched, holder.unmatched) == (1, 0)
    token.refresh_from_db()
    assert token.mail_state == MailState.SENT


def test_a_sent_mark_is_applied_without_waiting_and_its_answer_read_before_the_connection_is_used_again():
    tokens = [live_token(account=AccountFactory()) for _ in range(2)]
    claim, batch = claim_batch(10)
    marks = SentMarks(claim)
    for token in batch:
        marks.mark(token)  # the first mark's answer is read before the second is sent
    marks.collect()
    marks.collect()  # nothing left to read: a no-op
    assert (marks.matched, marks.unmatched) == (2, 0)
    assert set(Token.objects.filter(pk__in=[t.pk for t in tokens]).values_list("mail_state", flat=True)) == {
        MailState.SENT
    }
    assert Token.objects.count() == 2  # the connection is in step again: Django's next query works


def test_the_sent_mark_is_prepared_once_for_the_run_and_sent_by_name():
    """Parsed and planned once per connection, not for each e-mail."""
    for _ in range(3):
        live_token(account=AccountFactory())
    claim, batch = claim_batch(10)
    marks = SentMarks(claim)
    for token in batch:
        marks.mark(token)
    marks.collect()
    assert marks.matched == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement = %s", [SentMarks.STATEMENT])
        assert cursor.fetchone()[0] == 1


def test_a_refused_sent_mark_raises_when_its_answer_is_read():
    token = live_token(account=AccountFactory())
    claim, _ = claim_batch(10)
    marks = SentMarks(claim)
    with connection.cursor() as cursor:
        cursor.execute("SET default_transaction_read_only = on")
    try:
        marks.mark(token)
        with pytest.raises(DatabaseError, match="read-only transaction"):
            marks.collect()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET default_transaction_read_only")
    token.refresh_from_db()
    assert token.mail_state == MailState.QUEUED


def test_renewing_keeps_the_tokens_this_run_holds_and_drops_those_taken_over():
    kept, lost = (live_token(account=AccountFactory()) for _ in range(2))
    first, batch = claim_batch(10)
    Token.objects.filter(pk=lost.pk).update(mail_lease_until=ENDED)
    second, (taken,) = claim_batch(10)
    assert taken.pk == lost.pk
    Token.objects.filter(pk=kept.pk).update(mail_lease_until=ENDED)  # ran out, but nobody took it
    assert renew_lease(first, batch) == {kept.pk}
    assert first.running_out() is False
    assert claim_batch(10)[1] == []  # the renewed lease holds again


def test_a_claim_leases_its_batch_and_reads_it_with_its_accounts_in_two_statements(django_assert_num_queries):
    """Locked, leased and read back in one statement, the accounts in a second, whatever the batch's size."""
    assert claim_batch(10)[1] == []  # nothing due: the one statement
    accounts = AccountFactory.create_batch(3)
    with django_assert_num_queries(2):
        claim, batch = claim_batch(10)
        logins = [token.account.login for token in batch]
    assert sorted(logins) == sorted(account.login for account in accounts)
    assert set(Token.objects.values_list("mail_claim", flat=True)) == {claim.id}
    assert all(token.mail_claim == claim.id and token.mail_lease_until is not None for token in batch)


def test_a_claim_reads_its_accounts_by_one_array_of_ids_whatever_the_batchs_size(django_assert_num_queries):
    """An IN list of a parameter each would be parsed afresh by psycopg for each claim (it keeps its parsing
    of statements of up to 50 parameters only); one array keeps the statement the same for any batch."""
    accounts = AccountFactory.create_batch(60)
    claim_statement(100)  # compiled once, in a transaction of its own
    with django_assert_num_queries(2) as queries:
        _, batch = claim_batch(100)
        emails = {token.account_id: token.account.email for token in batch}
    assert emails == {account.pk: account.email for account in accounts}
    read = queries.captured_queries[1]["sql"]
    assert "= ANY(" in read and " IN (" not in read, read


def test_a_claim_reads_its_batch_in_order_from_the_index_and_finds_each_token_by_its_key(psql):
    """Tokens made in one transaction share their expiry; the claim still reads only its own batch, in its
    order, from tokens_due_mail_idx (expires_at, id), where an index on the expiry alone had it read and
    sort every token of that expiry for each batch; and it updates the batch found by key, where a join
    to the batch had the planner read the whole table."""
    psql.execute(
        "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
        " FROM generate_series(1, 2000) g"
    )
    analyze("accounts")
    analyze("tokens")
    statement, due_params = claim_statement(100)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", [timedelta(minutes=5), uuid.uuid4(), *due_params])
        plan = json.dumps(cursor.fetchone()[0])
        transaction.set_rollback(True)
    assert '"Index Name": "tokens_due_mail_idx"' in plan
    assert '"Node Type": "Incremental Sort"' not in plan
    assert plan.count('"Node Type": "Sort"') == 1  # the batch's 100 rows, read back in order
    assert '"Node Type": "Seq Scan"' not in plan
