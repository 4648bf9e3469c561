"""Nothing lost, nothing doubled: the mailroom with several real processes, out-of-order commits,
a run killed mid-batch, an SMTP server that comes back."""

import signal
from collections import Counter

import pytest

from accounts.services import account_provision
from tests.smtp import SMTPServer, free_port
from tests.support import (
    connect,
    drain_until_every_token_is_mailed,
    mailroom_env,
    manage,
    start_manage,
    wait_for,
)
from tokens.mailroom.drain import drain
from tokens.models import Job, JobType, MailState, Token

pytestmark = pytest.mark.django_db(transaction=True)


def sign_up_many(psql, count: int) -> None:
    psql.execute(
        "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g FROM generate_series(1, %s) g",
        [count],
    )


def kill_a_drain_midway(psql, smtp, *, tokens: int, batch_size: int, after: int) -> dict:
    """Sign up ``tokens`` accounts, start a drain and SIGKILL it once ``after`` e-mails went out;
    return the environment a next run needs (an 8 s lease, so the killed run's batch frees soon)."""
    sign_up_many(psql, tokens)
    env = mailroom_env(smtp, MAILROOM_LEASE_SECONDS="8", EMAIL_TIMEOUT="1")
    run = start_manage("drain_mailroom", "--batch-size", str(batch_size), **env)
    wait_for(lambda: len(smtp.messages) >= after, timeout=60, message=f"{after} e-mails before the kill")
    run.send_signal(signal.SIGKILL)
    run.wait()
    return env


def test_four_concurrent_drains_mail_every_token_exactly_once(psql):
    smtp = SMTPServer().start()
    try:
        sign_up_many(psql, 2000)
        runs = [start_manage("drain_mailroom", "--batch-size", "50", **mailroom_env(smtp)) for _ in range(4)]
        outputs = [run.communicate(timeout=300)[0] for run in runs]
        assert [run.returncode for run in runs] == [0, 0, 0, 0], outputs
        counts = Counter(smtp.token_ids())
    finally:
        smtp.stop()
    assert len(counts) == 2000
    assert set(counts.values()) == {1}
    assert set(counts) == set(Token.objects.values_list("pk", flat=True))
    assert set(Token.objects.values_list("mail_state", flat=True)) == {MailState.SENT}
    assert sum(int(out.rsplit("claimed ", 1)[1].split(",")[0]) for out in outputs) == 2000


def test_a_token_committed_late_behind_a_higher_id_is_still_mailed(psql, smtp_server):
    """A drain by cursor (the highest id mailed so far) would never mail it (docs/decisions.md,
    "The mail queue has no cursor")."""
    with connect() as late:
        late.execute("INSERT INTO accounts (email, login) VALUES ('late@example.com', 'late')")  # lower id, uncommitted
        psql.execute("INSERT INTO accounts (email, login) VALUES ('early@example.com', 'early')")
        first = drain()
        late.commit()
    second = drain()
    (late_token,) = Token.objects.filter(account__login="late").values_list("pk", flat=True)
    (early_token,) = Token.objects.filter(account__login="early").values_list("pk", flat=True)
    assert late_token < early_token
    assert (first.sent, second.sent) == (1, 1)
    assert smtp_server.token_ids() == [early_token, late_token]


def test_a_token_inserted_in_a_rolled_back_transaction_is_never_mailed(smtp_server):
    with connect() as session:
        session.execute("INSERT INTO accounts (email, login) VALUES ('gone@example.com', 'gone')")
        session.rollback()
    assert drain().claimed == 0
    assert smtp_server.messages == []


def test_a_drain_killed_mid_batch_loses_nothing_and_doubles_at_most_the_one_in_flight(psql):
    smtp = SMTPServer().start()
    smtp.handler.delay = 0.02
    try:
        env = kill_a_drain_midway(psql, smtp, tokens=200, batch_size=50, after=30)
        # A new run picks up what the killed one left: first what nobody claimed, then, once the
        # killed run's lease has ended, the rest of its batch.
        counts = drain_until_every_token_is_mailed(smtp, env, 200)
    finally:
        smtp.stop()
    assert len(counts) == 200
    assert sum(1 for n in counts.values() if n > 1) <= 1
    assert max(counts.values()) <= 2
    assert set(Token.objects.values_list("mail_state", flat=True)) == {MailState.SENT}


def test_a_drain_killed_with_a_message_in_flight_sends_only_that_one_again(psql):
    """The moment the overlapped drain is most exposed (tokens/mailroom/wire.py): the server has a
    message's body and no answer has gone back, and the sent-mark of the message before it was written
    to PostgreSQL without waiting (SentMarks). That mark still lands: only the message in flight is
    sent twice."""
    smtp = SMTPServer().start()
    try:
        sign_up_many(psql, 60)
        env = mailroom_env(smtp, MAILROOM_LEASE_SECONDS="8", EMAIL_TIMEOUT="1")
        run = start_manage("drain_mailroom", "--batch-size", "50", **env)
        smtp.handler.before_answer = lambda number: number == 30 and run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
        assert run.returncode == -signal.SIGKILL
        smtp.handler.before_answer = None
        in_flight = smtp.token_ids()[29]
        counts = drain_until_every_token_is_mailed(smtp, env, 60)
    finally:
        smtp.stop()
    assert {token: n for token, n in counts.items() if n > 1} == {in_flight: 2}
    assert set(Token.objects.values_list("mail_state", flat=True)) == {MailState.SENT}


def test_a_killed_runs_row_keeps_its_counts_and_the_next_run_closes_it(psql):
    """A run killed mid-way keeps the counts of what it sent in its jobs row (not 0), and the next run
    closes the row."""
    smtp = SMTPServer().start()
    smtp.handler.delay = 0.02
    try:
        kill_a_drain_midway(psql, smtp, tokens=100, batch_size=10, after=35)
    finally:
        smtp.stop()
    killed = Job.objects.get()
    assert killed.finished_at is None and killed.sent >= 30 and killed.claimed >= killed.sent
    # Time passes: no progress for longer than two leases.
    psql.execute(
        "UPDATE jobs SET progress_at = progress_at - interval '1 hour', started_at = started_at - interval '1 hour'"
    )
    drain()
    killed.refresh_from_db()
    assert killed.finished_at is not None and killed.sent >= 30
    assert killed.error.startswith("stopped before it finished")


def test_a_running_run_is_not_closed_by_another():
    running = Job.objects.create(job_type=JobType.MAILROOM)
    drain()
    running.refresh_from_db()
    assert running.finished_at is None and running.error is None


def test_a_batch_that_outlasts_its_lease_renews_it_and_no_second_run_takes_it_over(psql):
    """The attack: a slow server (here 0.25 s a message) and a batch longer than the lease; without the
    renewal, a second run started once the first lease would have ended would find the batch free and
    mail it again."""
    smtp = SMTPServer().start()
    smtp.handler.delay = 0.25
    try:
        sign_up_many(psql, 48)  # 12 s of sending, one batch, an 8 s lease
        env = mailroom_env(smtp, MAILROOM_LEASE_SECONDS="8", EMAIL_TIMEOUT="1")
        first = start_manage("drain_mailroom", "--batch-size", "48", **env)
        # 36 accepted: at least 9 s since the lease began, so an unrenewed lease has ended.
        wait_for(lambda: len(smtp.messages) >= 36, timeout=60, message="36 e-mails from the first run")
        second = manage("drain_mailroom", **env)
        first_output = first.communicate(timeout=60)[0]
        counts = Counter(smtp.token_ids())
    finally:
        smtp.stop()
    assert "claimed 0," in second.stdout, second.stdout
    assert (first.returncode, "claimed 48, sent 48," in first_output) == (0, True), first_output
    assert len(counts) == 48 and set(counts.values()) == {1}


def test_mail_goes_out_after_the_backoff_when_the_smtp_server_comes_back(settings):
    port = free_port()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.MAILROOM_BACKOFF_SECONDS = 1
    account = account_provision(email="jane@example.com", login="jane", actor=None)
    refused = drain()
    assert refused.error.startswith("SMTP server unreachable")
    assert Token.objects.get(account=account).mail_state == MailState.RETRYING
    smtp = SMTPServer(port=port).start()
    try:
        wait_for(lambda: drain().sent, timeout=30, interval=0.2, message="the retry after the backoff")
        assert len(smtp.messages) == 1
    finally:
        smtp.stop()
    token = Token.objects.get(account=account)
    assert (token.mail_state, token.mail_attempts, token.mail_error) == (MailState.SENT, 1, None)
