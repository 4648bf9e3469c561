"""Reads of the mail queue and the mail runs (tokens/selectors.py): the figures the dashboard and
/metrics both show, each read by one function."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite
from tests.support import analyze, expire
from tokens.models import Job, JobType, MailState, Token, TokenState
from tokens.selectors import (
    MailRunCounts,
    due_mail_count,
    last_mail_run,
    live_token,
    mail_count,
    mail_run_counts,
    oldest_due_mail_issued_at,
    tokens_in_state,
    unfinished_mail_runs_count,
)

pytestmark = pytest.mark.django_db


def in_mail_state(state: MailState, *, next_attempt_in: timedelta = timedelta(0)):
    """A new account's activation e-mail in ``state``, its next attempt ``next_attempt_in`` from now."""
    token = live_token(account=AccountFactory())
    Token.objects.filter(pk=token.pk).update(mail_state=state, mail_next_attempt_at=timezone.now() + next_attempt_in)
    return token


class TestMailQueue:
    def test_due_mail_is_counted_without_mail_waiting_out_a_backoff_or_given_up(self):
        AccountFactory.create_batch(2)
        in_mail_state(MailState.RETRYING, next_attempt_in=timedelta(minutes=5))
        in_mail_state(MailState.DEAD)
        assert due_mail_count(up_to=100) == 2

    def test_due_mail_is_counted_up_to_the_limit_only(self):
        AccountFactory.create_batch(3)
        assert due_mail_count(up_to=2) == 2

    def test_the_oldest_due_mail_is_the_one_issued_first(self):
        older, newer = live_token(account=AccountFactory()), live_token(account=AccountFactory())
        with transaction.atomic(), history_rewrite():
            earlier = {
                "created_at": F("created_at") - timedelta(minutes=5),
                "expires_at": F("expires_at") - timedelta(minutes=5),
            }
            Token.objects.filter(pk=older.pk).update(**earlier)
        older.refresh_from_db()
        assert older.created_at < newer.created_at
        assert oldest_due_mail_issued_at() == older.created_at

    def test_no_due_mail_has_no_oldest(self):
        in_mail_state(MailState.DEAD)
        assert oldest_due_mail_issued_at() is None

    def test_mail_is_counted_by_its_state_up_to_the_limit(self):
        for _ in range(3):
            in_mail_state(MailState.DEAD)
        in_mail_state(MailState.RETRYING, next_attempt_in=timedelta(minutes=5))
        assert mail_count(MailState.DEAD, up_to=100) == 3
        assert mail_count(MailState.DEAD, up_to=2) == 2
        assert mail_count(MailState.RETRYING, up_to=100) == 1

    @pytest.mark.parametrize(
        ("state", "index"), [(MailState.RETRYING, "retrying_mail_idx"), (MailState.DEAD, "dead_mail_idx")]
    )
    def test_retrying_and_dead_mail_are_counted_from_their_own_index(self, sql, state, index):
        """Not through the due-mail index, past every queued token (tokens/sql/0029_admin_reads.sql);
        plan read with seq scans off, as on a large table. A thousand queued tokens fill the due-mail index
        as a real queue would: with one token each, the two indexes cost the same to the planner."""
        sql(
            "INSERT INTO accounts (email, login) SELECT 'queued' || g || '@example.com', 'queued' || g"
            " FROM generate_series(1, 1000) g"
        )
        in_mail_state(state)
        sql("SET LOCAL enable_seqscan = off")
        with CaptureQueriesContext(connection) as queries:
            assert mail_count(state, up_to=100) == 1
        (query,) = [q["sql"] for q in queries.captured_queries]
        plan = "\n".join(row for (row,) in sql(f"EXPLAIN {query}"))
        assert index in plan, plan


class TestTokenStates:
    @pytest.mark.django_db(transaction=True)
    def test_valid_tokens_are_read_from_the_index_of_open_tokens_by_expiry(self, sql):
        """Not by reading every token, most of them expired long ago, for the few valid ones: the
        index on the expiry of tokens neither used nor replaced (tokens/sql/0029_admin_reads.sql)."""
        for account in AccountFactory.create_batch(40):
            if account.pk % 10:
                expire(live_token(account=account))
        analyze("tokens")
        query, params = tokens_in_state(Token.objects.order_by(), TokenState.VALID).query.sql_with_params()
        sql("SET enable_seqscan = off")
        try:
            plan = "\n".join(row for (row,) in sql(f"EXPLAIN {query}", params))
        finally:
            sql("RESET enable_seqscan")
        assert "tokens_open_expires_idx" in plan, plan


class TestMailRuns:
    @pytest.fixture
    def runs(self):
        """A run of each outcome today, two of them still running (the last returned), and one of two days ago."""
        now = timezone.now()
        mailroom = {"job_type": JobType.MAILROOM}
        Job.objects.create(**mailroom, claimed=3, sent=3, finished_at=now)
        Job.objects.create(**mailroom, claimed=2, sent=1, failed=1, finished_at=now)
        Job.objects.create(**mailroom, claimed=4, sent=2, error="SMTP server unreachable", finished_at=now)
        Job.objects.create(**mailroom, claimed=4, sent=1, failed=1)
        running = Job.objects.create(**mailroom, claimed=2)
        two_days_ago = now - timedelta(days=2)
        Job.objects.create(**mailroom, claimed=5, sent=5, started_at=two_days_ago)
        return running

    def test_the_runs_since_a_time_are_counted_by_outcome_with_the_mail_they_sent(self, runs):
        counts = mail_run_counts(since=timezone.now() - timedelta(hours=24))
        assert counts == MailRunCounts(runs=5, sent=7, trouble=3, ok=1, failed_mail=1, error=1, running=2)

    def test_no_run_counts_nothing(self):
        assert mail_run_counts(since=timezone.now() - timedelta(hours=24)) == MailRunCounts(0, 0, 0, 0, 0, 0, 0)

    def test_unfinished_runs_are_counted_however_long_ago_they_started(self, runs):
        assert unfinished_mail_runs_count() == 3

    def test_the_last_run_is_the_one_started_last(self, runs):
        assert last_mail_run() == runs
