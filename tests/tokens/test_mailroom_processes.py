"""Nothing lost, nothing doubled: the mailroom with several real processes, out-of-order commits,
a run killed mid-batch, an SMTP server that comes back, and the LISTEN wake-up."""

import importlib
import signal
from collections import Counter

import pytest

from accounts.services import account_provision
from tests.conftest import connect
from tests.processes import database_url_for_tests, manage, start_manage, wait_for
from tests.smtp import SMTPServer, free_port
from tokens.mailroom.drain import drain
from tokens.models import MailState, Token

pytestmark = pytest.mark.django_db(transaction=True)
add_schedule = importlib.import_module("tokens.migrations.0003_mailroom_schedule").add_schedule


def sign_up_many(psql, count: int) -> None:
    psql.execute(
        "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g FROM generate_series(1, %s) g",
        [count],
    )


def drain_env(smtp: SMTPServer, **extra) -> dict:
    return {"DATABASE_URL": database_url_for_tests(), "EMAIL_URL": smtp.url, **extra}


def test_four_concurrent_drains_mail_every_token_exactly_once(psql):
    smtp = SMTPServer().start()
    try:
        sign_up_many(psql, 2000)
        runs = [start_manage("drain_mailroom", "--batch-size", "50", **drain_env(smtp)) for _ in range(4)]
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
    """The seed's cursor never mailed it (README, "What differs from the seed")."""
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
        sign_up_many(psql, 200)
        env = drain_env(smtp, MAILROOM_LEASE_SECONDS="3", EMAIL_TIMEOUT="2")
        run = start_manage("drain_mailroom", "--batch-size", "50", **env)
        wait_for(lambda: len(smtp.messages) >= 30, timeout=60, message="30 e-mails before the kill")
        run.send_signal(signal.SIGKILL)
        run.wait()
        # A new run picks up what the killed one left: first what nobody claimed, then, once the
        # killed run's lease has ended, the rest of its batch.
        wait_for(
            lambda: manage("drain_mailroom", **env).returncode == 0 and len(set(smtp.token_ids())) == 200,
            timeout=60,
            interval=0.5,
            message="every token mailed after the restart",
        )
        counts = Counter(smtp.token_ids())
    finally:
        smtp.stop()
    assert len(counts) == 200
    assert sum(1 for n in counts.values() if n > 1) <= 1
    assert max(counts.values()) <= 2
    assert set(Token.objects.values_list("mail_state", flat=True)) == {MailState.SENT}


def test_mail_goes_out_after_the_backoff_when_the_smtp_server_comes_back(settings):
    port = free_port()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.MAILROOM_BACKOFF_SECONDS = 1
    account = account_provision(email="jane@example.com", login="jane")
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
    assert (token.mail_state, token.mail_attempts, token.mail_error) == (MailState.SENT, 2, None)


def listener_is_listening(psql) -> bool:
    psql.execute("SELECT pg_stat_clear_snapshot()")
    (count,) = psql.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'test-listener' AND query = 'LISTEN token_insert'"
    ).fetchone()
    return count > 0


def test_listen_mailroom_mails_a_new_account_without_waiting_for_a_poll(psql):
    smtp = SMTPServer().start()
    # PGAPPNAME names the listener's sessions, so that the test can cut exactly those.
    listener = start_manage("listen_mailroom", "--poll-seconds", "300", PGAPPNAME="test-listener", **drain_env(smtp))
    try:
        wait_for(lambda: listener_is_listening(psql), timeout=60, message="the listener to LISTEN")
        account_provision(email="jane@example.com", login="jane")
        # The poll is 5 minutes away: only the NOTIFY can bring the e-mail this soon.
        wait_for(lambda: smtp.messages, timeout=30, message="the e-mail")

        # The database drops the listener's connections (as a restart does): it reconnects.
        psql.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'test-listener'")
        wait_for(lambda: listener_is_listening(psql), timeout=60, message="the listener to LISTEN again")
        account_provision(email="joe@example.com", login="joe")
        wait_for(lambda: len(smtp.messages) == 2, timeout=30, message="the second e-mail")
    finally:
        listener.send_signal(signal.SIGTERM)
        output = listener.communicate(timeout=30)[0]
        smtp.stop()
    assert listener.returncode == 0, output
    assert "Mailroom listener stopped." in output
    assert sorted(m["To"] for m in smtp.messages) == ["jane@example.com", "joe@example.com"]


def test_the_django_q2_worker_drains_on_its_schedule(psql):
    from django.apps import apps
    from django.utils import timezone
    from django_q.models import Schedule

    # Transactional tests empty Django's tables, the migration's schedule row among them: put it back.
    add_schedule(apps, None)
    Schedule.objects.filter(name="mailroom: drain").update(next_run=timezone.now())
    smtp = SMTPServer().start()
    account_provision(email="jane@example.com", login="jane")
    worker = start_manage("qcluster", Q_WORKERS="1", **drain_env(smtp))
    try:
        wait_for(lambda: smtp.messages, timeout=90, interval=0.2, message="the scheduled drain's e-mail")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
        smtp.stop()
    assert [m["To"] for m in smtp.messages] == ["jane@example.com"]
