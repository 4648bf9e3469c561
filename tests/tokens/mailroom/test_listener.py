"""listen_mailroom: LISTEN token_insert, drain at once, reconnect when the database drops the session."""

import signal

import pytest
from django.core.management import CommandError, call_command

from accounts.services import account_provision
from tests.smtp import SMTPServer
from tests.support import mailroom_env, start_manage, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def listener_is_listening(psql) -> bool:
    psql.execute("SELECT pg_stat_clear_snapshot()")
    (count,) = psql.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'test-listener' AND query = 'LISTEN token_insert'"
    ).fetchone()
    return count > 0


def test_listen_mailroom_mails_a_new_account_without_waiting_for_a_poll(psql):
    smtp = SMTPServer().start()
    # PGAPPNAME names the listener's sessions, so that the test can cut exactly those.
    listener = start_manage("listen_mailroom", "--poll-seconds", "300", PGAPPNAME="test-listener", **mailroom_env(smtp))
    try:
        wait_for(lambda: listener_is_listening(psql), timeout=60, message="the listener to LISTEN")
        account_provision(email="jane@example.com", login="jane", actor=None)
        # The poll is 5 minutes away: only the NOTIFY can bring the e-mail this soon.
        wait_for(lambda: smtp.messages, timeout=30, message="the e-mail")

        # The database drops the listener's connections (as a restart does): it reconnects.
        psql.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = 'test-listener'"
        )
        wait_for(lambda: listener_is_listening(psql), timeout=60, message="the listener to LISTEN again")
        account_provision(email="joe@example.com", login="joe", actor=None)
        wait_for(lambda: len(smtp.messages) == 2, timeout=30, message="the second e-mail")
    finally:
        listener.send_signal(signal.SIGTERM)
        output = listener.communicate(timeout=30)[0]
        smtp.stop()
    assert listener.returncode == 0, output
    assert "Mailroom listener stopped." in output
    assert sorted(m["To"] for m in smtp.messages) == ["jane@example.com", "joe@example.com"]


@pytest.mark.parametrize("seconds", ["nan", "inf", "0", "-1", "86401"])
def test_a_poll_interval_that_is_no_interval_is_refused(seconds):
    """Each is refused in one sentence; nan would make a busy loop (383 runs in 5 s)."""
    with pytest.raises(CommandError, match="--poll-seconds must be more than 0 and at most 86400"):
        call_command("listen_mailroom", "--poll-seconds", seconds)
