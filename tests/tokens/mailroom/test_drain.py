"""A drain run against a real SMTP server on loopback: what is mailed, once, what never is, failures."""

import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.mail import EmailMessage, get_connection
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite
from tests.smtp import free_port
from tests.support import ROOT, connect_as_owner, environment, expire, mailroom_env, wait_for
from tokens.mailroom.claim import claim_batch
from tokens.mailroom.drain import DrainResult, drain
from tokens.mailroom.send import send_batch
from tokens.mailroom.wire import wire_for
from tokens.models import Job, MailState, Token, TokenAction
from tokens.selectors import live_token
from tokens.services import token_consume, token_request_mail, token_send_password_recovery

pytestmark = pytest.mark.django_db


class TestWhatIsMailed:
    def test_a_sent_token_is_marked_and_never_sent_again(self, smtp_server):
        token = live_token(account=AccountFactory())
        drain()
        assert drain().claimed == 0
        token.refresh_from_db()
        assert (token.mail_state, token.mail_attempts) == (MailState.SENT, 0)
        assert token.mailed_at is not None
        assert len(smtp_server.messages) == 1


class TestMailRunRows:
    def test_a_run_that_sent_mail_leaves_one_row_in_jobs(self, smtp_server):
        AccountFactory.create_batch(3)
        result = drain(batch_size=2)
        job = Job.objects.get()
        assert job.pk == result.job_id
        assert (job.claimed, job.sent, job.failed, job.error) == (3, 3, 0, None)
        assert job.finished_at is not None
        assert job.last_seq == max(Token.objects.values_list("pk", flat=True))

    def test_runs_over_an_empty_queue_leave_no_row(self, smtp_server):
        """An idle run leaves no row: otherwise the listener's poll every 30 s would add 80 in 8 idle
        minutes."""
        results = [drain() for _ in range(5)]
        assert not Job.objects.exists()
        assert {result.job_id for result in results} == {None}
        assert results[0].summary().startswith("mail run (no row kept: nothing to mail): claimed 0, sent 0")

    def test_a_run_that_only_skipped_expired_mail_leaves_no_row(self, smtp_server):
        """The skipped tokens record it themselves (mail_state, mail_error); the run claimed nothing."""
        expire(live_token(account=AccountFactory()))
        assert drain().expired == 1
        assert not Job.objects.exists()

    def test_a_run_has_its_row_from_its_first_claim_so_a_killed_run_is_seen(self, smtp_server):
        """The row is inserted with the first claim: while the run sends, it is there, unfinished, with
        the counts of each batch (tests/tokens/mailroom/test_drain_concurrency.py kills such a run)."""
        AccountFactory.create_batch(3)
        seen = []
        drain(batch_size=2, on_batch=lambda result: seen.append(Job.objects.values_list("finished_at", "sent").get()))
        assert seen == [(None, 2), (None, 3)]
        assert Job.objects.get().finished_at is not None

    def test_a_run_after_idle_ones_gets_a_row_of_its_own(self, smtp_server):
        drain()
        AccountFactory()
        drain()
        drain()
        assert list(Job.objects.values_list("claimed", "sent")) == [(1, 1)]


class TestWhatIsNeverMailed:
    def test_an_expired_token_is_skipped(self, smtp_server):
        token = live_token(account=AccountFactory())
        expire(token)
        assert drain().expired == 1
        token.refresh_from_db()
        assert (token.mail_state, token.mail_error) == (MailState.SKIPPED, "expired before it was mailed")
        assert smtp_server.messages == []

    def test_a_token_that_expired_while_its_batch_went_out_is_skipped_not_mailed(self, smtp_server):
        """Claimed while valid, its turn came after it expired (a slow server, a long batch): its link
        would not work, so it is not sent, and the e-mail never says it has no time left."""
        token = live_token(account=AccountFactory())
        with transaction.atomic(), history_rewrite():
            Token.objects.filter(pk=token.pk).update(expires_at=timezone.now() + timedelta(seconds=1))
        claim, batch = claim_batch(10)
        wait_for(lambda: timezone.now() > batch[0].expires_at, timeout=5, message="the token to expire")
        result = DrainResult()
        send_batch(batch, claim=claim, result=result)
        assert (result.sent, result.expired, result.lost_claims) == (0, 1, 0)
        token.refresh_from_db()
        assert (token.mail_state, token.mail_error, token.mail_claim) == (
            MailState.SKIPPED,
            "expired before it was mailed",
            None,
        )
        assert smtp_server.messages == []

    def test_a_consumed_token_is_skipped(self, smtp_server):
        token = live_token(account=AccountFactory())
        token_consume(secret=bytes(token.secret), actor=None)
        drain()
        token.refresh_from_db()
        assert (token.mail_state, token.mail_error) == (MailState.SKIPPED, "used before it was mailed")
        assert smtp_server.messages == []

    def test_a_token_used_while_a_run_held_it_is_recorded_as_sent_not_as_skipped(self, sql):
        """A run killed (or cut off from the database) between the SMTP server's acceptance and the
        sent-mark, and the person uses the e-mail before another run sends it again: only the e-mail
        carries the link, so it went out, and the record says so. Used as psql would do it."""
        held = live_token(account=AccountFactory())
        claim_batch(10)
        sql("UPDATE tokens SET consumed_at = now() WHERE id = %s", [held.pk])
        held.refresh_from_db()
        assert (held.mail_state, held.mail_error) == (
            MailState.SENT,
            "used while its mail run held it: its e-mail went out, its sent-mark was lost",
        )
        assert drain().claimed == 0

    def test_a_replaced_token_is_skipped_and_only_the_newest_is_mailed(self, smtp_server, sql):
        account = AccountFactory()
        old = live_token(account=account)
        sql("INSERT INTO tokens (account, action) VALUES (%s, 'activation')", [account.pk])
        drain()
        old.refresh_from_db()
        assert old.mail_state == MailState.SKIPPED
        assert smtp_server.token_ids() == [live_token(account=account).pk]

    def test_a_recovery_token_of_an_account_suspended_since_is_not_mailed(self, smtp_server):
        account = AccountFactory(active=True)
        token = token_send_password_recovery(account=account, actor=None)
        account_suspend(account=account, actor=None)
        assert drain().claimed == 0
        token.refresh_from_db()
        assert token.mail_state == MailState.QUEUED
        assert smtp_server.messages == []

    def test_a_token_of_a_suspended_account_is_not_mailed(self, smtp_server):
        account = AccountFactory()
        account_suspend(account=account, actor=None)
        assert drain().claimed == 0
        assert live_token(account=account).mail_state == MailState.QUEUED
        assert smtp_server.messages == []


# Addresses stored before the database refused them (accounts/sql/0007_address_rules.sql): the
# mailer cannot send to them (the idna codec; an encoded word decoding to CR/LF).
UNSENDABLE_ADDRESSES = ["poison@" + "x" * 64 + ".example.com", "=?utf-8?q?a=0D=0Ab?=@example.com"]


def insert_stored_before_the_rule(email: str) -> int:
    """An account with an address the rule refuses, as an older database may still hold (the
    owner alone can lift the rule, for this one transaction)."""
    with connect_as_owner() as owner:
        owner.execute("ALTER TABLE accounts DISABLE TRIGGER before_account_validate")
        (account_id,) = owner.execute(
            "INSERT INTO accounts (email, login) VALUES (%s, 'poison') RETURNING id", [email]
        ).fetchone()
        owner.execute("ALTER TABLE accounts ENABLE TRIGGER before_account_validate")
    return account_id


@pytest.mark.django_db(transaction=True)
class TestUnsendableAddresses:
    @pytest.mark.parametrize("email", UNSENDABLE_ADDRESSES, ids=["long-label", "encoded-word"])
    def test_one_unsendable_address_fails_only_its_own_token(self, smtp_server, email):
        """The attack: a bulk sign-up of 51 with one poison address, which would abort every run and
        let the other activation e-mails expire unsent. The poison is dead and the rest go out."""
        AccountFactory.create_batch(25)
        poison = live_token(account=insert_stored_before_the_rule(email))
        AccountFactory.create_batch(25)
        result = drain(batch_size=20)
        assert (result.sent, result.dead, result.retrying, result.error) == (50, 1, 0, None)
        poison.refresh_from_db()
        assert poison.mail_state == MailState.DEAD
        assert poison.mail_error.startswith("cannot be sent to this address: ")
        assert poison.pk not in smtp_server.token_ids()
        assert drain().claimed == 0  # and it is not claimed first again by every later run


class TestFailures:
    def test_a_550_answer_makes_the_mail_dead_with_the_reason(self, smtp_server):
        smtp_server.handler.refuse_recipients = "550 5.1.1 No such mailbox"
        token = live_token(account=AccountFactory())
        result = drain()
        assert (result.dead, result.error) == (1, None)
        token.refresh_from_db()
        assert token.mail_state == MailState.DEAD
        assert token.mail_error == "550 5.1.1 No such mailbox"
        assert Job.objects.get(pk=result.job_id).failed == 1

    def test_a_4xx_answer_is_retried_later(self, smtp_server):
        smtp_server.handler.refuse_recipients = "451 4.3.0 Try again later"
        token = live_token(account=AccountFactory())
        assert drain().retrying == 1
        token.refresh_from_db()
        assert (token.mail_state, token.mail_attempts) == (MailState.RETRYING, 1)
        assert token.mail_next_attempt_at > token.created_at
        assert drain().claimed == 0  # not before its backoff

    def test_a_mail_that_keeps_failing_is_dead_after_the_last_attempt(self, smtp_server, settings):
        settings.MAILROOM_MAX_ATTEMPTS = 2
        smtp_server.handler.refuse_recipients = "451 4.3.0 Try again later"
        token = live_token(account=AccountFactory())
        drain()
        Token.objects.filter(pk=token.pk).update(mail_next_attempt_at=token.created_at)
        assert drain().dead == 1
        token.refresh_from_db()
        assert token.mail_state == MailState.DEAD
        assert token.mail_error == "gave up after 2 failed attempts: 451 4.3.0 Try again later"

    def test_asking_again_after_a_mail_sends_a_new_token_with_its_whole_retry_budget(self, smtp_server, settings):
        """A mailed token keeps only digests of its link and code, so asking again mails a new token (the old
        one replaced), never the same plain values twice; a failure after that is the new token's first."""
        settings.MAILROOM_MAX_ATTEMPTS = 2
        account = AccountFactory()
        first = live_token(account=account)
        for _ in range(3):
            token_request_mail(identifier=account.login, action=TokenAction.ACTIVATION, actor=None)
            assert drain().sent == 1
        assert len(set(smtp_server.token_ids())) == 3
        first.refresh_from_db()
        assert first.superseded_at is not None and first.mail_state == MailState.SENT
        smtp_server.handler.refuse_recipients = "451 4.3.0 Try again later"
        token_request_mail(identifier=account.login, action=TokenAction.ACTIVATION, actor=None)
        assert drain().retrying == 1
        token = live_token(account=account)
        assert (token.mail_state, token.mail_attempts) == (MailState.RETRYING, 1)

    @pytest.mark.parametrize(
        "answer, state",
        [("554 5.6.0 Message refused", MailState.DEAD), ("452 4.3.1 Out of storage", MailState.RETRYING)],
    )
    def test_a_message_refused_after_its_body_fails_alone_and_the_next_goes_out(self, smtp_server, answer, state):
        """A message's last answer is read after the next message is built (tokens/mailroom/wire.py):
        a refusal there is still its own token's, and the batch goes on."""
        first, refused, last = (live_token(account=AccountFactory()) for _ in range(3))
        smtp_server.handler.refuse_messages_to = {refused.account.email: answer}
        result = drain()
        assert (result.sent, result.failed, result.error) == (2, 1, None)
        refused.refresh_from_db()
        assert (refused.mail_state, refused.mail_error) == (state, answer)
        assert smtp_server.token_ids() == [first.pk, last.pk]

    @pytest.mark.parametrize("how", ["hang-up", "421"])
    def test_a_connection_lost_after_a_body_keeps_that_message_and_the_rest_for_later(self, smtp_server, how):
        tokens = [live_token(account=AccountFactory()) for _ in range(4)]
        if how == "hang-up":
            smtp_server.handler.hang_up_on_messages_to = {tokens[1].account.email}
        else:
            smtp_server.handler.refuse_messages_to = {tokens[1].account.email: "421 4.3.2 Going down"}
        result = drain()
        assert result.error.startswith("SMTP connection lost: SMTPServerDisconnected")
        assert (result.sent, result.retrying, result.dead) == (1, 3, 0)
        states = dict(Token.objects.values_list("pk", "mail_state"))
        assert states == {tokens[0].pk: MailState.SENT} | {token.pk: MailState.RETRYING for token in tokens[1:]}
        assert smtp_server.token_ids() == [tokens[0].pk]

    def test_a_line_of_the_body_starting_with_a_dot_arrives_as_written(self, smtp_server):
        """Such a line gets a second dot on the wire (RFC 5321 4.5.2); a lone dot would end the message."""
        body = ".hidden\n..two\n.\nend\n"
        backend = get_connection()
        backend.open()
        wire = wire_for(backend)
        wire.start(
            wire.prepare(EmailMessage("dots", body, "from@example.com", ["to@example.com"])), before_body=lambda: None
        )
        wire.finish()
        backend.close()
        (received,) = smtp_server.messages
        assert received.get_content().replace("\r\n", "\n") == body

    def test_an_unreachable_server_fails_the_run_and_keeps_the_mail_for_later(self, settings):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()
        token = live_token(account=AccountFactory())
        result = drain()
        assert result.error.startswith("SMTP server unreachable: ConnectionRefusedError")
        token.refresh_from_db()
        assert token.mail_state == MailState.RETRYING
        assert token.mail_error.startswith("SMTP server unreachable")
        assert Job.objects.get(pk=result.job_id).error == result.error


class TestDrainCommand:
    def test_prints_what_it_did(self, smtp_server, capsys):
        AccountFactory.create_batch(2)
        call_command("drain_mailroom")
        assert "claimed 2, sent 2, retrying 0, dead 0" in capsys.readouterr().out

    def test_exits_non_zero_when_the_run_failed(self, settings):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()
        AccountFactory()
        with pytest.raises(CommandError, match="failed: SMTP server unreachable"):
            call_command("drain_mailroom")

    @pytest.mark.parametrize("size", ["0", "-3", "99999999999999999999"])
    def test_refuses_a_bad_batch_size(self, size):
        """One sentence for each; a huge one would otherwise be a DataError (the LIMIT would overflow
        bigint)."""
        with pytest.raises(CommandError, match="--batch-size must be between 1 and 10000"):
            call_command("drain_mailroom", "--batch-size", size)

    @pytest.mark.django_db(transaction=True)
    def test_mails_as_cron_runs_it_without_importing_the_sites_other_pages(self, smtp_server):
        """Started every minute, the command skips the system checks and reverses the e-mails' pages from
        tokens/urls.py (tokens/mailroom/render.py, TOKEN_URLS): the site's URLconf, which imports every
        other page, is never loaded (half of its start-up)."""
        AccountFactory()
        as_manage_py_runs_it = (
            "import sys; from django.core.management import execute_from_command_line;"
            " execute_from_command_line(['manage.py', 'drain_mailroom']);"
            " print('site URLconf loaded:', 'lifecycle.urls' in sys.modules)"
        )
        run = subprocess.run(
            [sys.executable, "-c", as_manage_py_runs_it],
            cwd=ROOT,
            env=environment(DJANGO_SETTINGS_MODULE="lifecycle.settings", **mailroom_env(smtp_server)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "sent 1," in run.stdout, run.stdout + run.stderr
        assert len(smtp_server.messages) == 1
        assert "site URLconf loaded: False" in run.stdout
